// Row-wise ops on Vulkan (shaders/rows.comp or rows_subgroup.comp, body in rows_body.glsl), in three
// forms: one invocation per short row; one workgroup per row holding the row in registers (x read
// once, y written once, vec4 accesses where the offsets allow), the bandwidth-bound form; and for
// rows too long for registers one workgroup per row re-reading it in each pass. f16 and bf16 rows
// (and gamma, beta) through the _element16 builds, computed in f32.
#include "vulkan/ops/row_shader.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "dispatch/operand_checks.hpp"
#include "vulkan/ops/element_type.hpp"

namespace rayo::vulkan::ops {

namespace {

// Mirrors the push constants of shaders/rows_body.glsl.
struct RowsPush {
    std::uint32_t rows = 0, cols = 0;
    std::uint32_t x_offset = 0, y_offset = 0, gamma_offset = 0, beta_offset = 0;
    float eps = 0.0f;
};

// Rows up to this long take one invocation each (no workgroup barriers).
constexpr std::size_t per_thread_cols = 64;
// The register path: at most max_chunks vec4s (32 floats) per invocation keeps the register count
// low enough for several rows per multiprocessor; about target_elements per invocation is the aim
// (fewer workgroup reduction steps and barriers; docs/backends/vulkan.md has the sweep).
// max_chunks is the shader's MAX_CHUNKS (rows_body.glsl), the length of its register array.
constexpr std::uint32_t max_chunks = 8;
constexpr std::uint32_t target_elements = 32;
constexpr std::uint32_t min_register_workgroup = 32;
constexpr std::uint32_t max_register_workgroup = 512;

// How one row-wise dispatch runs (the shader's specialization constants 1, 4, 5, 6).
struct RowsPlan {
    std::uint32_t workgroup = 0;
    bool per_thread = false;
    std::uint32_t chunks = 0;  // 0: the multi-pass form
    bool vec4 = false;
};

RowsPlan plan_rows(std::size_t cols, std::uint32_t multi_pass_limit, std::uint32_t register_limit, bool aligned) {
    RowsPlan plan;
    if (cols <= per_thread_cols) {
        plan.per_thread = true;
        plan.workgroup = std::bit_floor(std::min<std::uint32_t>(multi_pass_limit, 64));
        return plan;
    }
    if (cols <= std::size_t{4} * max_chunks * register_limit) {
        // The smallest power-of-two workgroup giving each invocation about target_elements.
        auto const wanted = std::bit_ceil(static_cast<std::uint32_t>((cols + target_elements - 1) / target_elements));
        plan.workgroup = std::clamp(wanted, std::min(min_register_workgroup, register_limit), register_limit);
        plan.chunks = static_cast<std::uint32_t>((cols + 4 * plan.workgroup - 1) / (4 * plan.workgroup));
        plan.vec4 = aligned;
        return plan;
    }
    // Longer rows, smaller workgroups for the shorter of them so that fewer invocations idle.
    plan.workgroup = std::bit_floor(std::min<std::uint32_t>(multi_pass_limit, cols <= 1024 ? 64 : 256));
    return plan;
}

}  // namespace

Support row_shader_supports(ShaderRunner const& r, Op op, OpViews const& v) {
    Support s = detail::contiguous_floating("vulkan", op, v);
    if (!s.native) return s;
    if (v.in[0].numel() > 0xffffffffu) return Support::no("vulkan: a row-wise op over 2^32 elements or more");
    return element_type_supported(r, op, v.in[0].dtype);
}

void record_rows(ShaderRunner& r, Op op, float eps, TensorView const& in, TensorView const* gamma,
                 TensorView const* beta, TensorView const& out) {
    std::size_t const numel = in.numel(), rows = in.rows(), cols = in.cols();
    if (numel == 0) return;
    std::size_t const size = bytes_for(in.dtype, 1);
    Binding const x = r.bind(in, numel * size, Access::read, "row-wise op input");
    Binding const y = r.bind(out, numel * size, Access::write, "row-wise op output");
    Binding const g = gamma ? r.bind(*gamma, cols * size, Access::read, "gamma") : x.untouched();
    Binding const b = beta ? r.bind(*beta, cols * size, Access::read, "beta") : x.untouched();
    RowsPush push;
    push.rows = static_cast<std::uint32_t>(rows);
    push.cols = static_cast<std::uint32_t>(cols);
    push.x_offset = x.element_offset(size);
    push.y_offset = y.element_offset(size);
    push.gamma_offset = g.element_offset(size);
    push.beta_offset = b.element_offset(size);
    push.eps = eps;
    auto const& limits = r.limits();
    std::uint32_t const register_limit = std::bit_floor(
        std::min({max_register_workgroup, limits.maxComputeWorkGroupSize[0], limits.maxComputeWorkGroupInvocations}));
    // Group accesses (vec4, or 4 16-bit elements) need every row start aligned to a group:
    // allocations are aligned to 256 bytes at least, so the offsets of the views (in elements) and
    // the row length must be multiples of 4.
    bool const aligned = cols % 4 == 0 && push.x_offset % 4 == 0 && push.y_offset % 4 == 0 &&
                         (!gamma || push.gamma_offset % 4 == 0) && (!beta || push.beta_offset % 4 == 0);
    RowsPlan const plan = plan_rows(cols, r.workgroup_size(), register_limit, aligned);
    SpecConstants constants{static_cast<std::uint32_t>(op), plan.workgroup, gamma ? 1u : 0u,    beta ? 1u : 0u,
                            plan.per_thread ? 1u : 0u,      plan.chunks,    plan.vec4 ? 1u : 0u};
    Shader const shader =
        r.subgroups() ? element_build(Shader::rows_subgroup, Shader::rows_subgroup_element16, in.dtype, constants)
                      : element_build(Shader::rows, Shader::rows_element16, in.dtype, constants);
    std::size_t const wanted = plan.per_thread ? (rows + plan.workgroup - 1) / plan.workgroup : rows;
    auto const groups = static_cast<std::uint32_t>(std::min<std::size_t>(wanted, r.max_groups()));
    // The loop iterations of one invocation: its rows, each with its passes over its share of the
    // row (counted with one to spare: softmax 3, rms_norm 2 or 3, layer_norm 3 or 5 for huge
    // values) and a few workgroup reductions.
    std::uint64_t const passes = op == Op::layer_norm ? 6 : 4;
    std::uint64_t const threads = plan.per_thread ? std::uint64_t{groups} * plan.workgroup : groups;
    std::uint64_t const row_loop = plan.per_thread ? cols
                                   : plan.chunks   ? 0
                                                   : (cols + plan.workgroup - 1) / plan.workgroup;
    r.check_loop_budget((rows + threads - 1) / threads * (passes * row_loop + 64),
                        std::string(to_string(op)) + " over rows of " + std::to_string(cols));
    r.dispatch(shader, constants, {x, y, g, b}, push, {groups});
}

}  // namespace rayo::vulkan::ops
