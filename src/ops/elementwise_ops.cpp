// Element-wise and binary ops.
#include <string>

#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

using detail::BinaryOp;
using detail::UnaryOp;
using detail::UnaryParams;

namespace {

void unary_into(UnaryOp op, UnaryParams params, FTensor const& x, FTensor const& out) {
    auto const name = detail::to_string(op);
    detail::check_out(name, out, x.shape(), x, true);
    detail::dispatch(name, x.device(), {detail::arg(x)}, {detail::arg(out)},
                     [&](detail::Backend& b, auto in, auto o) { b.unary(op, params, in[0], o[0]); });
}

FTensor unary(UnaryOp op, UnaryParams params, FTensor const& x) {
    FTensor out = FTensor::empty(x.shape(), x.device());
    unary_into(op, params, x, out);
    return out;
}

void binary_into(BinaryOp op, FTensor const& a, FTensor const& b, FTensor const& out) {
    auto const name = detail::to_string(op);
    detail::check_same_device(name, a, b);
    detail::check_same_shape(name, a, b);
    detail::check_out(name, out, a.shape(), a, true);
    detail::check_out(name, out, a.shape(), b, true);
    detail::dispatch(name, a.device(), {detail::arg(a), detail::arg(b)}, {detail::arg(out)},
                     [&](detail::Backend& be, auto in, auto o) { be.binary(op, in[0], in[1], o[0]); });
}

FTensor binary(BinaryOp op, FTensor const& a, FTensor const& b) {
    detail::check_same_device(detail::to_string(op), a, b);
    detail::check_same_shape(detail::to_string(op), a, b);
    FTensor out = FTensor::empty(a.shape(), a.device());
    binary_into(op, a, b, out);
    return out;
}

void scalar_into(BinaryOp op, FTensor const& a, float s, FTensor const& out) {
    auto const name = detail::to_string(op);
    detail::check_out(name, out, a.shape(), a, true);
    detail::dispatch(name, a.device(), {detail::arg(a)}, {detail::arg(out)},
                     [&](detail::Backend& be, auto in, auto o) { be.binary_scalar(op, in[0], s, o[0]); });
}

FTensor scalar(BinaryOp op, FTensor const& a, float s) {
    FTensor out = FTensor::empty(a.shape(), a.device());
    scalar_into(op, a, s, out);
    return out;
}

}  // namespace

FTensor relu(FTensor const& x) { return unary(UnaryOp::relu, {}, x); }
void relu(FTensor const& x, FTensor const& out) { unary_into(UnaryOp::relu, {}, x, out); }
FTensor leaky_relu(FTensor const& x, float alpha) { return unary(UnaryOp::leaky_relu, {alpha}, x); }
void leaky_relu(FTensor const& x, float alpha, FTensor const& out) { unary_into(UnaryOp::leaky_relu, {alpha}, x, out); }
FTensor elu(FTensor const& x, float alpha) { return unary(UnaryOp::elu, {alpha}, x); }
void elu(FTensor const& x, float alpha, FTensor const& out) { unary_into(UnaryOp::elu, {alpha}, x, out); }
FTensor sigmoid(FTensor const& x) { return unary(UnaryOp::sigmoid, {}, x); }
void sigmoid(FTensor const& x, FTensor const& out) { unary_into(UnaryOp::sigmoid, {}, x, out); }
FTensor tanh(FTensor const& x) { return unary(UnaryOp::tanh, {}, x); }
void tanh(FTensor const& x, FTensor const& out) { unary_into(UnaryOp::tanh, {}, x, out); }
FTensor silu(FTensor const& x) { return unary(UnaryOp::silu, {}, x); }
void silu(FTensor const& x, FTensor const& out) { unary_into(UnaryOp::silu, {}, x, out); }
FTensor gelu(FTensor const& x, Gelu form) {
    return unary(form == Gelu::tanh ? UnaryOp::gelu_tanh : UnaryOp::gelu_erf, {}, x);
}
void gelu(FTensor const& x, Gelu form, FTensor const& out) {
    unary_into(form == Gelu::tanh ? UnaryOp::gelu_tanh : UnaryOp::gelu_erf, {}, x, out);
}
FTensor clip(FTensor const& x, float lo, float hi) { return unary(UnaryOp::clip, {lo, hi}, x); }
void clip(FTensor const& x, float lo, float hi, FTensor const& out) { unary_into(UnaryOp::clip, {lo, hi}, x, out); }
FTensor exp(FTensor const& x) { return unary(UnaryOp::exp, {}, x); }
void exp(FTensor const& x, FTensor const& out) { unary_into(UnaryOp::exp, {}, x, out); }
FTensor log(FTensor const& x) { return unary(UnaryOp::log, {}, x); }
void log(FTensor const& x, FTensor const& out) { unary_into(UnaryOp::log, {}, x, out); }
FTensor sqrt(FTensor const& x) { return unary(UnaryOp::sqrt, {}, x); }
void sqrt(FTensor const& x, FTensor const& out) { unary_into(UnaryOp::sqrt, {}, x, out); }
FTensor abs(FTensor const& x) { return unary(UnaryOp::abs, {}, x); }
void abs(FTensor const& x, FTensor const& out) { unary_into(UnaryOp::abs, {}, x, out); }
FTensor neg(FTensor const& x) { return unary(UnaryOp::neg, {}, x); }
void neg(FTensor const& x, FTensor const& out) { unary_into(UnaryOp::neg, {}, x, out); }

