// conv2d on Vulkan: shaders/conv2d_direct.comp, one output per invocation (f32, or f16 / bf16
// through its _element16 build), accumulated in f32.
#include <algorithm>
#include <cstdint>

#include "dispatch/operand_checks.hpp"
#include "vulkan/ops/element_type.hpp"
#include "vulkan/ops/ops.hpp"

namespace rayo::vulkan::ops {

namespace {

// Push constants of conv2d_direct.comp.
struct Conv2dPush {
    std::uint32_t total = 0;
    std::uint32_t c = 0, h = 0, w = 0, o = 0, kh = 0, kw = 0, oh = 0, ow = 0;
    std::uint32_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
    std::uint32_t cg = 0, og = 0;
    std::uint32_t x_offset = 0, w_offset = 0, b_offset = 0, y_offset = 0;
};
static_assert(sizeof(Conv2dPush) <= 128);

std::uint32_t u32(std::size_t v) { return static_cast<std::uint32_t>(v); }

}  // namespace

Support supports(ShaderRunner const& r, op::Conv2d const& d, OpViews const& v) {
    if (Support s = element_type_supported(r, Op::conv2d, v.out[0].dtype); !s.native) return s;
    if (!detail::all_contiguous(v)) return Support::no("vulkan: conv2d takes contiguous operands");
    for (auto const* views : {&v.in, &v.out})
        for (TensorView const& t : *views)
            if (t.present && t.numel() > 0xffffffffu) return Support::no("vulkan: conv2d of tensors of 2^32 elements or more");
    if (d.shape.n * d.shape.o * d.shape.oh * d.shape.ow > 0xffffffffu)
        return Support::no("vulkan: conv2d of outputs of 2^32 elements or more");
    return Support::yes();
}

void run(ShaderRunner& r, op::Conv2d const& d, OpViews const& v) {
    op::Conv2dShape const& s = d.shape;
    TensorView const &x = v.in[0], &w = v.in[1], &out = v.out[0];
    std::size_t const size = bytes_for(out.dtype, 1);
    Binding const bx = r.bind(x, x.bytes(), Access::read, "conv2d input");
    Binding const bw = r.bind(w, w.bytes(), Access::read, "conv2d weights");
    Binding const bb = d.has_bias ? r.bind(v.in[2], v.in[2].bytes(), Access::read, "conv2d bias") : bw.untouched();
    Binding const by = r.bind(out, out.bytes(), Access::write, "conv2d output");
    Conv2dPush push;
    push.total = u32(s.n * s.o * s.oh * s.ow);
    if (push.total == 0) return;
    push.c = u32(s.c), push.h = u32(s.h), push.w = u32(s.w), push.o = u32(s.o);
    push.kh = u32(s.kh), push.kw = u32(s.kw), push.oh = u32(s.oh), push.ow = u32(s.ow);
    push.stride_h = u32(s.stride_h), push.stride_w = u32(s.stride_w), push.pad_h = u32(s.pad_h), push.pad_w = u32(s.pad_w);
    push.dilation_h = u32(s.dilation_h), push.dilation_w = u32(s.dilation_w);
    push.cg = u32(s.c / s.groups), push.og = u32(s.o / s.groups);
    push.x_offset = bx.element_offset(size);
    push.w_offset = bw.element_offset(size);
    push.b_offset = d.has_bias ? bb.element_offset(size) : 0;
    push.y_offset = by.element_offset(size);
    std::uint32_t const workgroup = r.workgroup_size();
    SpecConstants constants{0u, workgroup, s.flip ? 1u : 0u, d.has_bias ? 1u : 0u};
    Shader const shader = element_build(Shader::conv2d_direct, Shader::conv2d_direct_element16, out.dtype, constants);
    auto const groups = u32(std::min<std::size_t>((push.total + workgroup - 1) / workgroup, r.max_groups()));
    r.dispatch(shader, constants, {bx, bw, bb, by}, push, {groups});
}

}  // namespace rayo::vulkan::ops
