#version 450
// f32 values -> q8_k blocks (292 bytes: f32 d, 256 int8, 16 int16 sums), byte for byte the CPU.
// One workgroup per block, a grid-stride loop over blocks.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer Input { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output { uint words[]; };

layout(push_constant) uniform Params {
    uint blocks;
    uint in_offset;   // floats
    uint out_offset;  // words (q8_k blocks are 4-byte aligned)
} params;

#include "quant_q8_block.glsl"

void main() {
    uint i = gl_LocalInvocationID.x;
    for (uint b = gl_WorkGroupID.x; b < params.blocks; b += gl_NumWorkGroups.x) {
        float d;
        q8_quantize(x[params.in_offset + 256u * b + i], i, d);
        uint base = params.out_offset + 73u * b;  // 292 bytes = 73 words
        if (i == 0u) words[base] = floatBitsToUint(d);
        else if (i <= 64u) words[base + i] = q8_packed_word(i - 1u);
        else if (i <= 72u) {
            uint g = 2u * (i - 65u);
            words[base + i] = (uint(q8_group_sum(g)) & 0xFFFFu) | (uint(q8_group_sum(g + 1u)) << 16);
        }
        barrier();  // the codes are overwritten by the next block
    }
}
