// rope on Vulkan: shaders/rope.comp, one invocation per (token, pair) applying its angle to every
// head of the token (and, out of place with n_dims < head_dim, one per copied dimension); f16 and
// bf16 through the _element16 build.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "dispatch/operand_checks.hpp"
#include "vulkan/ops/element_type.hpp"
#include "vulkan/ops/ops.hpp"

namespace rayo::vulkan::ops {

namespace {

// Mirrors the push constants of shaders/rope.comp.
struct RopePush {
    std::uint32_t tokens = 0, heads = 0, head_dim = 0, n_dims = 0, positions = 0, lanes = 0;
    std::uint32_t x_offset = 0, y_offset = 0, positions_offset = 0, factors_offset = 0;
    float c_hi = 0, c_lo = 0, freq_scale = 1;
    std::uint32_t groups = 1;
};

}  // namespace

Support supports(ShaderRunner const& r, op::Rope const& d, OpViews const& v) {
    TensorView const &x = v.in[0], &out = v.out[0];
    if (!detail::is_floating(x.dtype) || out.dtype != x.dtype || v.in[1].dtype != DType::i32 ||
        (d.has_factors && v.in[2].dtype != DType::f32))
        return Support::no("vulkan: rope takes x and out of one floating type, i32 positions and f32 factors");
    if (!x.is_contiguous() || !out.is_contiguous()) return Support::no("vulkan: rope takes contiguous tensors");
    if (x.numel() > 0xffffffffu || d.tokens * (d.head_dim / 2 + d.head_dim) > 0xffffffffu)
        return Support::no("vulkan: rope of 2^32 elements or more");
    return element_type_supported(r, d.op, x.dtype);
}

void run(ShaderRunner& r, op::Rope const& d, OpViews const& v) {
    TensorView const &x = v.in[0], &positions = v.in[1], &out = v.out[0];
    std::size_t const size = bytes_for(x.dtype, 1), bytes = x.numel() * size;
    Binding const bx = r.bind(x, bytes, Access::read, "rope input");
    Binding const bp = r.bind(positions, positions.bytes(), Access::read, "rope positions");
    Binding const bf = d.has_factors ? r.bind(v.in[2], v.in[2].bytes(), Access::read, "rope factors") : bp.untouched();
    Binding const by = r.bind(out, bytes, Access::write, "rope output");
    bool const in_place = bx.buffer == by.buffer && bx.base + bx.offset == by.base + by.offset;
    bool const copy_tail = !in_place && d.n_dims < d.head_dim;
    RopePush push;
    push.tokens = static_cast<std::uint32_t>(d.tokens);
    push.heads = static_cast<std::uint32_t>(d.heads);
    push.head_dim = static_cast<std::uint32_t>(d.head_dim);
    push.n_dims = static_cast<std::uint32_t>(d.n_dims);
    push.positions = static_cast<std::uint32_t>(d.positions);
    push.lanes = static_cast<std::uint32_t>(d.n_dims / 2 + (copy_tail ? d.head_dim - d.n_dims : 0));
    push.x_offset = bx.element_offset(size);
    push.y_offset = by.element_offset(size);
    push.positions_offset = bp.element_offset(4);
    push.factors_offset = d.has_factors ? bf.element_offset(4) : 0;
    // The exponent's factor −2·ln(freq_base)/n_dims as a double-float.
    double const c = -2.0 * std::log(static_cast<double>(d.freq_base)) / static_cast<double>(d.n_dims);
    push.c_hi = static_cast<float>(c);
    push.c_lo = static_cast<float>(c - static_cast<double>(push.c_hi));
    push.freq_scale = d.freq_scale;
    std::uint32_t const workgroup = r.workgroup_size();
    SpecConstants constants{0u, workgroup, d.halves ? 1u : 0u, d.has_factors ? 1u : 0u};
    Shader const shader = element_build(Shader::rope, Shader::rope_element16, x.dtype, constants);
    if (d.tokens * push.lanes == 0) return;
    push.groups = static_cast<std::uint32_t>(op::rope_head_groups(d, push.lanes));
    std::size_t const items = d.tokens * push.lanes * push.groups;
    auto const groups =
        static_cast<std::uint32_t>(std::min<std::size_t>((items + workgroup - 1) / workgroup, r.max_groups()));
    std::uint64_t const threads = std::uint64_t{groups} * workgroup;
    r.check_loop_budget((items + threads - 1) / threads * (d.heads / push.groups + 8),
                        "rope of " + std::to_string(d.heads) + " heads");
    r.dispatch(shader, constants, {bx, bp, bf, by}, push, {groups});
}

}  // namespace rayo::vulkan::ops
