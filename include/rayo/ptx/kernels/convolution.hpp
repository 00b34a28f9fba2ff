// The convolution family as PTX: conv2d computed directly, one output per thread.
//
//   Kernel k = rayo::ptx::kernels::conv2d_direct({.element = DType::f16, .bias = true});
#pragma once

#include "rayo/dtype.hpp"
#include "rayo/export.hpp"
#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels {

struct RAYO_API Conv2dKernelConfig {
    DType element = DType::f32;    // of x, w, bias and out: f32, f16 or bf16
    bool flip = false;             // a true convolution: the taps turned half round
    bool bias = false;             // bias[o] added
    unsigned block_threads = 256;  // .maxntid
};

// out[n, o, y, x] = bias[o] + Σ over the group's channels c and taps (i, j) of
// x[n, c, y·stride_h − pad_h + i·dilation_h, x·stride_w − pad_w + j·dilation_w] · w[o, c, i, j],
// reads outside the image counting as 0, accumulated in f32 (fma), one output per thread and step
// of a grid-stride loop. Every tensor contiguous with under 2^32 elements. Parameters, in order:
// out, x, w, bias (.u64 each; bias unread without `bias`), then .u32 total (n·o·oh·ow), c, h, w,
// o, kh, kw, oh, ow, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, cg (channels of a
// group), og (outputs of a group). Named rayo_conv2d_direct[_f16|_bf16][_flip][_bias].
[[nodiscard]] RAYO_API Kernel conv2d_direct(Conv2dKernelConfig const& config);

}  // namespace rayo::ptx::kernels
