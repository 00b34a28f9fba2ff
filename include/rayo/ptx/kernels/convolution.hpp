// The convolution family as PTX: conv2d computed directly, one output per thread, and as an
// implicit GEMM on the tensor cores (f16 / bf16).
//
//   Kernel k = rayo::ptx::kernels::conv2d_direct({.element = DType::f16, .bias = true});
//   Conv2dGemmConfig const g{.element = DType::f16, .tile_m = 64};
//   Kernel t = rayo::ptx::kernels::conv2d_gemm(g);   // launch: conv2d_gemm_launch(g, ...)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// The implicit-GEMM conv2d on the tensor cores: per group (grid.y), out[o, p] = Σ_k w[o, k]·b[k, p]
// with o the group's output channels (GEMM rows), p = (n, y, x) the output pixels (GEMM columns,
// consecutive in NCHW output, so the stores run along the image) and k = (c, i, j) the group's
// channels and taps (w[o] read as the row-major [og, cg·kh·kw] matrix it is). b is never
// materialised: its k × p tile is gathered from x into shared memory per k step through a table of
// per-k offsets and tap bits built in shared memory at the start, each pixel knowing which taps
// fall inside the image (reads outside count as 0). mma.sync.m16n8k16 with f32 accumulation, the
// GEMM's cp.async pipeline for w (tensor_core_stages.hpp); the result (+ bias[o] in f32) rounded
// to the element type once. Needs sm_80, kh·kw ≤ 32, tensors under 2^32 elements. Parameters, in
// order: out, x, w, bias (.u64; bias unread without `bias`), then .u32 n, c, h, w, o, kh, kw, oh,
// ow, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, cg, og (as conv2d_direct, with the
// batch n for its `total`).
struct RAYO_API Conv2dGemmConfig {
    DType element = DType::f16;  // of x, w, bias and out: f16 or bf16
    bool flip = false;           // a true convolution: the taps turned half round
    bool bias = false;           // bias[o] added
    // w's rows are copied by 16-byte cp.async: w 16-byte aligned and cg·kh·kw a multiple of 8.
    // false: element by element through registers.
    bool aligned = true;
    // oh·ow even: each thread's two adjacent output pixels are one 4-byte store (out 4-byte aligned).
    bool paired_stores = false;
    unsigned tile_m = 128;  // output channels per block: 64 or 128
    unsigned tile_n = 128;  // output pixels per block: 64 or 128
    unsigned stages = 4;    // cp.async pipeline depth, 2 to 4
};

// The configuration checked (BuildError for an element type or tile the generator lacks).
[[nodiscard]] RAYO_API Conv2dGemmConfig conv2d_gemm_resolved(Conv2dGemmConfig const& config);

// The kernel, named rayo_conv2d_gemm_{f16|bf16}_{tile_m}x{tile_n}_s{stages}[_e][_pairs][_flip][_bias].
[[nodiscard]] RAYO_API Kernel conv2d_gemm(Conv2dGemmConfig const& config);
[[nodiscard]] RAYO_API std::string conv2d_gemm_name(Conv2dGemmConfig const& config);

struct RAYO_API Conv2dGemmLaunch {
    std::uint32_t grid_x = 0;        // channel tiles × pixel tiles of one group
    std::uint32_t grid_y = 0;        // groups
    std::uint32_t threads = 0;       // per block
    std::uint32_t shared_bytes = 0;  // dynamic: the pipeline's stages and the k table
};
// How to launch conv2d_gemm(config) for `pixels` = n·oh·ow outputs per channel, og output channels
// and k = cg·kh·kw products per output in each of `groups` groups.
[[nodiscard]] RAYO_API Conv2dGemmLaunch conv2d_gemm_launch(Conv2dGemmConfig const& config, std::uint64_t pixels,
                                                           std::uint64_t og, std::uint64_t k, std::uint64_t groups);

// Every configuration rayo's CUDA conv2d may run (for tests that assemble them all).
[[nodiscard]] RAYO_API std::vector<Conv2dGemmConfig> conv2d_gemm_configs();

}  // namespace rayo::ptx::kernels
