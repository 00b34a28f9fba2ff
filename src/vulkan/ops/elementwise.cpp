// The unary and binary families on Vulkan: shaders/unary.comp and binary.comp, the op a
// specialization constant, vec4 accesses where every operand's offset allows; f16 and bf16 tensors
// through their _element16 builds (16-bit storage), the type specialization constant 7.
#include <algorithm>
#include <array>

#include "dispatch/broadcast.hpp"
#include "dispatch/operand_checks.hpp"
#include "vulkan/ops/element_type.hpp"

namespace rayo::vulkan::ops {

namespace {

// Push constants of the element-wise shaders (shaders/elementwise_layout.glsl).
struct ElementwisePush {
    std::uint32_t n = 0;
    std::uint32_t a_offset = 0, b_offset = 0, out_offset = 0;  // in elements
    float a = 0.0f, b = 0.0f;
};

// Push constants of binary_broadcast.comp: the collapsed layout (dispatch/broadcast.hpp).
struct BroadcastPush {
    std::uint32_t n = 0;
    std::uint32_t a_offset = 0, b_offset = 0, out_offset = 0;       // in elements
    std::array<std::uint32_t, 3 * detail::max_view_rank> layout{};  // StridedLayout::packed(): dims, a's, b's strides
};

Support elementwise_supports(ShaderRunner const& r, Op op, Support s, OpViews const& v) {
    if (!s.native) return s;
    if (v.out[0].numel() > 0xffffffffu) return Support::no("vulkan: element-wise ops over 2^32 elements or more");
    return element_type_supported(r, op, v.in[0].dtype);
}

// out = a op b with broadcast operands (binary_broadcast.comp), one invocation per output element or vec4.
void record_broadcast(ShaderRunner& r, Op op, TensorView const& a, TensorView const& b, TensorView const& out) {
    std::size_t const n = out.numel();
    if (n == 0) return;
    std::uint32_t const workgroup = r.workgroup_size();
    std::size_t const size = bytes_for(out.dtype, 1);
    Binding const lhs = r.bind(a, a.span_bytes(), Access::read, "element-wise input");
    Binding const result = r.bind(out, n * size, Access::write, "element-wise output");
    Binding const rhs = r.bind(b, b.span_bytes(), Access::read, "element-wise input");
    TensorView const operands[] = {a, b};
    detail::StridedLayout const l = detail::collapse(out, operands);
    BroadcastPush push;
    push.n = static_cast<std::uint32_t>(n);
    push.a_offset = lhs.element_offset(size);
    push.b_offset = rhs.element_offset(size);
    push.out_offset = result.element_offset(size);
    push.layout = l.packed();
    // vec4s along the rows where every operand read along them starts on a vec4 (an operand
    // repeated along the row is one float, at any offset).
    std::size_t const last = l.rank - 1;
    bool const vec4 = l.inner() % 4 == 0 && push.out_offset % 4 == 0 &&
                      (l.strides[0][last] == 0 || push.a_offset % 4 == 0) &&
                      (l.strides[1][last] == 0 || push.b_offset % 4 == 0);
    SpecConstants constants{static_cast<std::uint32_t>(op), workgroup, static_cast<std::uint32_t>(l.rank),
                            vec4 ? 1u : 0u};
    Shader const shader =
        element_build(Shader::binary_broadcast, Shader::binary_broadcast_element16, out.dtype, constants);
    std::size_t const items = vec4 ? n / 4 : n;
    auto const groups =
        static_cast<std::uint32_t>(std::min<std::size_t>((items + workgroup - 1) / workgroup, r.max_groups()));
    r.dispatch(shader, constants, {lhs, result, rhs}, push, {groups});
}

// One dispatch of the unary or binary shader over out's elements: the binary shader reads `rhs`
// (or, scalar, a again, bound but not read).
void record(ShaderRunner& r, bool unary, Op op, bool scalar_rhs, TensorView const& a, TensorView const* rhs,
            TensorView const& out, float pa, float pb) {
    std::size_t const n = out.numel();
    if (n == 0) return;
    std::size_t const size = bytes_for(out.dtype, 1), bytes = n * size;
    std::uint32_t const workgroup = r.workgroup_size();
    Binding const in = r.bind(a, bytes, Access::read, "element-wise input");
    Binding const result = r.bind(out, bytes, Access::write, "element-wise output");
    Binding const second = rhs ? r.bind(*rhs, bytes, Access::read, "element-wise input") : in.untouched();
    ElementwisePush push;
    push.n = static_cast<std::uint32_t>(n);
    push.a_offset = in.element_offset(size);
    push.b_offset = second.element_offset(size);
    push.out_offset = result.element_offset(size);
    push.a = pa;
    push.b = pb;
    // Groups of 4 elements (16- or 8-byte accesses) where every operand starts on a multiple of 4
    // elements (allocations are aligned to 256 bytes at least); views elsewhere read elements.
    bool const vec4 = push.a_offset % 4 == 0 && push.out_offset % 4 == 0 && (!rhs || push.b_offset % 4 == 0);
    SpecConstants constants{static_cast<std::uint32_t>(op), workgroup, scalar_rhs ? 1u : 0u, vec4 ? 1u : 0u};
    Shader const shader = unary ? element_build(Shader::unary, Shader::unary_element16, out.dtype, constants)
                                : element_build(Shader::binary, Shader::binary_element16, out.dtype, constants);
    // One invocation per vec4 (or float), as many groups as that takes up to the device's limit;
    // the shaders loop with a grid stride over the rest.
    std::size_t const items = vec4 ? (n + 3) / 4 : n;
    auto const groups =
        static_cast<std::uint32_t>(std::min<std::size_t>((items + workgroup - 1) / workgroup, r.max_groups()));
    if (unary)
        r.dispatch(shader, constants, {in, result}, push, {groups});
    else
        r.dispatch(shader, constants, {in, result, second}, push, {groups});
}

}  // namespace

Support supports(ShaderRunner const& r, op::Unary const& d, OpViews const& v) {
    return elementwise_supports(r, d.op, detail::contiguous_floating("vulkan", d.op, v), v);
}

void run(ShaderRunner& r, op::Unary const& d, OpViews const& v) {
    record(r, true, d.op, false, v.in[0], nullptr, v.out[0], d.a, d.b);
}

Support supports(ShaderRunner const& r, op::Binary const& d, OpViews const& v) {
    return elementwise_supports(r, d.op, detail::elementwise_floating("vulkan", d.op, v), v);
}

void run(ShaderRunner& r, op::Binary const& d, OpViews const& v) {
    if (!d.scalar_rhs && !(v.in[0].is_contiguous() && v.in[1].is_contiguous()))
        return record_broadcast(r, d.op, v.in[0], v.in[1], v.out[0]);
    record(r, false, d.op, d.scalar_rhs, v.in[0], d.scalar_rhs ? nullptr : &v.in[1], v.out[0], d.scalar, 0.0f);
}

}  // namespace rayo::vulkan::ops
