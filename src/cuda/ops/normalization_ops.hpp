// The CUDA backend's layer_norm and rms_norm: pick the row layout and launch shape for the views at
// hand and queue the generated kernel (rayo/ptx/kernels/normalization.hpp) on the runner.
#pragma once

#include <cstddef>

#include "cuda/kernel_runner.hpp"
#include "dispatch/backend.hpp"

namespace rayo::cuda::ops {

// layer_norm or rms_norm of each of `rows` contiguous rows of `cols` f32 values, then ·gamma
// (+ beta for layer_norm) where given; gamma and beta have numel 0 when absent, cols otherwise, and
// beta is ignored for rms_norm. out may be in. 16-byte accesses when every view used is 16-byte
// aligned and cols is a multiple of 4. Deterministic: the same bits on every run. Throws
// rayo::Unsupported for non-f32 views and rows of 2^31 floats or more (the dispatcher then runs
// the op on the CPU).
void norm(KernelRunner& runner, detail::NormOp op, std::size_t rows, std::size_t cols, float eps,
          detail::TensorView const& in, detail::TensorView const& gamma, detail::TensorView const& beta,
          detail::TensorView const& out);

}  // namespace rayo::cuda::ops
