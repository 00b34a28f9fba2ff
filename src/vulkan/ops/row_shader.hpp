// What the softmax and normalization families share on Vulkan: shaders/rows.comp (rows_subgroup.comp
// with subgroup arithmetic), which runs all four row-wise ops, and its plan.
#pragma once

#include "vulkan/ops/ops.hpp"

namespace rayo::vulkan::ops {

// yes for contiguous operands of one floating type (f16 and bf16 where the device has 16-bit
// storage) of fewer than 2^32 elements.
[[nodiscard]] Support row_shader_supports(ShaderRunner const& r, Op op, OpViews const& v);

// Records `op` (softmax, log_softmax, layer_norm, rms_norm) over the rows of `in` into `out`;
// gamma and beta are the norms' affine parameters (null when absent).
void record_rows(ShaderRunner& r, Op op, float eps, TensorView const& in, TensorView const* gamma,
                 TensorView const* beta, TensorView const& out);

}  // namespace rayo::vulkan::ops
