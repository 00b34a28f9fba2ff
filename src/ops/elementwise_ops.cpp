// The unary and binary families, and dot, for f32, f16 and bf16 tensors.
#include <string>

#include "dispatch/broadcast.hpp"
#include "dispatch/dispatch.hpp"
#include "ops/floating_instantiations.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

void check_family(Op op, OpFamily expected) {
    if (family(op) != expected)
        throw Error(std::string(to_string(op)) + " is a " + std::string(to_string(family(op))) + " op, not a " +
                    std::string(to_string(expected)) + " op");
}

// The shape a op b has: a and b broadcast (rayo checks element types, devices, then shapes).
template <class T, class U>
Shape binary_shape(Op op, Tensor<T> const& a, Tensor<U> const& b) {
    detail::check_same_dtype(to_string(op), "a", a, "b", b);
    detail::check_same_device(to_string(op), a, b);
    if (a.shape() == b.shape()) return a.shape();
    return detail::broadcast_shapes(to_string(op), a.shape(), b.shape());
}

// t as an operand of an op whose result has shape `to` (t broadcasts to it).
template <class T>
detail::OpArg broadcast_arg(Tensor<T> const& t, Shape const& to) {
    detail::OpArg a = detail::arg(t);
    if (t.shape() != to) a.view = detail::broadcast_view(a.view, to.dims());
    return a;
}

}  // namespace

template <FloatingElement T, FloatingElement O>
void unary_into(Op op, Tensor<T> const& x, float a, float b, Tensor<O> const& out) {
    check_family(op, OpFamily::unary);
    detail::check_same_dtype(to_string(op), "x", x, "out", out);
    detail::check_out(to_string(op), out, x.shape(), x, true);
    detail::dispatch(x.device(), detail::op::Unary{op, a, b}, {detail::arg(x)}, {detail::arg(out)});
}

template <FloatingElement T>
Tensor<T> unary(Op op, Tensor<T> const& x, float a, float b) {
    check_family(op, OpFamily::unary);
    Tensor<T> out = Tensor<T>::empty(x.shape(), x.device());
    unary_into(op, x, a, b, out);
    return out;
}

template <FloatingElement T, FloatingElement U, FloatingElement O>
void binary_into(Op op, Tensor<T> const& a, Tensor<U> const& b, Tensor<O> const& out) {
    check_family(op, OpFamily::binary);
    Shape const shape = binary_shape(op, a, b);
    detail::check_same_dtype(to_string(op), "a", a, "out", out);
    // out may be an input of the result's shape (in place); an input it repeats may not alias it.
    detail::check_out(to_string(op), out, shape, a, a.shape() == shape);
    detail::check_out(to_string(op), out, shape, b, b.shape() == shape);
    detail::dispatch(a.device(), detail::op::Binary{op}, {broadcast_arg(a, shape), broadcast_arg(b, shape)},
                     {detail::arg(out)});
}

template <FloatingElement T, FloatingElement U>
Tensor<T> binary(Op op, Tensor<T> const& a, Tensor<U> const& b) {
    check_family(op, OpFamily::binary);
    Tensor<T> out = Tensor<T>::empty(binary_shape(op, a, b), a.device());
    binary_into(op, a, b, out);
    return out;
}

template <FloatingElement T, FloatingElement O>
void binary_into(Op op, Tensor<T> const& a, float s, Tensor<O> const& out) {
    check_family(op, OpFamily::binary);
    detail::check_same_dtype(to_string(op), "a", a, "out", out);
    detail::check_out(to_string(op), out, a.shape(), a, true);
    detail::dispatch(a.device(), detail::op::Binary{op, true, s}, {detail::arg(a)}, {detail::arg(out)});
}

template <FloatingElement T>
Tensor<T> binary(Op op, Tensor<T> const& a, float s) {
    check_family(op, OpFamily::binary);
    Tensor<T> out = Tensor<T>::empty(a.shape(), a.device());
    binary_into(op, a, s, out);
    return out;
}

namespace {

template <class T, class U>
void check_dot_operands(Tensor<T> const& a, Tensor<U> const& b) {
    detail::check_same_dtype("dot", "a", a, "b", b);
    detail::check_same_device("dot", a, b);
    detail::check_same_shape("dot", a, b);
}

}  // namespace

template <FloatingElement T, FloatingElement U>
void dot_into(Tensor<T> const& a, Tensor<U> const& b, FTensor const& out) {
    check_dot_operands(a, b);
    detail::check_out("dot", out, Shape{}, a, false);
    detail::check_out("dot", out, Shape{}, b, false);
    detail::dispatch(a.device(), detail::op::Dot{}, {detail::arg(a), detail::arg(b)}, {detail::arg(out)});
}

template <FloatingElement T, FloatingElement U>
FTensor dot(Tensor<T> const& a, Tensor<U> const& b) {
    check_dot_operands(a, b);
    FTensor out = FTensor::empty(Shape{}, a.device());
    dot_into(a, b, out);
    return out;
}

#define RAYO_INSTANTIATE_ONE_TYPE(T)                              \
    template Tensor<T> unary(Op, Tensor<T> const&, float, float); \
    template Tensor<T> binary(Op, Tensor<T> const&, float);
#define RAYO_INSTANTIATE_TWO_TYPES(T, U)                                            \
    template void unary_into(Op, Tensor<T> const&, float, float, Tensor<U> const&); \
    template Tensor<T> binary(Op, Tensor<T> const&, Tensor<U> const&);              \
    template void binary_into(Op, Tensor<T> const&, float, Tensor<U> const&);       \
    template FTensor dot(Tensor<T> const&, Tensor<U> const&);                       \
    template void dot_into(Tensor<T> const&, Tensor<U> const&, FTensor const&);
#define RAYO_INSTANTIATE_THREE_TYPES(T, U, O) \
    template void binary_into(Op, Tensor<T> const&, Tensor<U> const&, Tensor<O> const&);
RAYO_EACH_FLOATING(RAYO_INSTANTIATE_ONE_TYPE)
RAYO_EACH_FLOATING_PAIR(RAYO_INSTANTIATE_TWO_TYPES)
RAYO_EACH_FLOATING_TRIPLE(RAYO_INSTANTIATE_THREE_TYPES)
#undef RAYO_INSTANTIATE_ONE_TYPE
#undef RAYO_INSTANTIATE_TWO_TYPES
#undef RAYO_INSTANTIATE_THREE_TYPES

}  // namespace rayo
