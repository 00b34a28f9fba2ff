#version 450
// rope: x [tokens, heads, head_dim] rotated pair by pair (src/dispatch/op_descriptor.hpp, op::Rope).
// One invocation per (token, head group, lane) and step of a grid-stride loop: lanes [0, n_dims/2)
// are the pairs, whose angle (and its cosine and sine) the invocation computes once and applies to
// heads g, g + groups, ... of its token; lanes [n_dims/2, lanes) copy one unrotated dimension of
// those heads (the host gives none when out is x). Neighbouring invocations touch neighbouring elements.
// The angle in f32: freq_base^(−2p/n_dims) = e^(p·c) with c = −2·ln(freq_base)/n_dims a
// double-float from the host, times the position, freq_scale, divided by the factor; then its
// cosine and sine after a reduction by π/2 carried exactly (three-part π/2, exact products).
// f32 tensors, and f16 / bf16 ones in the _element16 build (computed in f32).
#extension GL_GOOGLE_include_directive : require
#ifdef RAYO_ELEMENT16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif
#include "float_controls.glsl"
layout(local_size_x_id = 1) in;
#include "float_math.glsl"
#include "op_codes.glsl"

layout(constant_id = 2) const bool HALVES = false;       // pairs (p, p + n_dims/2), else (2p, 2p + 1)
layout(constant_id = 3) const bool HAS_FACTORS = false;

#include "element16.glsl"
// (Macros, not functions: a function taking or returning uint16_t would need the Int16 capability.)
#ifdef RAYO_ELEMENT16
#define RAYO_ELEMENT uint16_t
#define element_value(e) element_to_float(uint(e))
#define element_of(v) uint16_t(float_to_element(v))
#else
#define RAYO_ELEMENT float
#define element_value(e) (e)
#define element_of(v) (v)
#endif
layout(std430, set = 0, binding = 0) readonly buffer Input { RAYO_ELEMENT x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Positions { int positions[]; };
layout(std430, set = 0, binding = 2) readonly buffer Factors { float factors[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Output { RAYO_ELEMENT y[]; };

// Mirrors RopePush (src/vulkan/ops/rotary.cpp); offsets in elements.
layout(push_constant) uniform Params {
    uint tokens;
    uint heads;
    uint head_dim;
    uint n_dims;
    uint positions;   // entries; token t's is positions[t % positions]
    uint lanes;       // per token: n_dims/2 pairs, then the copied dimensions
    uint x_offset;
    uint y_offset;
    uint positions_offset;
    uint factors_offset;
    float c_hi;       // −2·ln(freq_base)/n_dims = c_hi + c_lo
    float c_lo;
    float freq_scale;
    uint groups;      // head groups a token: group g takes heads g, g + groups, ...
} params;

// π/2 = P1 + P2 + P3 (P1 and P2 floats, P3 the rest rounded).
const float RAYO_PIO2_1 = 1.570796371e+00;
const float RAYO_PIO2_2 = -4.371138829e-08;
const float RAYO_PIO2_3 = -1.715124510e-15;
const float RAYO_TWO_OVER_PI = 6.366197467e-01;

// sin and cos of a, |a| < 2^22: a = k·π/2 + r with |r| <~ π/4, r from exact products of k and the
// parts of π/2 (a − k·P1 is exact, Sterbenz), then Taylor series to r^11 and r^12 (truncation
// under 1e-11 on [−π/4, π/4]) and k's quadrant.
void rope_sincos(float a, out float s, out float c) {
    precise float k = roundEven(a * RAYO_TWO_OVER_PI);
    float p1, e1, p2, e2;
    rayo_two_prod(k, RAYO_PIO2_1, p1, e1);
    rayo_two_prod(k, RAYO_PIO2_2, p2, e2);
    precise float r = (((a - p1) - p2) - e1) - e2;
    precise float r3 = r - k * RAYO_PIO2_3;
    precise float r2 = r3 * r3;
    precise float sp = fma(fma(fma(fma(-2.505210794e-08, r2, 2.755731884e-06), r2, -1.984127011e-04), r2,
                               8.333333768e-03), r2, -1.666666716e-01);
    precise float sin_r = fma(r3 * r2, sp, r3);
    precise float cp = fma(fma(fma(fma(2.087675588e-09, r2, -2.755731998e-07), r2, 2.480158764e-05), r2,
                               -1.388888923e-03), r2, 4.166666791e-02);
    precise float cos_r = fma(r2, fma(r2, cp, -0.5), 1.0);
    int q = int(k) & 3;
    s = q == 0 ? sin_r : q == 1 ? cos_r : q == 2 ? -sin_r : -cos_r;
    c = q == 0 ? cos_r : q == 1 ? -sin_r : q == 2 ? -cos_r : sin_r;
}

// The angle of pair p at `position`.
float rope_angle(uint p, int position) {
    float t_hi, t_lo;
    rayo_two_prod(float(p), params.c_hi, t_hi, t_lo);
    precise float lo = fma(float(p), params.c_lo, t_lo);
    precise float angle = float(position) * rayo_exp2f(t_hi, lo);
    precise float scaled = angle * params.freq_scale;
    if (HAS_FACTORS) return rayo_div(scaled, factors[params.factors_offset + p]);
    return scaled;
}

void main() {
    uint half_dims = params.n_dims / 2;
    uint token_lanes = params.lanes * params.groups;
    uint total = params.tokens * token_lanes;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
        uint t = i / token_lanes, in_token = i - t * token_lanes;
        uint g = in_token / params.lanes, lane = in_token - g * params.lanes;
        uint row = t * params.heads * params.head_dim;
        if (lane >= half_dims) {
            uint d = params.n_dims + (lane - half_dims);
            for (uint h = g; h < params.heads; h += params.groups)
                y[params.y_offset + row + h * params.head_dim + d] = x[params.x_offset + row + h * params.head_dim + d];
            continue;
        }
        int position = positions[params.positions_offset + t % params.positions];
        float s, c;
        rope_sincos(rope_angle(lane, position), s, c);
        uint first = HALVES ? lane : 2 * lane, second = HALVES ? lane + half_dims : 2 * lane + 1;
        for (uint h = g; h < params.heads; h += params.groups) {
            uint head = row + h * params.head_dim;
            float a = element_value(x[params.x_offset + head + first]);
            float b = element_value(x[params.x_offset + head + second]);
            precise float u = a * c - b * s;
            precise float v = a * s + b * c;
            y[params.y_offset + head + first] = element_of(u);
            y[params.y_offset + head + second] = element_of(v);
        }
    }
}
