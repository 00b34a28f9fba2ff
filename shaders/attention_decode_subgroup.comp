#version 450
// attention for one query row a head (a decode step against a KV cache, no mask) with subgroup
// shuffles and 16-byte loads: a workgroup takes one split of at most KEYS keys of one (batch,
// key/value head) for every query head of its group (at most MAX_GROUP), so each key and value row
// is read once for the group, and every load is a 16-byte chunk (8 f16 / bf16 or 4 f32 elements)
// that neighbouring invocations continue.
//   scores:  a team of TEAM lanes of one subgroup reads a key row together, lane l the chunks
//            l, l + TEAM, ...; each lane dots its chunks against every head's q (the group's q in
//            shared memory), and a butterfly of subgroupShuffleXor sums the team's parts. Each lane
//            loads the chunks of U keys before it uses them, so several loads are in flight (a
//            loop that waits for each load is bound by memory latency, not bandwidth);
//   softmax: a subgroup a head: the split's maximum (NaN if a score is NaN), the weights
//            e^(s − maximum) in place of the scores, and their sum;
//   P·v:     invocation t owns chunk t mod CHUNKS of the value rows and every SUBSETS-th key from
//            t / CHUNKS, accumulating the group's heads for that chunk; the key subsets are summed
//            by a halving tree in shared memory.
// Each head's (maximum, sum, unnormalised output) goes to the partial buffer in attention.comp's
// PARTIAL layout, merged by attention_combine.comp; a split whose keys the row does not see writes
// (−inf, 0, zeros). The host runs this where the key and value views start on a chunk and head_dim
// is a multiple of one, and sets TEAM to at most the device's subgroup size and 8 (the least
// subgroup size of a compute shader on devices that vary it). f32 tensors, f16 / bf16 in the
// _element16 build.
#extension GL_GOOGLE_include_directive : require
#ifdef RAYO_ELEMENT16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif
#extension GL_EXT_control_flow_attributes : require
#include "float_controls.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(local_size_x_id = 1) in;  // a multiple of the subgroup size, at least CHUNKS
#include "float_math.glsl"
#include "op_codes.glsl"

layout(constant_id = 2) const uint D = 128;    // head_dim, a multiple of E, at most MAX_D
layout(constant_id = 3) const uint GROUP = 4;  // query heads a key/value head, at most MAX_GROUP
layout(constant_id = 4) const uint KEYS = 128; // keys a split
layout(constant_id = 5) const uint TEAM = 8;   // lanes a key row: a power of two, at most 8
layout(constant_id = 6) const bool STORED_POSITION = false;  // the keys seen follow Position
const uint MAX_D = 256;
const uint MAX_GROUP = 8;

#include "element16.glsl"
#ifdef RAYO_ELEMENT16
#define RAYO_ELEMENT uint16_t
#define element_value(e) element_to_float(uint(e))
const uint E = 8;  // elements a chunk
#else
#define RAYO_ELEMENT float
#define element_value(e) (e)
const uint E = 4;
#endif
const uint CV = E / 4;                        // vec4s a chunk
const uint CHUNKS = D / E;                    // chunks a row
const uint PER = (CHUNKS + TEAM - 1) / TEAM;  // chunks a lane of a key row (the host keeps it at most 8)
// Chunks a lane loads before it uses them: enough to keep loads in flight (8 and 16 measured slower
// on an H200).
const uint MAX_LOADS = 4;
const uint SUBSETS = gl_WorkGroupSize.x / CHUNKS;  // key subsets of P·v
const uint SLOTS = SUBSETS > 1 ? SUBSETS / 2 : 1;  // the halving tree's partial sums
// Keys a team loads together: MAX_LOADS chunks a lane (at least one key), and no more keys than
// the split gives each team (gl_WorkGroupSize.x / TEAM teams where the subgroups are full).
const uint U_LOADS = PER >= MAX_LOADS ? 1 : MAX_LOADS / PER;
const uint U_KEYS = KEYS * TEAM / gl_WorkGroupSize.x;
const uint U = U_KEYS < 1 ? 1 : U_KEYS < U_LOADS ? U_KEYS : U_LOADS;
// Value rows an invocation loads together, likewise.
const uint UV_KEYS = KEYS / SUBSETS;
const uint UV = UV_KEYS < 1 ? 1 : UV_KEYS < MAX_LOADS ? UV_KEYS : MAX_LOADS;
const uint LOADED = U * PER > UV ? U * PER : UV;  // chunks in registers

