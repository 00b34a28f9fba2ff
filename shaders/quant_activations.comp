#version 450
// x rows -> the integer dot products' activations, as the CPU's QuantActivation: per 256 values
// a q8_k block of x and (RESIDUAL) a q8_k block of what it leaves over, x − d·q, plus the f32
// sums of each 16 values the two represent. Layout per block, in words (ACTIVATION_WORDS = 146):
//   [0] d of x, [1] d of the residual (0 without), [2..17] sums16, [18..81] codes of x (int8 x4),
//   [82..145] codes of the residual.
// One workgroup per block, a grid-stride loop over blocks.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 256) in;
layout(constant_id = 0) const bool RESIDUAL = true;

layout(std430, set = 0, binding = 0) readonly buffer Input { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output { uint words[]; };

layout(push_constant) uniform Params {
    uint blocks;
    uint in_offset;  // floats
} params;

#include "quant_q8_block.glsl"

shared float group_sums[16];

void main() {
    uint i = gl_LocalInvocationID.x;
    for (uint b = gl_WorkGroupID.x; b < params.blocks; b += gl_NumWorkGroups.x) {
        uint base = 146u * b;
        float value = x[params.in_offset + 256u * b + i];
        float d;
        int q = q8_quantize(value, i, d);
        if (i < 16u) group_sums[i] = d * float(q8_group_sum(i));
        if (i == 0u) words[base] = floatBitsToUint(d);
        if (i < 64u) words[base + 18u + i] = q8_packed_word(i);
        barrier();
        float d2 = 0.0;
        if (RESIDUAL) {
            precise float part = d * float(q);
            precise float rest = value - part;
            q8_quantize(rest, i, d2);
            if (i < 16u) group_sums[i] += d2 * float(q8_group_sum(i));
            if (i < 64u) words[base + 82u + i] = q8_packed_word(i);
        } else if (i < 64u) {
            words[base + 82u + i] = 0u;
        }
        if (i == 1u) words[base + 1u] = floatBitsToUint(d2);
        barrier();
        if (i < 16u) words[base + 2u + i] = floatBitsToUint(group_sums[i]);
        barrier();
    }
}
