// The layout family on Vulkan: shaders/copy_strided.comp over the collapsed views.
#include <algorithm>
#include <array>
#include <cstdint>

#include "dispatch/broadcast.hpp"
#include "vulkan/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"

namespace rayo::vulkan::ops {

namespace {

// Push constants of copy_strided.comp.
struct CopyPush {
    std::uint32_t n = 0;
    std::uint32_t in_offset = 0, out_offset = 0;  // in elements
    std::array<std::uint32_t, 3 * detail::max_view_rank> layout{};  // StridedLayout::packed(): dims, in's, out's strides
};


}  // namespace

Support supports(ShaderRunner const& r, op::Copy const&, OpViews const& v) {
    if (!detail::castable(v.in[0].dtype) || v.in[0].dtype != v.out[0].dtype)
        return Support::no("vulkan: copy takes f32, f16, bf16 or i32 views of one type");
    if (!r.physical().storage_buffer_16bit)
        return Support::no("vulkan: copy needs 16-bit storage (storageBuffer16BitAccess), which this device lacks");
    if (v.in[0].span_bytes() > 0xffffffffu || v.out[0].span_bytes() > 0xffffffffu)
        return Support::no("vulkan: copy of views spanning 4 GiB or more");
    return Support::yes();
}

void run(ShaderRunner& r, op::Copy const&, OpViews const& v) {
    TensorView const &in = v.in[0], &out = v.out[0];
    std::size_t const n = out.numel();
    if (n == 0) return;
    std::size_t const element = bytes_for(out.dtype, 1);
    Binding const bi = r.bind(in, in.span_bytes(), Access::read, "copy input");
    Binding const bo = r.bind(out, out.span_bytes(), Access::write, "copy output");
    TensorView const views[] = {in, out};
    detail::StridedLayout const l = detail::collapse(out, views);
    CopyPush push;
    push.n = static_cast<std::uint32_t>(n);
    push.in_offset = bi.element_offset(element);
    push.out_offset = bo.element_offset(element);
    push.layout = l.packed();
    std::uint32_t const workgroup = r.workgroup_size();
    SpecConstants const constants{0u, workgroup, static_cast<std::uint32_t>(l.rank), element == 4 ? 1u : 0u};
    auto const groups = static_cast<std::uint32_t>(std::min<std::size_t>((n + workgroup - 1) / workgroup, r.max_groups()));
    r.dispatch(Shader::copy_strided, constants, {bi, bo}, push, {groups});
}

}  // namespace rayo::vulkan::ops
