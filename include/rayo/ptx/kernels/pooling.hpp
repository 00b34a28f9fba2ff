// max_pool2d and avg_pool2d as PTX (src/dispatch/op_descriptor.hpp, op::Pool2d): one thread per
// output element and step of a grid-stride loop.
//
//   Kernel k = rayo::ptx::kernels::pool2d({.op = Op::avg_pool2d, .element = DType::bf16});
#pragma once

#include "rayo/dtype.hpp"
#include "rayo/export.hpp"
#include "rayo/op_table.hpp"
#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels {

struct RAYO_API Pool2dKernelConfig {
    Op op = Op::max_pool2d;         // max_pool2d or avg_pool2d
    DType element = DType::f32;     // f32, f16 or bf16 (computed in f32)
    bool count_include_pad = true;  // avg_pool2d's divisor: kh·kw, else the cells inside the image
    unsigned block_threads = 256;   // .maxntid
};

// out[p, y, x] = the max (NaN if the window holds one) or the mean (an f32 sum in row order) of
// in[p, y·stride_h − pad_h + i, x·stride_w − pad_w + j] over i < kh, j < kw inside the image.
// Parameters, in order: out, x (.u64), total (.u32 outputs), h, w, oh, ow, kh, kw, stride_h,
// stride_w, pad_h, pad_w (.u32). Named rayo_max_pool2d[_f16|_bf16] or
// rayo_avg_pool2d[_exclude_pad][_f16|_bf16].
[[nodiscard]] RAYO_API Kernel pool2d(Pool2dKernelConfig const& config);

}  // namespace rayo::ptx::kernels
