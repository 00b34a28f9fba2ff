#version 450
// attention, flash style: a workgroup takes ROWS query rows of one (batch, head) and one split of
// the keys, a team of TEAM invocations per row. Each invocation holds the columns c ≡ t (mod TEAM)
// of its row's q and output in registers; the keys go by in blocks of BK: the team's partial dot
// products meet in shared memory, every member runs the row's online softmax over the block (a
// running maximum and sum; the output rescaled when the maximum grows) and adds its columns of
// weights·v. The score matrix never leaves the workgroup. With PARTIAL (the keys split across
// workgroups, for few query rows: decode) the row's (maximum, sum, unnormalised output) go to a
// scratch buffer that attention_combine.comp reduces; otherwise the normalised row is written.
// A row that sees no key is zeros; a NaN score makes the row NaN. f32 tensors, f16 / bf16 in the
// _element16 build (element16.glsl); the mask is f32 either way.
#extension GL_GOOGLE_include_directive : require
#ifdef RAYO_ELEMENT16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif
#extension GL_EXT_control_flow_attributes : require
#include "float_controls.glsl"
layout(local_size_x_id = 1) in;  // ROWS · TEAM
#include "float_math.glsl"
#include "op_codes.glsl"

layout(constant_id = 2) const uint D = 64;  // head_dim, at most TEAM · MAX_PER (256)
layout(constant_id = 3) const uint ROWS = 4;
layout(constant_id = 4) const bool HAS_MASK = false;
layout(constant_id = 5) const bool CAUSAL = false;
layout(constant_id = 6) const bool PARTIAL = false;
layout(constant_id = 8) const bool STORED_POSITION = false;  // query_offset read from Position
const uint TEAM = 16;
const uint BK = 32;       // keys a block
const uint MAX_PER = 16;  // columns an invocation
const uint MAX_ROWS = 4;

