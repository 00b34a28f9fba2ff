#version 450
// copy: out's elements set to in's through views of any strides, over the collapsed layout of
// src/dispatch/broadcast.hpp (at most 8 axes, the outermost first; the rank is constant 2). WIDE
// (constant 3): 32-bit elements; otherwise 16-bit ones, through 16-bit storage.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require

layout(local_size_x_id = 1) in;
layout(constant_id = 2) const uint RANK = 1;
layout(constant_id = 3) const bool WIDE = true;

layout(std430, set = 0, binding = 0) readonly buffer In32 { uint x32[]; };
layout(std430, set = 0, binding = 0) readonly buffer In16 { uint16_t x16[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out32 { uint y32[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out16 { uint16_t y16[]; };

// Mirrors CopyPush (src/vulkan/ops/layout.cpp); offsets and strides in elements.
layout(push_constant) uniform Params {
    uint n;
    uint in_offset;
    uint out_offset;
    uint dims[8];
    uint in_strides[8];
    uint out_strides[8];
} params;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < params.n; i += stride) {
        uint rest = i, src = params.in_offset, dst = params.out_offset;
        [[unroll]] for (int d = int(RANK) - 1; d >= 0; --d) {
            uint len = params.dims[d];
            uint c = rest % len;
            rest /= len;
            src += c * params.in_strides[d];
            dst += c * params.out_strides[d];
        }
        if (WIDE) y32[dst] = x32[src];
        else y16[dst] = x16[src];
    }
}
