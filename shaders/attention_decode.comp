#version 450
// attention for one query row a head (a decode step against a KV cache, no mask): a workgroup
// takes one split of KEYS keys of one (batch, key/value head) for every query head of its group
// (at most MAX_GROUP), so each key and value row is read once for the group.
//   scores: invocation j scores key j of the split against each head's q (held in shared memory);
//   softmax: per head, the split's maximum and sum of e^(s − maximum), each over the split's
//            scores in shared memory;
//   P·v:     invocation t accumulates columns t, t + KEYS, ... of every head over the split's keys,
//            neighbouring invocations reading neighbouring columns of one value row.
// Loops over the group's heads stay loops (per-head arrays unrolled over a specialization-constant
// bound miscompiled on lavapipe); the repeated key and value reads hit the cache.
// Each head's (maximum, sum, unnormalised output) goes to the partial buffer in attention.comp's
// PARTIAL layout, merged by attention_combine.comp. A NaN score makes the row NaN; a split whose
// keys the row does not see contributes nothing. f32 tensors, f16 / bf16 in the _element16 build.
#extension GL_GOOGLE_include_directive : require
#ifdef RAYO_ELEMENT16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif
#include "float_controls.glsl"
layout(local_size_x_id = 1) in;  // KEYS
#include "float_math.glsl"
#include "op_codes.glsl"

layout(constant_id = 2) const uint D = 128;     // head_dim, at most MAX_D
layout(constant_id = 3) const uint GROUP = 4;   // query heads a key/value head, at most MAX_GROUP
// Keys a split, at most MAX_KEYS; the host sets the workgroup size (constant 1) to the same.
layout(constant_id = 4) const uint KEYS = 64;
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

// Mirrors DecodePush (src/vulkan/ops/attention.cpp); offsets in elements.
layout(push_constant) uniform Params {
    uint q_offset, k_offset, v_offset;
    uint kv_len, heads, kv_heads;
    uint seen;     // keys the row sees (causal: up to its query offset)
    float scale;
    uint splits;
} params;

shared float q_shared[MAX_GROUP * MAX_D];
shared float scores[MAX_GROUP * MAX_KEYS];
shared float row_max[MAX_GROUP], row_sum[MAX_GROUP];

void main() {
    float neg_inf = uintBitsToFloat(0xff800000u);
    uint t = gl_LocalInvocationID.x;
    uint split = gl_WorkGroupID.x;
    uint kv_head = gl_WorkGroupID.y % params.kv_heads, b = gl_WorkGroupID.y / params.kv_heads;
    uint first_head = kv_head * GROUP;
    uint kv_stride = params.kv_heads * D;
    uint k_at = params.k_offset + b * params.kv_len * kv_stride + kv_head * D;
    uint v_at = params.v_offset + b * params.kv_len * kv_stride + kv_head * D;
    uint begin = split * KEYS;
    uint count = begin < params.seen ? min(KEYS, params.seen - begin) : 0;

    // The group's query rows into shared memory.
    for (uint x = t; x < GROUP * D; x += KEYS) {
        uint g = x / D, c = x - g * D;
        q_shared[x] = element_value(q[params.q_offset + (b * params.heads + first_head + g) * D + c]);
    }
    barrier();
    // Scores: this invocation's key against every head of the group.
    if (t < count) {
        uint at = k_at + (begin + t) * kv_stride;
        for (uint g = 0; g < GROUP; ++g) {
            float s = 0.0;
            for (uint c = 0; c < D; ++c) s = fma(q_shared[g * D + c], element_value(k[at + c]), s);
            scores[g * KEYS + t] = s * params.scale;
        }
    }
    barrier();
    // Each head's maximum (NaN if a score is NaN) and its weights e^(s − maximum), summed.
    if (t < GROUP) {
        float m = neg_inf;
        bool nan = false;
        for (uint j = 0; j < count; ++j) {
            float s = scores[t * KEYS + j];
            nan = nan || isnan(s);
            m = max(m, s);
        }
        row_max[t] = nan ? uintBitsToFloat(0x7fc00000u) : m;
    }
    barrier();
    for (uint g = 0; g < GROUP; ++g) {
        if (t < count) {
            // No weights where a score is NaN or every score is −inf (the row sees nothing here).
            float m = row_max[g];
            scores[g * KEYS + t] = isnan(m) || m == neg_inf ? 0.0 : rayo_exp_nonpositive(scores[g * KEYS + t] - m);
        }
    }
    barrier();
    if (t < GROUP) {
        float sum = 0.0;
        for (uint j = 0; j < count; ++j) sum += scores[t * KEYS + j];
        row_sum[t] = sum;
    }
    barrier();
    // P·v: columns t, t + KEYS, ... of every head of the group.
    uint partial_row = D + 2;
    for (uint c = t; c < D; c += KEYS) {
        for (uint g = 0; g < GROUP; ++g) {
            float acc = 0.0;
            for (uint j = 0; j < count; ++j)
                acc = fma(scores[g * KEYS + j], element_value(v[v_at + (begin + j) * kv_stride + c]), acc);
            partial[((b * params.heads + first_head + g) * params.splits + split) * partial_row + 2 + c] = acc;
        }
    }
    if (t < GROUP) {
        uint at = ((b * params.heads + first_head + t) * params.splits + split) * partial_row;
        partial[at] = row_max[t];
        partial[at + 1] = row_sum[t];
    }
}
