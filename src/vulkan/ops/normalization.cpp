// The normalization family on Vulkan: the row shader (row_shader.cpp).
#include "vulkan/ops/row_shader.hpp"

namespace rayo::vulkan::ops {

Support supports(ShaderRunner const& r, op::Norm const& d, OpViews const& v) { return row_shader_supports(r, d.op, v); }

void run(ShaderRunner& r, op::Norm const& d, OpViews const& v) {
    TensorView const* gamma = v.in[1].present ? &v.in[1] : nullptr;
    TensorView const* beta = d.op == Op::layer_norm && v.in[2].present ? &v.in[2] : nullptr;
    record_rows(r, d.op, d.eps, v.in[0], gamma, beta, v.out[0]);
}

}  // namespace rayo::vulkan::ops