layout(std430, set = 0, binding = 0) readonly buffer Q { RAYO_ELEMENT q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { uvec4 k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { uvec4 v[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Partial { float partial[]; };
layout(std430, set = 0, binding = 4) readonly buffer Position { int position[]; };

// Mirrors DecodePush (src/vulkan/ops/attention.cpp); offsets in elements, those of k and v
// multiples of E.
layout(push_constant) uniform Params {
    uint q_offset, k_offset, v_offset;
    uint kv_len, heads, kv_heads;
    uint seen;     // keys the row sees (causal: up to its query offset)
    float scale;
    uint splits;
    uint position_offset;
} params;

shared vec4 q_shared[GROUP * D / 4];
shared float scores[GROUP * KEYS];  // then the weights
shared vec4 tree[SLOTS * GROUP * D / 4];

// The elements of a chunk, in order: x[i] holds elements 4i .. 4i + 3.
void unpack_chunk(uvec4 w, out vec4 x[CV]) {
#ifdef RAYO_ELEMENT16
    if (ELEMENT == RAYO_DTYPE_F16) {
        x[0] = vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
        x[1] = vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));
    } else {
        x[0] = uintBitsToFloat(uvec4(w.x << 16, w.x & 0xffff0000u, w.y << 16, w.y & 0xffff0000u));
        x[1] = uintBitsToFloat(uvec4(w.z << 16, w.z & 0xffff0000u, w.w << 16, w.w & 0xffff0000u));
    }
#else
    x[0] = uintBitsToFloat(w);
#endif
}

// acc + a·b in order x, y, z, w.
float fma4(vec4 a, vec4 b, float acc) { return fma(a.w, b.w, fma(a.z, b.z, fma(a.y, b.y, fma(a.x, b.x, acc)))); }

void main() {
    float neg_inf = uintBitsToFloat(0xff800000u), nan = uintBitsToFloat(0x7fc00000u);
    uint t = gl_LocalInvocationID.x, threads = gl_WorkGroupSize.x;
    uint split = gl_WorkGroupID.x;
    uint kv_head = gl_WorkGroupID.y % params.kv_heads, b = gl_WorkGroupID.y / params.kv_heads;
    uint first_head = kv_head * GROUP;
    uint begin = split * KEYS;
    // The keys the row sees: the push constant, or up to the stored position (clamped to [0, kv_len]).
    int stored = STORED_POSITION ? clamp(position[params.position_offset], 0, int(params.kv_len)) : 0;
    uint seen = STORED_POSITION ? min(uint(stored) + 1, params.kv_len) : params.seen;
    uint count = begin < seen ? min(KEYS, seen - begin) : 0;
    // Chunk c of key (or value) row j of this split: rows + j · row_stride + c.
    uint row_stride = params.kv_heads * CHUNKS;
    uint first_row = (b * params.kv_len + begin) * row_stride + kv_head * CHUNKS;
    uint k_rows = params.k_offset / E + first_row, v_rows = params.v_offset / E + first_row;

    // This lane's team: TEAM neighbouring lanes of one subgroup.
    uint per_subgroup = gl_SubgroupSize / TEAM;
    uint lane = gl_SubgroupInvocationID % TEAM;
    uint team = gl_SubgroupID * per_subgroup + gl_SubgroupInvocationID / TEAM;
    uint teams = gl_NumSubgroups * per_subgroup;

    // The first keys' chunks are loaded while q goes to shared memory.
    uvec4 loaded[LOADED];
    if (count > 0) {
        [[unroll]] for (uint u = 0; u < U; ++u) {
            uint row = k_rows + min(u * teams + team, count - 1) * row_stride;
            [[unroll]] for (uint p = 0; p < PER; ++p)
                if (lane + p * TEAM < CHUNKS) loaded[u * PER + p] = k[row + lane + p * TEAM];
        }
    }
    uint q_at = params.q_offset + (b * params.heads + first_head) * D;  // the group's rows are consecutive
    for (uint x = t; x < GROUP * D / 4; x += threads) {
        uint at = q_at + 4 * x;
        q_shared[x] =
            vec4(element_value(q[at]), element_value(q[at + 1]), element_value(q[at + 2]), element_value(q[at + 3]));
    }
    barrier();

    // Scores: keys first + u · teams + team, U at a time.
    for (uint first = 0; first < count; first += U * teams) {
        if (first > 0) {
            [[unroll]] for (uint u = 0; u < U; ++u) {
                uint row = k_rows + min(first + u * teams + team, count - 1) * row_stride;
                [[unroll]] for (uint p = 0; p < PER; ++p)
                    if (lane + p * TEAM < CHUNKS) loaded[u * PER + p] = k[row + lane + p * TEAM];
            }
        }
        [[unroll]] for (uint u = 0; u < U; ++u) {
            float dots[MAX_GROUP];
            [[unroll]] for (uint g = 0; g < GROUP; ++g) dots[g] = 0.0;
            [[unroll]] for (uint p = 0; p < PER; ++p) {
                uint c = lane + p * TEAM;
                if (c < CHUNKS) {
                    vec4 x[CV];
                    unpack_chunk(loaded[u * PER + p], x);
                    [[unroll]] for (uint g = 0; g < GROUP; ++g)
                        [[unroll]] for (uint i = 0; i < CV; ++i)
                            dots[g] = fma4(q_shared[g * (D / 4) + c * CV + i], x[i], dots[g]);
                }
            }
            [[unroll]] for (uint g = 0; g < GROUP; ++g)
                [[unroll]] for (uint m = TEAM / 2; m > 0; m /= 2) dots[g] += subgroupShuffleXor(dots[g], m);
            uint key = first + u * teams + team;
            if (key < count) {
                [[unroll]] for (uint g = 0; g < GROUP; ++g)
                    if (g % TEAM == lane) scores[g * KEYS + key] = dots[g] * params.scale;
            }
        }
    }

    // P·v's layout; its first value rows are loaded while the softmax runs.
    uint chunk = t % CHUNKS, subset = t / CHUNKS;
    bool accumulates = subset < SUBSETS;
    if (accumulates && count > 0) {
        [[unroll]] for (uint u = 0; u < UV; ++u)
            loaded[u] = v[v_rows + min(subset + u * SUBSETS, count - 1) * row_stride + chunk];
    }
    barrier();

    // Softmax, a subgroup a head: the maximum of the scores that are not NaN and whether one is;
    // the weights, none where the maximum is NaN or −inf (the row sees nothing here); their sum.
    for (uint g = gl_SubgroupID; g < GROUP; g += gl_NumSubgroups) {
        float m = neg_inf;
        bool any_nan = false;
        for (uint key = gl_SubgroupInvocationID; key < count; key += gl_SubgroupSize) {
            float s = scores[g * KEYS + key];
            if (isnan(s)) any_nan = true;
            else m = max(m, s);
        }
        m = subgroupOr(any_nan) ? nan : subgroupMax(m);
        float sum = 0.0;
        for (uint key = gl_SubgroupInvocationID; key < count; key += gl_SubgroupSize) {
            float w = isnan(m) || m == neg_inf ? 0.0 : rayo_exp_nonpositive(scores[g * KEYS + key] - m);
            scores[g * KEYS + key] = w;
            sum += w;
        }
        sum = subgroupAdd(sum);
        if (subgroupElect()) {
            uint at = ((b * params.heads + first_head + g) * params.splits + split) * (D + 2);
            partial[at] = m;
            partial[at + 1] = sum;
        }
    }
    barrier();

    // P·v: this invocation's chunk over keys subset + i · SUBSETS, UV at a time.
    vec4 acc[MAX_GROUP * CV];
    [[unroll]] for (uint i = 0; i < GROUP * CV; ++i) acc[i] = vec4(0.0);
    if (accumulates) {
        for (uint first = subset; first < count; first += UV * SUBSETS) {
            if (first > subset) {
                [[unroll]] for (uint u = 0; u < UV; ++u)
                    loaded[u] = v[v_rows + min(first + u * SUBSETS, count - 1) * row_stride + chunk];
            }
            [[unroll]] for (uint u = 0; u < UV; ++u) {
                uint key = first + u * SUBSETS;
                if (key < count) {
                    vec4 x[CV];
                    unpack_chunk(loaded[u], x);
                    [[unroll]] for (uint g = 0; g < GROUP; ++g) {
                        float w = scores[g * KEYS + key];
                        [[unroll]] for (uint i = 0; i < CV; ++i) acc[g * CV + i] = fma(vec4(w), x[i], acc[g * CV + i]);
                    }
                }
            }
        }
    }
    // The subsets' sums, halving: subsets [half, n) hand theirs to subsets [0, n − half).
    for (uint n = SUBSETS; n > 1; n = (n + 1) / 2) {
        uint half_n = (n + 1) / 2;
        if (subset >= half_n && subset < n) {
            [[unroll]] for (uint g = 0; g < GROUP; ++g)
                [[unroll]] for (uint i = 0; i < CV; ++i)
                    tree[((subset - half_n) * GROUP + g) * (D / 4) + chunk * CV + i] = acc[g * CV + i];
        }
        barrier();
        if (subset < n - half_n) {
            [[unroll]] for (uint g = 0; g < GROUP; ++g)
                [[unroll]] for (uint i = 0; i < CV; ++i)
                    acc[g * CV + i] += tree[(subset * GROUP + g) * (D / 4) + chunk * CV + i];
        }
        barrier();
    }
    if (subset == 0) {
        [[unroll]] for (uint g = 0; g < GROUP; ++g) {
            uint at = ((b * params.heads + first_head + g) * params.splits + split) * (D + 2) + 2 + chunk * E;
            [[unroll]] for (uint i = 0; i < CV; ++i)
                [[unroll]] for (uint e = 0; e < 4; ++e) partial[at + 4 * i + e] = acc[g * CV + i][e];
        }
    }
}
