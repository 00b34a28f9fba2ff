// cast on Vulkan: shaders/cast.comp, the element types specialization constants; 4 elements per
// invocation where the views are aligned to 4 elements, else one, 16-bit ones through 16-bit storage.
#include <algorithm>
#include <cstdint>

#include "vulkan/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"

namespace rayo::vulkan::ops {

namespace {

// Push constants of cast.comp.
struct CastPush {
    std::uint32_t n = 0;
    std::uint32_t in_offset = 0, out_offset = 0;  // in elements
};

}  // namespace

Support supports(ShaderRunner const& r, op::Cast const&, OpViews const& v) {
    if (!detail::castable(v.in[0].dtype) || !detail::castable(v.out[0].dtype))
        return Support::no("vulkan: cast takes f32, f16, bf16 and i32");
    if (!v.in[0].is_contiguous() || !v.out[0].is_contiguous())
        return Support::no("vulkan: cast takes contiguous tensors");
    if (!r.physical().storage_buffer_16bit)
        return Support::no("vulkan: cast needs 16-bit storage (storageBuffer16BitAccess), which this device lacks");
    if (v.out[0].numel() > 0xffffffffu) return Support::no("vulkan: cast of 2^32 elements or more");
    return Support::yes();
}

void run(ShaderRunner& r, op::Cast const&, OpViews const& v) {
    TensorView const &in = v.in[0], &out = v.out[0];
    std::size_t const n = out.numel();
    if (n == 0) return;
    std::size_t const in_size = bytes_for(in.dtype, 1), out_size = bytes_for(out.dtype, 1);
    Binding const bi = r.bind(in, in.bytes(), Access::read, "cast input");
    Binding const bo = r.bind(out, out.bytes(), Access::write, "cast output");
    CastPush const push{static_cast<std::uint32_t>(n), bi.element_offset(in_size), bo.element_offset(out_size)};
    std::uint32_t const workgroup = r.workgroup_size();
    // Groups of 4 elements where both views start on a multiple of 4 elements.
    bool const vec4 = push.in_offset % 4 == 0 && push.out_offset % 4 == 0;
    SpecConstants const constants{static_cast<std::uint32_t>(in.dtype), workgroup,
                                  static_cast<std::uint32_t>(out.dtype), vec4 ? 1u : 0u};
    std::size_t const items = vec4 ? (n + 3) / 4 : n;
    auto const groups =
        static_cast<std::uint32_t>(std::min<std::size_t>((items + workgroup - 1) / workgroup, r.max_groups()));
    r.dispatch(Shader::cast, constants, {bi, bo}, push, {groups});
}

}  // namespace rayo::vulkan::ops
