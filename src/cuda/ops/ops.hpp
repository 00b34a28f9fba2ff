// The CUDA backend's op families, one source file each (elementwise.cpp holds the unary and binary
// families). For each descriptor: supports() says whether the generated kernels take these views
// on this device; run() picks the kernel configuration and launch shape for them and queues the
// kernels on the runner (the device's stream, or the tests' PTX simulator).
#pragma once

#include "cuda/kernel_runner.hpp"
#include "dispatch/backend.hpp"
#include "dispatch/broadcast.hpp"

namespace rayo::cuda::ops {

// supports() and run() for every op descriptor, the same list for every backend.
using OpRunner = KernelRunner;
#include "dispatch/op_entry_points.inc"

// out[m, n] = x[m, k] · w[n, k]ᵀ for f32 x and q4_k / q6_k w (quantization.cpp, for matmul.cpp). Up
// to 8 rows of x take the integer GEMV (x quantized on the device to int8 main + residual, or main
// only when rayo::kquant_activations() is q8_k); one row of x with q4_k weights and k <= 32768
// takes, in the residual mode, the spanning GEMV (x as int16 in registers); more rows take the
// tensor-core GEMM on f16-decoded tiles; on Hopper, from 32 rows, w is decoded to f16 once instead
// and multiplied by gemm() on the warpgroup MMAs. Returns whether it added `bias` (f32 [n], or null)
// to every row: the spanning GEMV adds it as it stores; otherwise the caller adds it.
bool linear_kquant(KernelRunner&, op::MatmulShape shape, TensorView const& x, TensorView const& w,
                   TensorView const* bias, TensorView const& out);
// linear of an input formed from x and `second` (swiglu: silu(x)·second; rms_norm: rms_norm(x,
// eps)·second) in the one-row spanning GEMV, which forms it as it loads x; with the bias. False,
// with nothing run, where that GEMV does not take the product (the caller forms the input first).
struct FormedInput {
    TensorView second;
    bool rms_norm = false;
    float eps = 0.0f;
};
bool linear_kquant_formed(KernelRunner&, op::MatmulShape shape, TensorView const& x, TensorView const& w,
                          TensorView const* bias, FormedInput const& formed, TensorView const& out);

// out[b][r, c] = in[b][c, r] for a batch of matrices of `element_bytes` values at device addresses
// (layout.cpp: rayo_transpose_tiled_b<bytes>, for matmul.cpp too).
void transpose_matrices(KernelRunner&, detail::Transposition const& t, std::size_t element_bytes, std::uint64_t out,
                        std::uint64_t in);

// The GEMM of matmul.cpp on operands at device addresses: out[batch, m, n] (f32) = a · op(b)
// (+ bias, f32 [n], where its address is not 0), a and b of these element types (f32, f16, bf16;
// a is b's type or f32).
struct GemmAddresses {
    std::uint64_t a = 0, b = 0, out = 0, bias = 0;
    ptx::Type a_type = ptx::Type::f32, b_type = ptx::Type::f32;
};
void gemm(KernelRunner&, op::MatmulShape const& shape, GemmAddresses const& at);
// Whether gemm() runs products on Hopper's warpgroup MMAs on this device (an sm_90 whose driver
// encodes tensor maps, RAYO_CUDA_WGMMA not off).
[[nodiscard]] bool warpgroup_mma_enabled(KernelRunner const&);
// Whether gemm() would run an aligned f16 x f16 product of this shape on Hopper's warpgroup MMAs.
[[nodiscard]] bool runs_on_warpgroup_mma(KernelRunner const&, op::MatmulShape const& shape);

}  // namespace rayo::cuda::ops
