// The layout family on Vulkan: shaders/copy_strided.comp over the collapsed views; copies that
// transpose matrices through shaders/transpose_tiled.comp.
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
    std::array<std::uint32_t, 3 * detail::max_view_rank>
        layout{};  // StridedLayout::packed(): dims, in's, out's strides
};

// Push constants of transpose_tiled.comp.
struct TransposePush {
    std::uint32_t rows = 0, cols = 0, in_stride = 0, out_stride = 0, in_batch = 0, out_batch = 0;
    std::uint32_t in_offset = 0, out_offset = 0;  // in elements
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
    SpecConstants const wide{0u, 0u, element == 4 ? 1u : 0u};
    if (auto const t = detail::as_transposition(l);
        t && r.limits().maxComputeWorkGroupInvocations >= 256 && (t->cols + 31) / 32 <= r.max_groups() &&
        (t->rows + 31) / 32 <= r.max_groups() && t->batch <= r.limits().maxComputeWorkGroupCount[2]) {
        auto const u32 = [](std::size_t v) { return static_cast<std::uint32_t>(v); };
        TransposePush const push{
            u32(t->rows),     u32(t->cols),      u32(t->in_stride),          u32(t->out_stride),
            u32(t->in_batch), u32(t->out_batch), bi.element_offset(element), bo.element_offset(element)};
        r.dispatch(Shader::transpose_tiled, wide, {bi, bo}, push,
                   {u32((t->cols + 31) / 32), u32((t->rows + 31) / 32), u32(t->batch)});
        return;
    }
    CopyPush push;
    push.n = static_cast<std::uint32_t>(n);
    push.in_offset = bi.element_offset(element);
    push.out_offset = bo.element_offset(element);
    push.layout = l.packed();
    std::uint32_t const workgroup = r.workgroup_size();
    SpecConstants const constants{0u, workgroup, static_cast<std::uint32_t>(l.rank), element == 4 ? 1u : 0u};
    auto const groups =
        static_cast<std::uint32_t>(std::min<std::size_t>((n + workgroup - 1) / workgroup, r.max_groups()));
    r.dispatch(Shader::copy_strided, constants, {bi, bo}, push, {groups});
}

}  // namespace rayo::vulkan::ops
