// The unary and binary families, and dot.
#include <string>

#include "dispatch/broadcast.hpp"
#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

void check_family(Op op, OpFamily expected) {
    if (family(op) != expected)
        throw Error(std::string(to_string(op)) + " is a " + std::string(to_string(family(op))) + " op, not a " +
                    std::string(to_string(expected)) + " op");
}

void check_operands(Op op, FTensor const& a, FTensor const& b) {
    auto const name = to_string(op);
    detail::check_same_device(name, a, b);
    detail::check_same_shape(name, a, b);
}

// The shape a op b has: a and b broadcast (rayo checks devices first, then shapes).
Shape binary_shape(Op op, FTensor const& a, FTensor const& b) {
    detail::check_same_device(to_string(op), a, b);
    if (a.shape() == b.shape()) return a.shape();
    return detail::broadcast_shapes(to_string(op), a.shape(), b.shape());
}

// t as an operand of an op whose result has shape `to` (t broadcasts to it).
detail::OpArg broadcast_arg(FTensor const& t, Shape const& to) {
    detail::OpArg a = detail::arg(t);
    if (t.shape() != to) a.view = detail::broadcast_view(a.view, to.dims());
    return a;
}

}  // namespace

void unary_into(Op op, FTensor const& x, float a, float b, FTensor const& out) {
    check_family(op, OpFamily::unary);
    detail::check_out(to_string(op), out, x.shape(), x, true);
    detail::dispatch(x.device(), detail::op::Unary{op, a, b}, {detail::arg(x)}, {detail::arg(out)});
}

FTensor unary(Op op, FTensor const& x, float a, float b) {
    check_family(op, OpFamily::unary);
    FTensor out = FTensor::empty(x.shape(), x.device());
    unary_into(op, x, a, b, out);
    return out;
}

void binary_into(Op op, FTensor const& a, FTensor const& b, FTensor const& out) {
    check_family(op, OpFamily::binary);
    Shape const shape = binary_shape(op, a, b);
    // out may be an input of the result's shape (in place); an input it repeats may not alias it.
    detail::check_out(to_string(op), out, shape, a, a.shape() == shape);
    detail::check_out(to_string(op), out, shape, b, b.shape() == shape);
    detail::dispatch(a.device(), detail::op::Binary{op}, {broadcast_arg(a, shape), broadcast_arg(b, shape)},
                     {detail::arg(out)});
}

FTensor binary(Op op, FTensor const& a, FTensor const& b) {
    check_family(op, OpFamily::binary);
    FTensor out = FTensor::empty(binary_shape(op, a, b), a.device());
    binary_into(op, a, b, out);
    return out;
}

void binary_into(Op op, FTensor const& a, float s, FTensor const& out) {
    check_family(op, OpFamily::binary);
    detail::check_out(to_string(op), out, a.shape(), a, true);
    detail::dispatch(a.device(), detail::op::Binary{op, true, s}, {detail::arg(a)}, {detail::arg(out)});
}

FTensor binary(Op op, FTensor const& a, float s) {
    check_family(op, OpFamily::binary);
    FTensor out = FTensor::empty(a.shape(), a.device());
    binary_into(op, a, s, out);
    return out;
}

void dot_into(FTensor const& a, FTensor const& b, FTensor const& out) {
    check_operands(Op::dot, a, b);
    detail::check_out("dot", out, Shape{}, a, false);
    detail::check_out("dot", out, Shape{}, b, false);
    detail::dispatch(a.device(), detail::op::Dot{}, {detail::arg(a), detail::arg(b)}, {detail::arg(out)});
}

FTensor dot(FTensor const& a, FTensor const& b) {
    check_operands(Op::dot, a, b);
    FTensor out = FTensor::empty(Shape{}, a.device());
    dot_into(a, b, out);
    return out;
}

}  // namespace rayo
