// The CUDA backend's K-quant ops: dequantize (q4_k, q6_k, q8_k), q8_k quantization, and linear with
// q4_k / q6_k weights (the matmul glue calls quant_linear when b is a K-quant tensor). Each picks the
// kernel variant and launch shape and runs the generated kernel through the KernelRunner.
#pragma once

#include "cuda/kernel_runner.hpp"
#include "dispatch/backend.hpp"

namespace rayo::cuda::ops {

// f32 -> q8_k, byte for byte the CPU's. q4_k / q6_k quantization throws rayo::Unsupported so that
// the dispatcher runs it on the CPU (visibly, in rayo::stats()).
void quantize(KernelRunner& runner, detail::TensorView const& in, detail::TensorView const& out);

// q4_k / q6_k / q8_k -> f32, bit for bit the CPU's floats.
void dequantize(KernelRunner& runner, detail::TensorView const& in, detail::TensorView const& out);

// out[m, n] = x[m, k] · w[n, k]ᵀ for f32 x and q4_k / q6_k w (shape.b_transposed). Up to 8 rows of x
// take the integer GEMV (x quantized on the device to int8 main + residual, or main only when
// rayo::kquant_activations() is q8_k); one row of x with q4_k weights and k <= 32768 takes, in the
// residual mode, the spanning GEMV (x as int16 in registers); more rows take the tensor-core GEMM
// on f16-decoded tiles.
void quant_linear(KernelRunner& runner, detail::MatmulShape shape, detail::TensorView const& x,
                  detail::TensorView const& w, detail::TensorView const& out);

}  // namespace rayo::cuda::ops
