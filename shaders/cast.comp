#version 450
// cast: out[i] = x[i] converted from FROM to TO (RAYO_DTYPE_F32, F16, BF16, I32; constants 0 and
// 2), by the rules of docs/ops.md: floats round to nearest even (overflow to ±Inf), NaN and ±Inf
// stay; to i32, truncation toward zero with saturation, NaN giving 0; from i32, rounding to nearest
// even. Every rounding is integer arithmetic on the bits, so no driver's float conversion (or
// flushing of subnormals) enters. VEC4 (constant 3, set where both offsets are multiples of 4
// elements): each invocation converts 4 consecutive elements with one 16- or 8-byte access each
// way; otherwise one element per invocation, 16-bit elements through 16-bit storage
// (storageBuffer16BitAccess).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#include "op_codes.glsl"
#include "float16_bits.glsl"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const uint FROM = RAYO_DTYPE_F32;
layout(constant_id = 2) const uint TO = RAYO_DTYPE_F16;
layout(constant_id = 3) const bool VEC4 = false;

layout(std430, set = 0, binding = 0) readonly buffer In32 { uint x32[]; };
layout(std430, set = 0, binding = 0) readonly buffer In16 { uint16_t x16[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out32 { uint y32[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out16 { uint16_t y16[]; };
layout(std430, set = 0, binding = 0) readonly buffer In128 { uvec4 x128[]; };  // VEC4, 32-bit elements
layout(std430, set = 0, binding = 0) readonly buffer In64 { uvec2 x64[]; };    // VEC4, 16-bit elements
layout(std430, set = 0, binding = 1) writeonly buffer Out128 { uvec4 y128[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out64 { uvec2 y64[]; };

// Mirrors CastPush (src/vulkan/ops/conversion.cpp); offsets in elements.
layout(push_constant) uniform Params {
    uint n;
    uint in_offset;
    uint out_offset;
} params;

// |v| rounded to nearest even at `bits` significant bits, as float bits with v's sign (exact:
// the result has at most `bits` <= 24 significant bits).
uint int_to_float_bits(int v, uint bits) {
    uint sign = v < 0 ? 0x80000000u : 0u;
    uint m = v < 0 ? uint(-(v + 1)) + 1u : uint(v);
    if (m == 0u) return sign;
    int top = findMSB(m);
    uint scale = 0u;
    if (uint(top) + 1u > bits) {
        scale = uint(top) + 1u - bits;
        m = shift_rte(m, scale);
    }
    if ((m >> bits) != 0u) {  // the rounding carried into a new top bit: m = 2^bits
        m >>= 1u;
        scale += 1u;
    }
    int t = findMSB(m);
    uint exponent = uint(t) + scale + 127u;
    return sign | (exponent << 23) | ((m << (23 - t)) & 0x7fffffu);
}

int float_bits_to_int(uint f) {
    float v = uintBitsToFloat(f);
    if ((f & 0x7fffffffu) > 0x7f800000u) return 0;  // NaN
    if (v >= 2147483648.0) return 2147483647;
    if (v < -2147483648.0) return -2147483647 - 1;
    return int(v);  // truncates toward zero
}

bool is_16bit(uint type) { return type == RAYO_DTYPE_F16 || type == RAYO_DTYPE_BF16; }

// The bits of one converted element from its source bits (16-bit types in the low half).
uint convert(uint raw) {
    if (FROM == TO) return raw;
    if (FROM == RAYO_DTYPE_I32) {
        int v = int(raw);
        if (TO == RAYO_DTYPE_F32) return int_to_float_bits(v, 24u);
        if (TO == RAYO_DTYPE_BF16) return float_bits_to_bf16(int_to_float_bits(v, 8u));
        return float_bits_to_half(int_to_float_bits(v, 11u));
    }
    uint f = FROM == RAYO_DTYPE_F32 ? raw : FROM == RAYO_DTYPE_F16 ? half_to_float_bits(raw) : raw << 16;
    if (TO == RAYO_DTYPE_F32) return f;
    if (TO == RAYO_DTYPE_F16) return float_bits_to_half(f);
    if (TO == RAYO_DTYPE_BF16) return float_bits_to_bf16(f);
    return uint(float_bits_to_int(f));
}

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint first = 0u;  // the first element the one-at-a-time loop takes
    if (VEC4) {
        uint groups = params.n / 4u, in4 = params.in_offset / 4u, out4 = params.out_offset / 4u;
        for (uint q = gl_GlobalInvocationID.x; q < groups; q += stride) {
            uvec4 raw;
            if (is_16bit(FROM)) {
                uvec2 w = x64[in4 + q];
                raw = uvec4(w.x & 0xffffu, w.x >> 16, w.y & 0xffffu, w.y >> 16);
            } else {
                raw = x128[in4 + q];
            }
            uvec4 r = uvec4(convert(raw.x), convert(raw.y), convert(raw.z), convert(raw.w));
            if (is_16bit(TO)) y64[out4 + q] = uvec2(r.x | (r.y << 16), r.z | (r.w << 16));
            else y128[out4 + q] = r;
        }
        first = groups * 4u;
    }
    for (uint i = first + gl_GlobalInvocationID.x; i < params.n; i += stride) {
        uint src = params.in_offset + i, dst = params.out_offset + i;
        uint bits = convert(is_16bit(FROM) ? uint(x16[src]) : x32[src]);
        if (is_16bit(TO)) y16[dst] = uint16_t(bits);
        else y32[dst] = bits;
    }
}
