#version 450
// y = f(x) element-wise; the op is a specialization constant (the codes of rayo::detail::UnaryOp).
#extension GL_GOOGLE_include_directive : require
#include "float_controls.glsl"
#include "float_math.glsl"
#include "elementwise_layout.glsl"

layout(constant_id = 0) const uint OP = 0;

layout(std430, set = 0, binding = 0) readonly buffer Input { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output { float y[]; };
layout(std430, set = 0, binding = 0) readonly buffer Input4 { vec4 x4[]; };  // the same, for VEC4
layout(std430, set = 0, binding = 1) writeonly buffer Output4 { vec4 y4[]; };

float apply(float v) {
    switch (OP) {
        case 0: {  // relu on the bits, as the CPU's x < 0 ? +0 : x: negatives (subnormals included)
                   // give +0, -0 and NaN pass through, whatever the device's denormal mode and
                   // however its compiler treats a float compare-and-select (e.g. as max)
            uint u = floatBitsToUint(v);
            return u > 0x80000000u && u <= 0xff800000u ? 0.0 : v;
        }
        case 1: return v < 0.0 ? v * params.a : v;             // leaky_relu
        case 2: return rayo_elu(v, params.a);
        case 3: return rayo_sigmoid(v);
        case 4: return rayo_tanh(v);
        case 5: return rayo_silu(v);
        case 6: return rayo_gelu_tanh(v);
        case 7: return rayo_gelu_erf(v);
        case 8: {                                              // clip as torch.clamp: lo > hi gives hi
            float t = v < params.a ? params.a : v;
            return t > params.b ? params.b : t;
        }
        case 9: return rayo_exp(v);
        case 10: return rayo_log(v);
        case 11: return rayo_sqrt(v);
        case 12: return abs(v);
        case 13: return -v;
    }
    return v;
}

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (VEC4) {
        uint n4 = params.n / 4, a4 = params.a_offset / 4, out4 = params.out_offset / 4;
        for (uint q = gl_GlobalInvocationID.x; q < n4; q += stride) {
            vec4 v = x4[a4 + q];
            y4[out4 + q] = vec4(apply(v.x), apply(v.y), apply(v.z), apply(v.w));
        }
        uint i = n4 * 4 + gl_GlobalInvocationID.x;
        if (i < params.n) y[params.out_offset + i] = apply(x[params.a_offset + i]);
    } else {
        for (uint i = gl_GlobalInvocationID.x; i < params.n; i += stride) y[params.out_offset + i] = apply(x[params.a_offset + i]);
    }
}
