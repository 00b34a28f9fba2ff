#version 450
// attention for one query row a head (a decode step against a KV cache, no mask): a workgroup
// takes one split of KEYS keys of one (batch, key/value head) for every query head of its group
// (at most MAX_GROUP), an invocation for each (head, key) pair, so each key and value row is read
// once for the group and no invocation runs a chain longer than head_dim.
//   scores:  invocation (g, j) scores key j against head g's q (the group's q in shared memory);
//   softmax: per head, the split's maximum and sum of e^(s − maximum) by halving trees over the
//            split's scores in shared memory;
//   P·v:     the group's GROUP·D outputs spread over the invocations, neighbouring invocations on
//            neighbouring columns of one value row.
// Each head's (maximum, sum, unnormalised output) goes to the partial buffer in attention.comp's
// PARTIAL layout, merged by attention_combine.comp. A NaN score makes the row NaN; a split whose
// keys the row does not see contributes nothing. f32 tensors, f16 / bf16 in the _element16 build.
#extension GL_GOOGLE_include_directive : require
#ifdef RAYO_ELEMENT16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif
#include "float_controls.glsl"
layout(local_size_x_id = 1) in;  // KEYS · GROUP
#include "float_math.glsl"
#include "op_codes.glsl"

layout(constant_id = 2) const uint D = 128;     // head_dim, at most MAX_D
layout(constant_id = 3) const uint GROUP = 4;   // query heads a key/value head, at most MAX_GROUP
// Keys a split, a power of two at most MAX_KEYS; the host sets the workgroup size (constant 1) to
// KEYS · GROUP.
layout(constant_id = 4) const uint KEYS = 32;
layout(constant_id = 5) const bool STORED_POSITION = false;  // the keys seen follow Position
const uint MAX_D = 256;
const uint MAX_GROUP = 8;
const uint MAX_KEYS = 64;

