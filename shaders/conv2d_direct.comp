#version 450
// conv2d, direct: out[n, o, y, x] = bias[o] + Σ over the group's channels c and taps (i, j) of
// x[n, c, y·stride − pad + i·dilation, …] · w[o, c, i, j] (the taps turned half round with FLIP),
// reads outside the image counting as 0; one output per invocation of a grid-stride loop,
// accumulated in f32. Built for f32 tensors and, as conv2d_direct_element16, f16 / bf16 ones.
#extension GL_GOOGLE_include_directive : require
#ifdef RAYO_ELEMENT16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif
#include "float_controls.glsl"
#include "op_codes.glsl"
#include "element16.glsl"

layout(local_size_x_id = 1) in;
layout(constant_id = 2) const bool FLIP = false;
layout(constant_id = 3) const bool BIAS = false;

#ifdef RAYO_ELEMENT16
layout(std430, set = 0, binding = 0) readonly buffer Input { uint16_t xs[]; };
layout(std430, set = 0, binding = 1) readonly buffer Weights { uint16_t ws[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { uint16_t bs[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Output { uint16_t ys[]; };
float load_x(uint i) { return element_to_float(uint(xs[i])); }
float load_w(uint i) { return element_to_float(uint(ws[i])); }
float load_b(uint i) { return element_to_float(uint(bs[i])); }
void store_y(uint i, float v) { ys[i] = uint16_t(float_to_element(v)); }
#else
layout(std430, set = 0, binding = 0) readonly buffer Input { float xs[]; };
layout(std430, set = 0, binding = 1) readonly buffer Weights { float ws[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { float bs[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Output { float ys[]; };
float load_x(uint i) { return xs[i]; }
float load_w(uint i) { return ws[i]; }
float load_b(uint i) { return bs[i]; }
void store_y(uint i, float v) { ys[i] = v; }
#endif

// Mirrors Conv2dPush (src/vulkan/ops/convolution.cpp); offsets in elements.
layout(push_constant) uniform Params {
    uint total;  // n·o·oh·ow
    uint c, h, w, o, kh, kw, oh, ow;
    uint stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    uint cg, og;  // channels of a group, in and out
    uint x_offset, w_offset, b_offset, y_offset;
} p;

void main() {
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint taps = p.kh * p.kw;
    for (uint e = gl_GlobalInvocationID.x; e < p.total; e += step) {
        uint ox = e % p.ow, rest = e / p.ow;
        uint oy = rest % p.oh;
        rest /= p.oh;
        uint o = rest % p.o, n = rest / p.o;
        int y0 = int(oy * p.stride_h) - int(p.pad_h), x0 = int(ox * p.stride_w) - int(p.pad_w);
        uint channel0 = n * p.c + (o / p.og) * p.cg;
        float acc = BIAS ? load_b(p.b_offset + o) : 0.0;
        for (uint c = 0; c < p.cg; ++c) {
            uint plane = p.x_offset + (channel0 + c) * p.h * p.w;
            uint kernel = p.w_offset + (o * p.cg + c) * taps;
            for (uint i = 0; i < p.kh; ++i) {
                int y = y0 + int(i * p.dilation_h);
                if (y < 0 || y >= int(p.h)) continue;
                for (uint j = 0; j < p.kw; ++j) {
                    int x = x0 + int(j * p.dilation_w);
                    if (x < 0 || x >= int(p.w)) continue;
                    uint tap = FLIP ? taps - 1 - (i * p.kw + j) : i * p.kw + j;
                    acc += load_x(plane + uint(y) * p.w + uint(x)) * load_w(kernel + tap);
                }
            }
        }
        store_y(p.y_offset + e, acc);
    }
}
