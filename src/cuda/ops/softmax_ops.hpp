// The CUDA backend's softmax and log_softmax: pick the row layout and launch shape for the views at
// hand and queue the generated kernel (rayo/ptx/kernels/softmax.hpp) on the runner.
#pragma once

#include <cstddef>

#include "cuda/kernel_runner.hpp"
#include "dispatch/backend.hpp"

namespace rayo::cuda::ops {

// softmax (or log_softmax) of each of `rows` contiguous rows of `cols` f32 values; out may be in.
// Rows of 16-byte-aligned views whose length is a multiple of 4 are read and written 16 bytes at a
// time, others one float at a time. Throws rayo::Unsupported for non-f32 views and rows of 2^31
// floats or more (the dispatcher then runs the op on the CPU).
void softmax(KernelRunner& runner, std::size_t rows, std::size_t cols, bool log, detail::TensorView const& in,
             detail::TensorView const& out);

}  // namespace rayo::cuda::ops
