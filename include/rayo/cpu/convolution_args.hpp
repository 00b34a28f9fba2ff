// The descriptions of conv2d work that src/cpu/ops/convolution.cpp hands to the per-ISA
// convolution kernels (rayo/cpu/convolution.hpp): plain sizes and raw pointers.
#pragma once

#include <cstddef>

namespace rayo::cpu {

// The geometry of one conv2d plane pair: input [h, w] → output [oh, ow] through a kh × kw window
// with strides, zero padding and dilations.
struct ConvGeometry {
    std::size_t h = 0, w = 0;
    std::size_t oh = 0, ow = 0;
    std::size_t kh = 0, kw = 0;
    std::size_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
};

// One depthwise task: output rows [y0, y1) of the `outputs` output channels that read the single
// input plane x (a depthwise conv2d with channel multiplier `outputs`), in f32.
//
// The kernel first copies the input rows those outputs read into `scratch`, each padded with the
// zeros of the padding and split into stride_w phases (phase q holds padded columns q, q + s,
// q + 2s, ...), so that every tap of every output row is a contiguous run. Each phase takes
// `phase_len` floats (at least ow + (kw − 1)·dilation_w / stride_w + 16), each row stride_w phases;
// scratch holds a row for each of ((y1 − y0 − 1)·stride_h + (kh − 1)·dilation_h + 1) input rows.
struct DepthwiseArgs {
    ConvGeometry g;
    float const* x = nullptr;        // the input plane [h, w]
    float const* weights = nullptr;  // [outputs, kh, kw], cross-correlation order
    float const* bias = nullptr;     // [outputs], or null
    std::size_t outputs = 1;
    float* out = nullptr;  // [outputs, out_plane]: row y of channel m at out + m·out_plane + (y − y0)·ow
    std::size_t out_plane = 0;
    std::size_t y0 = 0, y1 = 0;
    std::size_t phase_len = 0;
    float* scratch = nullptr;  // 64-byte aligned
};

// Taps of the largest window the depthwise kernel takes (larger ones go through the GEMM).
inline constexpr std::size_t depthwise_max_taps = 256;

}  // namespace rayo::cpu
