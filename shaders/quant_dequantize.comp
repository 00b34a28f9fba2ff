#version 450
// Blocks of q4_k / q5_k / q6_k / q8_k / q8_0 / q4_0 (TYPE, a RAYO_DTYPE_* code) -> f32 values, bit-exact
// with the CPU kernels.
// One invocation per value, a grid-stride loop over values.
#extension GL_GOOGLE_include_directive : require
#include "op_codes.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TYPE = RAYO_DTYPE_Q4_K;

layout(std430, set = 0, binding = 0) readonly buffer Blocks { uint blocks[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Params {
    uint count;       // values
    uint in_offset;   // bytes (a multiple of 2: q6_k, q8_0 and q4_0 blocks are 2-byte aligned)
    uint out_offset;  // floats
} params;

#define QUANT_WORDS blocks
#include "quant_blocks.glsl"

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < params.count; i += stride)
        y[params.out_offset + i] = quant_row_value(TYPE, params.in_offset, i);
}
