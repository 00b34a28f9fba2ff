// The CUDA backend's reductions and dot product: pick the kernels (rayo/ptx/kernels/reduction.hpp),
// the split of long axes into parts and the launch shapes, and queue them on the runner. Results
// are deterministic: the split depends only on the shape and the device's multiprocessor count.
#pragma once

#include "cuda/kernel_runner.hpp"
#include "dispatch/backend.hpp"

namespace rayo::cuda::ops {

// Writes shape.outer * shape.inner results: f32 for sum/max/min (a mean divides sums by the
// extent), i64 for argmax/argmin (first index of the extreme; NaN counts as the extreme).
void reduce(KernelRunner& runner, detail::ReduceOp op, detail::ReduceShape shape, bool mean,
            detail::TensorView const& in, detail::TensorView const& out);
// out[0] = Σ a[i]·b[i] (f32).
void dot(KernelRunner& runner, detail::TensorView const& a, detail::TensorView const& b, detail::TensorView const& out);

}  // namespace rayo::cuda::ops
