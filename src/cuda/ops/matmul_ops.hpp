// matmul and linear on a CUDA device: out[m, n] (f32) = a[m, k] · op(b), op(b) = b[k, n] or
// b[n, k]ᵀ (shape.b_transposed; linear(x, w) arrives that way with b = w).
#pragma once

#include "cuda/kernel_runner.hpp"
#include "dispatch/backend.hpp"

namespace rayo::cuda::ops {

// a and b f32, f16 or bf16 (b's type, or f32 activations with a 16-bit b); out f32. f32 × f32
// runs on the CUDA cores (f32 FMA, exact products); a 16-bit b on the tensor cores with f32
// accumulation, an f32 a rounded to b's type on the way (rayo::ptx::kernels::gemm says how
// accurate that is). A q4_k / q6_k b goes to quant_linear (cuda/ops/quant_ops.hpp). Throws
// rayo::Unsupported for other types and for sizes of 2^32 or more (the dispatcher then runs the op
// on the CPU).
void matmul(KernelRunner& runner, detail::MatmulShape shape, detail::TensorView const& a, detail::TensorView const& b,
            detail::TensorView const& out);

}  // namespace rayo::cuda::ops
