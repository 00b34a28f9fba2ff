#version 450
// out = a op b element-wise, or a op s for a scalar s (SCALAR_RHS); the op is specialization
// constant 0 (a binary op of op_codes.glsl).
#extension GL_GOOGLE_include_directive : require
#include "float_controls.glsl"
#include "float_math.glsl"
#include "elementwise_layout.glsl"
#include "op_codes.glsl"

layout(constant_id = 0) const uint OP = RAYO_OP_ADD;
#include "binary_op.glsl"
layout(constant_id = 2) const bool SCALAR_RHS = false;

layout(std430, set = 0, binding = 0) readonly buffer InputA { float a[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output { float y[]; };
layout(std430, set = 0, binding = 2) readonly buffer InputB { float b[]; };
layout(std430, set = 0, binding = 0) readonly buffer InputA4 { vec4 a4[]; };  // the same, for VEC4
layout(std430, set = 0, binding = 1) writeonly buffer Output4 { vec4 y4[]; };
layout(std430, set = 0, binding = 2) readonly buffer InputB4 { vec4 b4[]; };

void element(uint i) {
    float v = SCALAR_RHS ? params.a : b[params.b_offset + i];
    y[params.out_offset + i] = apply(a[params.a_offset + i], v);
}

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (VEC4) {
        uint n4 = params.n / 4, a4_base = params.a_offset / 4, b4_base = params.b_offset / 4;
        uint out4 = params.out_offset / 4;
        for (uint q = gl_GlobalInvocationID.x; q < n4; q += stride) {
            vec4 u = a4[a4_base + q];
            vec4 v = SCALAR_RHS ? vec4(params.a) : b4[b4_base + q];
            y4[out4 + q] = vec4(apply(u.x, v.x), apply(u.y, v.y), apply(u.z, v.z), apply(u.w, v.w));
        }
        uint i = n4 * 4 + gl_GlobalInvocationID.x;
        if (i < params.n) element(i);
    } else {
        for (uint i = gl_GlobalInvocationID.x; i < params.n; i += stride) element(i);
    }
}
