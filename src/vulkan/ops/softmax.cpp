// The softmax family on Vulkan: the row shader (row_shader.cpp).
#include "vulkan/ops/row_shader.hpp"

namespace rayo::vulkan::ops {

Support supports(ShaderRunner const& r, op::Softmax const& d, OpViews const& v) {
    return row_shader_supports(r, d.op, v);
}

void run(ShaderRunner& r, op::Softmax const& d, OpViews const& v) {
    record_rows(r, d.op, 0.0f, v.in[0], nullptr, nullptr, v.out[0]);
}

}  // namespace rayo::vulkan::ops