#include "element16.glsl"
#ifdef RAYO_ELEMENT16
#define RAYO_ELEMENT uint16_t
#define element_value(e) element_to_float(uint(e))
#define element_of(v) uint16_t(float_to_element(v))
#else
#define RAYO_ELEMENT float
#define element_value(e) (e)
#define element_of(v) (v)
#endif
layout(std430, set = 0, binding = 0) readonly buffer Q { RAYO_ELEMENT q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { RAYO_ELEMENT k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { RAYO_ELEMENT v[]; };
layout(std430, set = 0, binding = 3) readonly buffer Mask { float mask[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Out { RAYO_ELEMENT o[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Partial { float partial[]; };
layout(std430, set = 0, binding = 6) readonly buffer Position { int position[]; };

// Mirrors AttentionPush (src/vulkan/ops/attention.cpp); offsets in elements.
layout(push_constant) uniform Params {
    uint q_offset, k_offset, v_offset, mask_offset, o_offset;
    uint q_len, kv_len, heads, kv_heads;
    float scale;
    int query_offset;
    uint mask_batch, mask_head, mask_row;
    uint splits, keys_per_split;
    uint position_offset;
} params;

shared float dots[MAX_ROWS * TEAM * BK];  // each member's share of each score
shared float scores[MAX_ROWS * BK];

void main() {
    float neg_inf = uintBitsToFloat(0xff800000u);
    uint team = gl_LocalInvocationID.x / TEAM, t = gl_LocalInvocationID.x % TEAM;
    uint first_row = gl_WorkGroupID.x * ROWS, i = first_row + team;
    uint head = gl_WorkGroupID.y % params.heads, b = gl_WorkGroupID.y / params.heads;
    uint split = gl_WorkGroupID.z;
    bool live = i < params.q_len;
    uint kv_head = head / (params.heads / params.kv_heads);
    uint q_at = params.q_offset + ((b * params.q_len + i) * params.heads + head) * D;
    uint kv_stride = params.kv_heads * D;
    uint k_at = params.k_offset + b * params.kv_len * kv_stride + kv_head * D;
    uint v_at = params.v_offset + b * params.kv_len * kv_stride + kv_head * D;

    float qv[MAX_PER], acc[MAX_PER];
    [[unroll]] for (uint e = 0; e < MAX_PER; ++e) {
        uint c = t + e * TEAM;
        qv[e] = live && c < D ? element_value(q[q_at + c]) : 0.0;
        acc[e] = 0.0;
    }
    // q's first position: the push constant, or the stored one clamped to [0, kv_len].
    int query_offset =
        STORED_POSITION ? clamp(position[params.position_offset], 0, int(params.kv_len)) : params.query_offset;
    // The workgroup's keys: its split, and under CAUSAL no further than its last row sees.
    uint begin = split * params.keys_per_split;
    uint end = min(params.kv_len, begin + params.keys_per_split);
    if (CAUSAL) {
        uint last_row = min(params.q_len, first_row + ROWS) - 1;
        end = uint(clamp(query_offset + int(last_row) + 1, int(begin), int(end)));
    }
    int row_sees = query_offset + int(i);  // CAUSAL: the last key row i sees
    uint mask_at = params.mask_offset + b * params.mask_batch + head * params.mask_head + i * params.mask_row;

    float row_max = neg_inf, row_sum = 0.0;
    bool row_nan = false;
    for (uint j0 = begin; j0 < end; j0 += BK) {
        // This member's share of the block's q·k.
        for (uint kk = 0; kk < BK; ++kk) {
            uint j = j0 + kk;
            float d = 0.0;
            if (j < end) {
                [[unroll]] for (uint e = 0; e < MAX_PER; ++e) {
                    uint c = t + e * TEAM;
                    if (c < D) d = fma(qv[e], element_value(k[k_at + j * kv_stride + c]), d);
                }
            }
            dots[(team * TEAM + t) * BK + kk] = d;
        }
        barrier();
        // The team's scores, scaled and masked; keys the row does not see are −inf.
        for (uint kk = t; kk < BK; kk += TEAM) {
            uint j = j0 + kk;
            float s = 0.0;
            for (uint m = 0; m < TEAM; ++m) s += dots[(team * TEAM + m) * BK + kk];
            bool seen = live && j < end && (!CAUSAL || int(j) <= row_sees);
            s = s * params.scale;
            if (HAS_MASK && seen) s += mask[mask_at + j];
            scores[team * BK + kk] = seen ? s : neg_inf;
        }
        barrier();
        // The online softmax over the block, and the weights times v.
        float block_max = neg_inf;
        for (uint kk = 0; kk < BK; ++kk) {
            float s = scores[team * BK + kk];
            row_nan = row_nan || isnan(s);
            block_max = max(block_max, s);
        }
        float new_max = max(row_max, block_max);
        if (new_max != neg_inf && !row_nan) {
            float correction = row_max == neg_inf ? 0.0 : rayo_exp_nonpositive(row_max - new_max);
            row_sum *= correction;
            [[unroll]] for (uint e = 0; e < MAX_PER; ++e) acc[e] *= correction;
            uint n = min(BK, end - j0);
            for (uint kk = 0; kk < n; ++kk) {
                float p = rayo_exp_nonpositive(scores[team * BK + kk] - new_max);
                row_sum += p;
                uint at = v_at + (j0 + kk) * kv_stride;
                [[unroll]] for (uint e = 0; e < MAX_PER; ++e) {
                    uint c = t + e * TEAM;
                    if (c < D) acc[e] = fma(p, element_value(v[at + c]), acc[e]);
                }
            }
            row_max = new_max;
        }
    }
    if (!live) return;
    float nan = uintBitsToFloat(0x7fc00000u);
    if (PARTIAL) {
        uint at = ((((b * params.q_len + i) * params.heads + head) * params.splits) + split) * (D + 2);
        if (t == 0) {
            partial[at] = row_nan ? nan : row_max;
            partial[at + 1] = row_sum;
        }
        [[unroll]] for (uint e = 0; e < MAX_PER; ++e) {
            uint c = t + e * TEAM;
            if (c < D) partial[at + 2 + c] = acc[e];
        }
        return;
    }
    float inv = row_sum == 0.0 ? 0.0 : 1.0 / row_sum;
    uint o_at = params.o_offset + ((b * params.q_len + i) * params.heads + head) * D;
    [[unroll]] for (uint e = 0; e < MAX_PER; ++e) {
        uint c = t + e * TEAM;
        if (c < D) o[o_at + c] = element_of(row_nan ? nan : acc[e] * inv);
    }
}