FTensor add(FTensor const& a, FTensor const& b) { return binary(BinaryOp::add, a, b); }
void add(FTensor const& a, FTensor const& b, FTensor const& out) { binary_into(BinaryOp::add, a, b, out); }
FTensor add(FTensor const& a, float s) { return scalar(BinaryOp::add, a, s); }
void add(FTensor const& a, float s, FTensor const& out) { scalar_into(BinaryOp::add, a, s, out); }
FTensor sub(FTensor const& a, FTensor const& b) { return binary(BinaryOp::sub, a, b); }
void sub(FTensor const& a, FTensor const& b, FTensor const& out) { binary_into(BinaryOp::sub, a, b, out); }
FTensor sub(FTensor const& a, float s) { return scalar(BinaryOp::sub, a, s); }
void sub(FTensor const& a, float s, FTensor const& out) { scalar_into(BinaryOp::sub, a, s, out); }
FTensor mul(FTensor const& a, FTensor const& b) { return binary(BinaryOp::mul, a, b); }
void mul(FTensor const& a, FTensor const& b, FTensor const& out) { binary_into(BinaryOp::mul, a, b, out); }
FTensor mul(FTensor const& a, float s) { return scalar(BinaryOp::mul, a, s); }
void mul(FTensor const& a, float s, FTensor const& out) { scalar_into(BinaryOp::mul, a, s, out); }
FTensor div(FTensor const& a, FTensor const& b) { return binary(BinaryOp::div, a, b); }
void div(FTensor const& a, FTensor const& b, FTensor const& out) { binary_into(BinaryOp::div, a, b, out); }
FTensor div(FTensor const& a, float s) { return scalar(BinaryOp::div, a, s); }
void div(FTensor const& a, float s, FTensor const& out) { scalar_into(BinaryOp::div, a, s, out); }
FTensor scale(FTensor const& x, float s) { return scalar(BinaryOp::mul, x, s); }
void scale(FTensor const& x, float s, FTensor const& out) { scalar_into(BinaryOp::mul, x, s, out); }

void dot(FTensor const& a, FTensor const& b, FTensor const& out) {
    detail::check_same_device("dot", a, b);
    detail::check_same_shape("dot", a, b);
    detail::check_out("dot", out, Shape{}, a, false);
    detail::check_out("dot", out, Shape{}, b, false);
    detail::dispatch("dot", a.device(), {detail::arg(a), detail::arg(b)}, {detail::arg(out)},
                     [&](detail::Backend& be, auto in, auto o) { be.dot(in[0], in[1], o[0]); });
}
FTensor dot(FTensor const& a, FTensor const& b) {
    detail::check_same_device("dot", a, b);
    detail::check_same_shape("dot", a, b);
    FTensor out = FTensor::empty(Shape{}, a.device());
    dot(a, b, out);
    return out;
}

}  // namespace rayo
