// Row-wise ops on the Vulkan backend: softmax, log_softmax, layer_norm, rms_norm
// (shaders/rows.comp or rows_subgroup.comp), one workgroup per row.
#include <algorithm>
#include <bit>
#include <string>

#include "rayo/error.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace rayo::vulkan {

using detail::TensorView;

namespace {

// Mirrors the push constants of shaders/rows_body.glsl.
struct RowsPush {
    std::uint32_t rows = 0, cols = 0;
    std::uint32_t x_offset = 0, y_offset = 0, gamma_offset = 0, beta_offset = 0;
    float eps = 0.0f;
};

enum RowsOp : std::uint32_t { softmax_op = 0, log_softmax_op = 1, layer_norm_op = 2, rms_norm_op = 3 };

}  // namespace

void VulkanBackend::row_op(std::uint32_t op, std::size_t rows, std::size_t cols, float eps, TensorView const& in,
                           TensorView const* gamma, TensorView const* beta, TensorView const& out) {
    for (TensorView const* v : {&in, gamma, beta, &out})
        if (v && v->dtype != DType::f32) throw Unsupported("vulkan: softmax and norms take f32 tensors");
    std::size_t const numel = rows * cols;
    if (numel == 0) return;
    if (numel > 0xffffffffu) throw Unsupported("vulkan: a row-wise op over more than 2^32 elements");
    std::lock_guard lock(mutex_);
    reclaim();
    Binding const x = bind(in, numel * sizeof(float), Access::read, "row-wise op input");
    Binding const y = bind(out, numel * sizeof(float), Access::write, "row-wise op output");
    Binding const none{x.buffer, x.base, x.size, 0, 0};
    Binding const g = gamma ? bind(*gamma, cols * sizeof(float), Access::read, "gamma") : none;
    Binding const b = beta ? bind(*beta, cols * sizeof(float), Access::read, "beta") : none;
    RowsPush push;
    push.rows = static_cast<std::uint32_t>(rows);
    push.cols = static_cast<std::uint32_t>(cols);
    push.x_offset = x.element_offset(sizeof(float));
    push.y_offset = y.element_offset(sizeof(float));
    push.gamma_offset = g.element_offset(sizeof(float));
    push.beta_offset = b.element_offset(sizeof(float));
    push.eps = eps;
    // Rows up to per_thread_cols long take one invocation each (no workgroup barriers); longer ones a
    // workgroup each, smaller for short rows so that fewer invocations idle.
    constexpr std::size_t per_thread_cols = 64;
    bool const per_thread = cols <= per_thread_cols;
    std::uint32_t const wg = std::bit_floor(std::min<std::uint32_t>(workgroup_size_, cols <= 1024 ? 64 : 256));
    Shader const shader = subgroups() ? Shader::rows_subgroup : Shader::rows;
    std::size_t const wanted = per_thread ? (rows + wg - 1) / wg : rows;
    std::uint32_t const groups = static_cast<std::uint32_t>(std::min<std::size_t>(wanted, max_groups()));
    dispatch(shader, {op, wg, gamma ? 1u : 0u, beta ? 1u : 0u, per_thread ? 1u : 0u}, {x, y, g, b}, push, {groups});
    stream_.submit_if_large();
}

void VulkanBackend::softmax(std::size_t rows, std::size_t cols, bool log, TensorView const& in, TensorView const& out) {
    row_op(log ? log_softmax_op : softmax_op, rows, cols, 0.0f, in, nullptr, nullptr, out);
}

void VulkanBackend::norm(detail::NormOp op, std::size_t rows, std::size_t cols, float eps, TensorView const& in,
                         TensorView const& gamma, TensorView const& beta, TensorView const& out) {
    bool const layer = op == detail::NormOp::layer_norm;
    row_op(layer ? layer_norm_op : rms_norm_op, rows, cols, eps, in, gamma.numel ? &gamma : nullptr,
               layer && beta.numel ? &beta : nullptr, out);
}

}  // namespace rayo::vulkan
