#version 450
// y = f(x) element-wise; the op is specialization constant 0 (a unary op of op_codes.glsl). Built
// for f32 tensors and, as unary_element16, for f16 / bf16 ones (element16.glsl), computed in f32.
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

#if RAYO_UNARY_OP_COUNT != 14
#error "a unary op of rayo::op_table has no case in apply()"
#endif

layout(constant_id = 0) const uint OP = RAYO_OP_RELU;

#ifdef RAYO_ELEMENT16
layout(std430, set = 0, binding = 0) readonly buffer Input { uint16_t x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output { uint16_t y[]; };
layout(std430, set = 0, binding = 0) readonly buffer Input4 { uvec2 x4[]; };  // the same, for VEC4
layout(std430, set = 0, binding = 1) writeonly buffer Output4 { uvec2 y4[]; };
float load_x(uint i) { return element_to_float(uint(x[i])); }
vec4 load_x4(uint q) { return unpack_elements(x4[q]); }
void store_y(uint i, float v) { y[i] = uint16_t(float_to_element(v)); }
void store_y4(uint q, vec4 v) { y4[q] = pack_elements(v); }
#else
layout(std430, set = 0, binding = 0) readonly buffer Input { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output { float y[]; };
layout(std430, set = 0, binding = 0) readonly buffer Input4 { vec4 x4[]; };  // the same, for VEC4
layout(std430, set = 0, binding = 1) writeonly buffer Output4 { vec4 y4[]; };
float load_x(uint i) { return x[i]; }
vec4 load_x4(uint q) { return x4[q]; }
void store_y(uint i, float v) { y[i] = v; }
void store_y4(uint q, vec4 v) { y4[q] = v; }
#endif

float apply(float v) {
    switch (OP) {
        case RAYO_OP_RELU: {
            // On the bits, as the CPU's x < 0 ? +0 : x: negatives (subnormals included) give +0,
            // -0 and NaN pass through, whatever the device's denormal mode and however its
            // compiler treats a float compare-and-select (e.g. as max).
            uint u = floatBitsToUint(v);
            return u > 0x80000000u && u <= 0xff800000u ? 0.0 : v;
        }
        case RAYO_OP_LEAKY_RELU: return v < 0.0 ? v * params.a : v;
        case RAYO_OP_ELU: return rayo_elu(v, params.a);
        case RAYO_OP_SIGMOID: return rayo_sigmoid(v);
        case RAYO_OP_TANH: return rayo_tanh(v);
        case RAYO_OP_SILU: return rayo_silu(v);
        case RAYO_OP_GELU_TANH: return rayo_gelu_tanh(v);
        case RAYO_OP_GELU: return rayo_gelu_erf(v);
        case RAYO_OP_CLIP: {
            // As torch.clamp: lo > hi gives hi. NaN stays NaN, tested on the bits: a compiler may
            // turn the compare-and-selects into min/max, which return the other operand for NaN.
            if ((floatBitsToUint(v) & 0x7fffffffu) > 0x7f800000u) return v;
            float t = v < params.a ? params.a : v;
            return t > params.b ? params.b : t;
        }
        case RAYO_OP_EXP: return rayo_exp(v);
        case RAYO_OP_LOG: return rayo_log(v);
        case RAYO_OP_SQRT: return rayo_sqrt(v);
        case RAYO_OP_ABS: return abs(v);
        case RAYO_OP_NEG: return -v;
    }
    return v;
}

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (VEC4) {
        uint n4 = params.n / 4, a4 = params.a_offset / 4, out4 = params.out_offset / 4;
        for (uint q = gl_GlobalInvocationID.x; q < n4; q += stride) {
            vec4 v = load_x4(a4 + q);
            store_y4(out4 + q, vec4(apply(v.x), apply(v.y), apply(v.z), apply(v.w)));
        }
        uint i = n4 * 4 + gl_GlobalInvocationID.x;
        if (i < params.n) store_y(params.out_offset + i, apply(load_x(params.a_offset + i)));
    } else {
        for (uint i = gl_GlobalInvocationID.x; i < params.n; i += stride)
            store_y(params.out_offset + i, apply(load_x(params.a_offset + i)));
    }
}
