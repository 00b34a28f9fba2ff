// max_pool2d and avg_pool2d on Vulkan: shaders/pool2d.comp, one invocation per output element; f16
// and bf16 through the _element16 build.
#include <algorithm>
#include <cstdint>
#include <string>

#include "dispatch/operand_checks.hpp"
#include "vulkan/ops/element_type.hpp"
#include "vulkan/ops/ops.hpp"

namespace rayo::vulkan::ops {

namespace {

// Mirrors the push constants of shaders/pool2d.comp.
struct PoolPush {
    std::uint32_t total = 0, h = 0, w = 0, oh = 0, ow = 0, kh = 0, kw = 0;
    std::uint32_t stride_h = 0, stride_w = 0, pad_h = 0, pad_w = 0;
    std::uint32_t x_offset = 0, y_offset = 0;
};

}  // namespace

Support supports(ShaderRunner const& r, op::Pool2d const& d, OpViews const& v) {
    Support s = detail::contiguous_floating("vulkan", d.op, v);
    if (!s.native) return s;
    if (v.in[0].numel() > 0x7fffffffu || v.out[0].numel() > 0xffffffffu)
        return Support::no("vulkan: a pool over 2^31 elements or more");
    return element_type_supported(r, d.op, v.in[0].dtype);
}

void run(ShaderRunner& r, op::Pool2d const& d, OpViews const& v) {
    TensorView const &x = v.in[0], &out = v.out[0];
    std::size_t const size = bytes_for(x.dtype, 1);
    Binding const bx = r.bind(x, x.numel() * size, Access::read, "pool input");
    Binding const by = r.bind(out, out.numel() * size, Access::write, "pool output");
    auto u32 = [](std::size_t n) { return static_cast<std::uint32_t>(n); };
    PoolPush const push{u32(out.numel()),
                        u32(d.h),
                        u32(d.w),
                        u32(d.oh),
                        u32(d.ow),
                        u32(d.kh),
                        u32(d.kw),
                        u32(d.stride_h),
                        u32(d.stride_w),
                        u32(d.pad_h),
                        u32(d.pad_w),
                        bx.element_offset(size),
                        by.element_offset(size)};
    if (push.total == 0) return;
    std::uint32_t const workgroup = r.workgroup_size();
    SpecConstants constants{static_cast<std::uint32_t>(d.op), workgroup, d.count_include_pad ? 1u : 0u};
    Shader const shader = element_build(Shader::pool2d, Shader::pool2d_element16, x.dtype, constants);
    auto const groups =
        static_cast<std::uint32_t>(std::min<std::size_t>((push.total + workgroup - 1) / workgroup, r.max_groups()));
    std::uint64_t const threads = std::uint64_t{groups} * workgroup;
    r.check_loop_budget((push.total + threads - 1) / threads * (d.kh * d.kw + 8),
                        "a pool of " + std::to_string(d.kh) + "×" + std::to_string(d.kw) + " windows");
    r.dispatch(shader, constants, {bx, by}, push, {groups});
}

}  // namespace rayo::vulkan::ops