#include "element16.glsl"
#ifdef RAYO_ELEMENT16
#define RAYO_ELEMENT uint16_t
#define element_value(e) element_to_float(uint(e))
#else
#define RAYO_ELEMENT float
#define element_value(e) (e)
#endif
layout(std430, set = 0, binding = 0) readonly buffer Q { RAYO_ELEMENT q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { RAYO_ELEMENT k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { RAYO_ELEMENT v[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Partial { float partial[]; };
layout(std430, set = 0, binding = 4) readonly buffer Position { int position[]; };

// Mirrors DecodePush (src/vulkan/ops/attention.cpp); offsets in elements.
layout(push_constant) uniform Params {
    uint q_offset, k_offset, v_offset;
    uint kv_len, heads, kv_heads;
    uint seen;     // keys the row sees (causal: up to its query offset)
    float scale;
    uint splits;
    uint position_offset;
} params;

shared float q_shared[MAX_GROUP * MAX_D];
shared float scores[MAX_GROUP * MAX_KEYS];
shared float tree[MAX_GROUP * MAX_KEYS];

// The loops over a key row and over the split's value rows take 8 elements a step, loaded together:
// a loop that waits for each load before the next is bound by memory latency (each value row is a
// new cache line), not by bandwidth.
vec4 k4(uint at) {
    return vec4(element_value(k[at]), element_value(k[at + 1]), element_value(k[at + 2]), element_value(k[at + 3]));
}
vec4 v4(uint at, uint stride) {
    return vec4(element_value(v[at]), element_value(v[at + stride]), element_value(v[at + 2 * stride]),
                element_value(v[at + 3 * stride]));
}
vec4 q4(uint at) { return vec4(q_shared[at], q_shared[at + 1], q_shared[at + 2], q_shared[at + 3]); }
vec4 scores4(uint at) { return vec4(scores[at], scores[at + 1], scores[at + 2], scores[at + 3]); }
// acc + a·b in order x, y, z, w, each product fused.
float fma4(vec4 a, vec4 b, float acc) { return fma(a.w, b.w, fma(a.z, b.z, fma(a.y, b.y, fma(a.x, b.x, acc)))); }

void main() {
    float neg_inf = uintBitsToFloat(0xff800000u), nan = uintBitsToFloat(0x7fc00000u);
    uint t = gl_LocalInvocationID.x, threads = KEYS * GROUP;
    uint g = t / KEYS, j = t - g * KEYS;  // this invocation's head of the group and key of the split
    uint split = gl_WorkGroupID.x;
    uint kv_head = gl_WorkGroupID.y % params.kv_heads, b = gl_WorkGroupID.y / params.kv_heads;
    uint first_head = kv_head * GROUP;
    uint kv_stride = params.kv_heads * D;
    uint k_at = params.k_offset + b * params.kv_len * kv_stride + kv_head * D;
    uint v_at = params.v_offset + b * params.kv_len * kv_stride + kv_head * D;
    uint begin = split * KEYS;
    // The keys the row sees: the push constant, or up to the stored position (clamped to [0, kv_len]).
    int stored = STORED_POSITION ? clamp(position[params.position_offset], 0, int(params.kv_len)) : 0;
    uint seen = STORED_POSITION ? min(uint(stored) + 1, params.kv_len) : params.seen;
    uint count = begin < seen ? min(KEYS, seen - begin) : 0;

    // The group's query rows into shared memory.
    for (uint x = t; x < GROUP * D; x += threads) {
        uint h = x / D, c = x - h * D;
        q_shared[x] = element_value(q[params.q_offset + (b * params.heads + first_head + h) * D + c]);
    }
    barrier();
    // Scores: key j against head g; −inf past the keys the row sees.
    float s = neg_inf;
    if (j < count) {
        uint at = k_at + (begin + j) * kv_stride;
        float dot = 0.0;
        uint c = 0;
        for (; c + 8 <= D; c += 8) {
            vec4 lo = k4(at + c), hi = k4(at + c + 4);
            dot = fma4(q4(g * D + c + 4), hi, fma4(q4(g * D + c), lo, dot));
        }
        for (; c < D; ++c) dot = fma(q_shared[g * D + c], element_value(k[at + c]), dot);
        s = dot * params.scale;
    }
    // The head's maximum, NaN if a score is NaN.
    tree[t] = s;
    barrier();
    for (uint half_keys = KEYS / 2; half_keys > 0; half_keys /= 2) {
        if (j < half_keys) {
            float a = tree[t], other = tree[t + half_keys];
            tree[t] = isnan(a) || isnan(other) ? nan : max(a, other);
        }
        barrier();
    }
    float m = tree[g * KEYS];
    barrier();
    // Its weights e^(s − maximum), none where the maximum is NaN or −inf (the row sees nothing
    // here), and their sum.
    float w = isnan(m) || m == neg_inf || j >= count ? 0.0 : rayo_exp_nonpositive(s - m);
    scores[t] = w;
    tree[t] = w;
    barrier();
    for (uint half_keys = KEYS / 2; half_keys > 0; half_keys /= 2) {
        if (j < half_keys) tree[t] += tree[t + half_keys];
        barrier();
    }
    // P·v: output x of the group is column x mod D of head x / D.
    uint partial_row = D + 2;
    for (uint x = t; x < GROUP * D; x += threads) {
        uint h = x / D, c = x - h * D;
        uint at = v_at + begin * kv_stride + c;
        float acc = 0.0;
        uint key = 0;
        for (; key + 8 <= count; key += 8) {
            vec4 lo = v4(at + key * kv_stride, kv_stride), hi = v4(at + (key + 4) * kv_stride, kv_stride);
            acc = fma4(scores4(h * KEYS + key + 4), hi, fma4(scores4(h * KEYS + key), lo, acc));
        }
        for (; key < count; ++key) acc = fma(scores[h * KEYS + key], element_value(v[at + key * kv_stride]), acc);
        partial[((b * params.heads + first_head + h) * params.splits + split) * partial_row + 2 + c] = acc;
    }
    if (j == 0) {
        uint at = ((b * params.heads + first_head + g) * params.splits + split) * partial_row;
        partial[at] = m;
        partial[at + 1] = tree[g * KEYS];
    }
}
