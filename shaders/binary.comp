#version 450
// out = a op b element-wise, or a op s for a scalar s (SCALAR_RHS); the op is specialization
// constant 0 (a binary op of op_codes.glsl). Built for f32 tensors and, as binary_element16, for
// f16 / bf16 ones (element16.glsl), computed in f32.
#extension GL_GOOGLE_include_directive : require
#ifdef RAYO_ELEMENT16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif
#include "float_controls.glsl"
#include "float_math.glsl"
#include "elementwise_layout.glsl"
#include "op_codes.glsl"
#include "element16.glsl"

layout(constant_id = 0) const uint OP = RAYO_OP_ADD;
#include "binary_op.glsl"
layout(constant_id = 2) const bool SCALAR_RHS = false;

#include "binary_buffers.glsl"

void element(uint i) {
    float v = SCALAR_RHS ? params.a : load_b(params.b_offset + i);
    store_y(params.out_offset + i, apply(load_a(params.a_offset + i), v));
}

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (VEC4) {
        uint n4 = params.n / 4, a4_base = params.a_offset / 4, b4_base = params.b_offset / 4;
        uint out4 = params.out_offset / 4;
        for (uint q = gl_GlobalInvocationID.x; q < n4; q += stride) {
            vec4 u = load_a4(a4_base + q);
            vec4 v = SCALAR_RHS ? vec4(params.a) : load_b4(b4_base + q);
            store_y4(out4 + q, vec4(apply(u.x, v.x), apply(u.y, v.y), apply(u.z, v.z), apply(u.w, v.w)));
        }
        uint i = n4 * 4 + gl_GlobalInvocationID.x;
        if (i < params.n) element(i);
    } else {
        for (uint i = gl_GlobalInvocationID.x; i < params.n; i += stride) element(i);
    }
}
