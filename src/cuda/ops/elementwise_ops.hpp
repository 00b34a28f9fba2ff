// The CUDA backend's element-wise and binary ops: pick the kernel variant and launch shape for the
// views at hand and queue the generated kernel (rayo/ptx/kernels/elementwise.hpp) on the runner.
#pragma once

#include "cuda/kernel_runner.hpp"
#include "dispatch/backend.hpp"

namespace rayo::cuda::ops {

// out[i] = op(in[i]) over in.numel f32 values (out may alias in).
void unary(KernelRunner& runner, detail::UnaryOp op, detail::UnaryParams params, detail::TensorView const& in,
           detail::TensorView const& out);
// out[i] = a[i] op b[i] over a.numel f32 values.
void binary(KernelRunner& runner, detail::BinaryOp op, detail::TensorView const& a, detail::TensorView const& b,
            detail::TensorView const& out);
// out[i] = a[i] op s.
void binary_scalar(KernelRunner& runner, detail::BinaryOp op, detail::TensorView const& a, float s,
                   detail::TensorView const& out);

}  // namespace rayo::cuda::ops
