// matmul and linear, for f32, f16 and bf16 operands (f32 results, f32 accumulation).
#include <string>
#include <vector>

#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

template <class T>
detail::op::MatmulShape matmul_shape(Tensor<T> const& a, Tensor<T> const& b) {
    detail::check_same_device("matmul", a, b);
    if (a.rank() != 2 || b.rank() != 2)
        throw ShapeError("matmul needs 2-D operands, got a " + a.shape().to_string() + " and b " + b.shape().to_string());
    if (a.shape()[1] != b.shape()[0])
        throw ShapeError("matmul: inner dimensions differ: a " + a.shape().to_string() + " has " +
                         std::to_string(a.shape()[1]) + " columns, b " + b.shape().to_string() + " has " +
                         std::to_string(b.shape()[0]) + " rows");
    return {static_cast<std::size_t>(a.shape()[0]), static_cast<std::size_t>(b.shape()[1]),
            static_cast<std::size_t>(a.shape()[1]), false};
}

template <class W>
std::pair<detail::op::MatmulShape, Shape> linear_shape(FTensor const& x, Tensor<W> const& w) {
    detail::check_same_device("linear", x, w);
    if (w.rank() != 2) throw ShapeError("linear: w must be 2-D [out, in], got " + w.shape().to_string());
    if (x.rank() == 0) throw ShapeError("linear: x must have at least one axis, got a rank-0 tensor");
    std::int64_t const in = x.shape()[x.rank() - 1];
    if (in != w.shape()[1])
        throw ShapeError("linear: x " + x.shape().to_string() + " has " + std::to_string(in) + " features, w " +
                         w.shape().to_string() + " expects " + std::to_string(w.shape()[1]));
    std::vector<std::int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
    dims.back() = w.shape()[0];
    std::size_t rows = 1;  // the leading axes of x, flattened
    for (std::size_t i = 0; i + 1 < x.rank(); ++i) rows *= static_cast<std::size_t>(x.shape()[i]);
    return {{rows, static_cast<std::size_t>(w.shape()[0]), static_cast<std::size_t>(in), true}, Shape(std::move(dims))};
}

template <class A, class B>
void run_matmul(Op op, detail::op::MatmulShape s, Tensor<A> const& a, Tensor<B> const& b, FTensor const& out) {
    detail::dispatch(a.device(), detail::op::Matmul{op, s}, {detail::arg(a), detail::arg(b)}, {detail::arg(out)});
}

}  // namespace

template <FloatingElement T>
void matmul_into(Tensor<T> const& a, Tensor<T> const& b, FTensor const& out) {
    auto const s = matmul_shape(a, b);
    Shape const result{s.m, s.n};
    detail::check_out("matmul", out, result, a, false);
    detail::check_out("matmul", out, result, b, false);
    run_matmul(Op::matmul, s, a, b, out);
}

template <FloatingElement T>
FTensor matmul(Tensor<T> const& a, Tensor<T> const& b) {
    auto const s = matmul_shape(a, b);
    FTensor out = FTensor::empty(Shape{s.m, s.n}, a.device());
    run_matmul(Op::matmul, s, a, b, out);
    return out;
}

template <LinearWeight W>
void linear_into(FTensor const& x, Tensor<W> const& w, FTensor const& out) {
    auto const [s, result] = linear_shape(x, w);
    detail::check_out("linear", out, result, x, false);
    detail::check_out("linear", out, result, w, false);
    run_matmul(Op::linear, s, x, w, out);
}

template <LinearWeight W>
FTensor linear(FTensor const& x, Tensor<W> const& w) {
    auto const [s, result] = linear_shape(x, w);
    FTensor out = FTensor::empty(result, x.device());
    run_matmul(Op::linear, s, x, w, out);
    return out;
}

namespace {

// bias must be [n], one value per row of w, on x's device.
void check_bias(FTensor const& x, std::size_t n, FTensor const& bias) {
    detail::check_same_device("linear", x, bias);
    if (bias.shape() != Shape{n})
        throw ShapeError("linear: bias has shape " + bias.shape().to_string() + ", expected [" + std::to_string(n) +
                         "] (one value per row of w)");
}

}  // namespace

// The bias is added by the broadcast add, in place on the product.
template <LinearWeight W>
void linear_into(FTensor const& x, Tensor<W> const& w, FTensor const& bias, FTensor const& out) {
    auto const [s, result] = linear_shape(x, w);
    check_bias(x, s.n, bias);
    detail::check_out("linear", out, result, x, false);
    detail::check_out("linear", out, result, w, false);
    detail::check_out("linear", out, result, bias, false);
    run_matmul(Op::linear, s, x, w, out);
    add_into(out, bias, out);
}

template <LinearWeight W>
FTensor linear(FTensor const& x, Tensor<W> const& w, FTensor const& bias) {
    auto const [s, result] = linear_shape(x, w);
    check_bias(x, s.n, bias);
    FTensor out = FTensor::empty(result, x.device());
    linear_into(x, w, bias, out);
    return out;
}

template FTensor matmul(Tensor<float> const&, Tensor<float> const&);
template FTensor matmul(Tensor<half> const&, Tensor<half> const&);
template FTensor matmul(Tensor<bfloat16> const&, Tensor<bfloat16> const&);
template void matmul_into(Tensor<float> const&, Tensor<float> const&, FTensor const&);
template void matmul_into(Tensor<half> const&, Tensor<half> const&, FTensor const&);
template void matmul_into(Tensor<bfloat16> const&, Tensor<bfloat16> const&, FTensor const&);
template FTensor linear(FTensor const&, Tensor<float> const&);
template FTensor linear(FTensor const&, Tensor<half> const&);
template FTensor linear(FTensor const&, Tensor<bfloat16> const&);
template void linear_into(FTensor const&, Tensor<float> const&, FTensor const&);
template void linear_into(FTensor const&, Tensor<half> const&, FTensor const&);
template void linear_into(FTensor const&, Tensor<bfloat16> const&, FTensor const&);
template FTensor linear(FTensor const&, Tensor<q4_k> const&);
template FTensor linear(FTensor const&, Tensor<q6_k> const&);
template void linear_into(FTensor const&, Tensor<q4_k> const&, FTensor const&);
template void linear_into(FTensor const&, Tensor<q6_k> const&, FTensor const&);
template FTensor linear(FTensor const&, Tensor<float> const&, FTensor const&);
template void linear_into(FTensor const&, Tensor<float> const&, FTensor const&, FTensor const&);
template FTensor linear(FTensor const&, Tensor<half> const&, FTensor const&);
template void linear_into(FTensor const&, Tensor<half> const&, FTensor const&, FTensor const&);
template FTensor linear(FTensor const&, Tensor<bfloat16> const&, FTensor const&);
template void linear_into(FTensor const&, Tensor<bfloat16> const&, FTensor const&, FTensor const&);
template FTensor linear(FTensor const&, Tensor<q4_k> const&, FTensor const&);
template void linear_into(FTensor const&, Tensor<q4_k> const&, FTensor const&, FTensor const&);
template FTensor linear(FTensor const&, Tensor<q6_k> const&, FTensor const&);
template void linear_into(FTensor const&, Tensor<q6_k> const&, FTensor const&, FTensor const&);

}  // namespace rayo
