#version 450
// max_pool2d and avg_pool2d (src/dispatch/op_descriptor.hpp, op::Pool2d) over planes [planes, h, w]:
// one invocation per output element and step of a grid-stride loop, neighbouring invocations on
// neighbouring outputs of a row. The max propagates NaN; the mean sums its window in f32 in row
// order and divides by kh·kw or by the cells inside the image. f32 tensors, and f16 / bf16 ones in
// the _element16 build (computed in f32).
#extension GL_GOOGLE_include_directive : require
#ifdef RAYO_ELEMENT16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif
#include "float_controls.glsl"
layout(local_size_x_id = 1) in;
#include "float_math.glsl"
#include "op_codes.glsl"

layout(constant_id = 0) const uint OP = RAYO_OP_MAX_POOL2D;  // max_pool2d or avg_pool2d
layout(constant_id = 2) const bool COUNT_INCLUDE_PAD = true;

#include "element16.glsl"
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
layout(std430, set = 0, binding = 1) writeonly buffer Output { RAYO_ELEMENT y[]; };

// Mirrors PoolPush (src/vulkan/ops/pooling.cpp); offsets in elements.
layout(push_constant) uniform Params {
    uint total;  // planes · oh · ow
    uint h, w, oh, ow, kh, kw;
    uint stride_h, stride_w, pad_h, pad_w;
    uint x_offset, y_offset;
} params;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < params.total; i += stride) {
        uint ox = i % params.ow, rest = i / params.ow;
        uint oy = rest % params.oh, plane = rest / params.oh;
        int y0 = int(oy * params.stride_h) - int(params.pad_h), x0 = int(ox * params.stride_w) - int(params.pad_w);
        uint r0 = uint(max(y0, 0)), r1 = uint(min(y0 + int(params.kh), int(params.h)));
        uint c0 = uint(max(x0, 0)), c1 = uint(min(x0 + int(params.kw), int(params.w)));
        uint base = params.x_offset + plane * params.h * params.w;
        float result;
        if (OP == RAYO_OP_MAX_POOL2D) {
            float m = -RAYO_INF;
            for (uint r = r0; r < r1; ++r)
                for (uint c = c0; c < c1; ++c) {
                    float v = element_value(x[base + r * params.w + c]);
                    m = v > m || isnan(v) ? v : m;
                }
            result = m;
        } else {
            precise float sum = 0.0;
            for (uint r = r0; r < r1; ++r)
                for (uint c = c0; c < c1; ++c) sum += element_value(x[base + r * params.w + c]);
            uint cells = COUNT_INCLUDE_PAD ? params.kh * params.kw : (r1 - r0) * (c1 - c0);
            result = rayo_div(sum, float(cells));
        }
        y[params.y_offset + i] = element_of(result);
    }
}
