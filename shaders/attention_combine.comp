#version 450
// attention's second pass where the keys were split across workgroups (attention.comp with
// PARTIAL): each output element from its row's splits, (maximum m_s, sum l_s, unnormalised
// output a_s): with M the largest m_s, out = Σ a_s·e^(m_s − M) / Σ l_s·e^(m_s − M). Splits that saw
// no key (m_s = −inf) count nothing; a row none of whose splits saw a key is zeros; a NaN maximum
// (a NaN score) makes the row NaN. One invocation per element, grid-stride. f32 output, f16 / bf16
// in the _element16 build.
#extension GL_GOOGLE_include_directive : require
#ifdef RAYO_ELEMENT16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif
#include "float_controls.glsl"
layout(local_size_x_id = 1) in;
#include "float_math.glsl"
#include "op_codes.glsl"

layout(constant_id = 2) const uint D = 64;

#include "element16.glsl"
#ifdef RAYO_ELEMENT16
#define RAYO_ELEMENT uint16_t
#define element_of(v) uint16_t(float_to_element(v))
#else
#define RAYO_ELEMENT float
#define element_of(v) (v)
#endif
layout(std430, set = 0, binding = 0) readonly buffer Partial { float partial[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { RAYO_ELEMENT o[]; };

// Mirrors CombinePush (src/vulkan/ops/attention.cpp).
layout(push_constant) uniform Params {
    uint rows;  // batch · q_len · heads
    uint splits;
    uint o_offset;
} params;

void main() {
    float neg_inf = uintBitsToFloat(0xff800000u);
    uint total = params.rows * D;
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint x = gl_GlobalInvocationID.x; x < total; x += stride) {
        uint row = x / D, c = x - row * D;
        uint first = row * params.splits * (D + 2);
        // Four splits a step, their loads together (each split's row is a separate cache line).
        float m = neg_inf;
        bool nan = false;
        uint s = 0;
        for (; s + 4 <= params.splits; s += 4) {
            vec4 ms = vec4(partial[first + s * (D + 2)], partial[first + (s + 1) * (D + 2)],
                           partial[first + (s + 2) * (D + 2)], partial[first + (s + 3) * (D + 2)]);
            nan = nan || any(isnan(ms));
            m = max(m, max(max(ms.x, ms.y), max(ms.z, ms.w)));
        }
        for (; s < params.splits; ++s) {
            float ms = partial[first + s * (D + 2)];
            nan = nan || isnan(ms);
            m = max(m, ms);
        }
        float sum = 0.0, value = 0.0;
        if (m != neg_inf && !nan) {
            for (s = 0; s + 4 <= params.splits; s += 4) {
                vec4 ms, sums, values;
                for (uint i = 0; i < 4; ++i) {
                    uint at = first + (s + i) * (D + 2);
                    ms[i] = partial[at];
                    sums[i] = partial[at + 1];
                    values[i] = partial[at + 2 + c];
                }
                for (uint i = 0; i < 4; ++i) {
                    if (ms[i] == neg_inf) continue;
                    float f = rayo_exp_nonpositive(ms[i] - m);
                    sum = fma(sums[i], f, sum);
                    value = fma(values[i], f, value);
                }
            }
            for (; s < params.splits; ++s) {
                uint at = first + s * (D + 2);
                float ms = partial[at];
                if (ms == neg_inf) continue;
                float f = rayo_exp_nonpositive(ms - m);
                sum = fma(partial[at + 1], f, sum);
                value = fma(partial[at + 2 + c], f, value);
            }
        }
        float result = nan ? uintBitsToFloat(0x7fc00000u) : sum == 0.0 ? 0.0 : value / sum;
        o[params.o_offset + x] = element_of(result);
    }
}
