#version 450
// out = a op b element-wise, or a op s for a scalar s (SCALAR_RHS); op codes of rayo::detail::BinaryOp.
#extension GL_GOOGLE_include_directive : require
#include "float_controls.glsl"
#include "float_math.glsl"
#include "elementwise_layout.glsl"

layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 2) const bool SCALAR_RHS = false;

layout(std430, set = 0, binding = 0) readonly buffer InputA { float a[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output { float y[]; };
layout(std430, set = 0, binding = 2) readonly buffer InputB { float b[]; };

float apply(float u, float v) {
    switch (OP) {
        case 0: { precise float r = u + v; return r; }
        case 1: { precise float r = u - v; return r; }
        case 2: { precise float r = u * v; return r; }
        case 3: return rayo_div(u, v);
    }
    return u;
}

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < params.n; i += stride) {
        float v = SCALAR_RHS ? params.a : b[params.b_offset + i];
        y[params.out_offset + i] = apply(a[params.a_offset + i], v);
    }
}
