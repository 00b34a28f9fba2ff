// matmul and linear, for f32, f16 and bf16 operands (f32 results, f32 accumulation).
#include <string>
#include <vector>

#include "dispatch/broadcast.hpp"
#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

// A batched matmul: the product's shape, the result's, and the batch axes collapsed to the fewest
// (dispatch/broadcast.hpp) with a's and b's steps between matrices (0 where one is shared).
struct MatmulPlan {
    detail::op::MatmulShape shape;
    Shape result;
    detail::StridedLayout batches;
};

Shape leading(Shape const& s) { return Shape(std::vector<std::int64_t>(s.dims().begin(), s.dims().end() - 2)); }

template <class T>
MatmulPlan matmul_plan(Tensor<T> const& a, Tensor<T> const& b, MatmulOptions options) {
    detail::check_same_device("matmul", a, b);
    std::string const operands = "a " + a.shape().to_string() + " and b " + b.shape().to_string();
    if (a.rank() < 2 || b.rank() < 2)
        throw ShapeError("matmul needs operands of 2 or more axes ([..., m, k] and [..., k, n]), got " + operands);
    auto const dim = [](Tensor<T> const& t, std::size_t from_end) { return t.shape()[t.rank() - from_end]; };
    std::int64_t const m = dim(a, 2), k = dim(a, 1);
    std::int64_t const b_k = options.transpose_b ? dim(b, 1) : dim(b, 2),
                       n = options.transpose_b ? dim(b, 2) : dim(b, 1);
    if (k != b_k)
        throw ShapeError("matmul: inner dimensions differ: a " + a.shape().to_string() + " has " + std::to_string(k) +
                         " columns, b " + b.shape().to_string() + " has " + std::to_string(b_k) +
                         (options.transpose_b ? " columns (transpose_b)" : " rows"));
    Shape const a_batch = leading(a.shape()), b_batch = leading(b.shape());
    if (a_batch.rank() > detail::max_view_rank || b_batch.rank() > detail::max_view_rank)
        throw ShapeError("matmul: up to " + std::to_string(detail::max_view_rank) + " batch axes, got " + operands);
    Shape batch = a_batch;
    if (a_batch != b_batch) {
        try {
            batch = detail::broadcast_shapes("matmul", a_batch, b_batch);
        } catch (ShapeError const& e) {
            throw ShapeError("matmul: the batch axes of " + operands + " do not broadcast (" + e.what() + ")");
        }
    }
    MatmulPlan plan;
    plan.shape = {static_cast<std::size_t>(m), static_cast<std::size_t>(n), static_cast<std::size_t>(k),
                  options.transpose_b};
    plan.shape.tf32 = options.allow_tf32;
    std::vector<std::int64_t> dims(batch.dims().begin(), batch.dims().end());
    dims.push_back(m);
    dims.push_back(n);
    plan.result = Shape(std::move(dims));
    // The batch axes in units of whole matrices, then in elements.
    auto const steps = [&](Shape const& s, std::size_t matrix) {
        detail::TensorView v =
            detail::broadcast_view(detail::contiguous_view(0, 0, DType::f32, s.dims()), batch.dims());
        for (std::size_t i = 0; i < v.rank; ++i) v.strides[i] *= static_cast<std::int64_t>(matrix);
        return v;
    };
    detail::TensorView const views[] = {steps(a_batch, plan.shape.m * plan.shape.k),
                                        steps(b_batch, plan.shape.k * plan.shape.n)};
    plan.batches = detail::collapse(detail::contiguous_view(0, 0, DType::f32, batch.dims()), views);
    return plan;
}

// The span of one operand in a dispatch: `count` matrices of `matrix` elements, `step` apart.
template <class T>
detail::OpArg matrices(Tensor<T> const& t, std::size_t first, std::size_t count, std::size_t step, std::size_t matrix) {
    detail::OpArg arg = detail::arg(t);
    auto const span = static_cast<std::int64_t>(count ? (count - 1) * step + matrix : 0);
    arg.view = detail::contiguous_view(arg.view.buffer, arg.view.offset + bytes_for(dtype_of<T>, first), dtype_of<T>,
                                       {&span, 1});
    return arg;
}

// One dispatch per run of the innermost collapsed batch axis (one in all unless the batch axes
// broadcast in a pattern that does not collapse).
template <class T>
void run_batched(MatmulPlan const& plan, Tensor<T> const& a, Tensor<T> const& b, FTensor const& out) {
    detail::StridedLayout const& l = plan.batches;
    detail::op::MatmulShape shape = plan.shape;
    shape.batch = l.inner();
    // One product has no step (and none to align).
    shape.a_batch = shape.batch > 1 ? l.strides[0][l.rank - 1] : 0;
    shape.b_batch = shape.batch > 1 ? l.strides[1][l.rank - 1] : 0;
    std::size_t const a_matrix = shape.m * shape.k, b_matrix = shape.k * shape.n, out_matrix = shape.m * shape.n;
    if (out_matrix == 0) return;
    for (std::size_t first = 0; first < l.numel(); first += shape.batch)
        detail::dispatch(a.device(), detail::op::Matmul{Op::matmul, shape},
                         {matrices(a, l.offset(0, first), shape.batch, shape.a_batch, a_matrix),
                          matrices(b, l.offset(1, first), shape.batch, shape.b_batch, b_matrix)},
                         {matrices(out, first * out_matrix, shape.batch, out_matrix, out_matrix)});
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
void run_linear(Op op, detail::op::MatmulShape s, Tensor<A> const& a, Tensor<B> const& b, FTensor const& out) {
    detail::dispatch(a.device(), detail::op::Matmul{op, s}, {detail::arg(a), detail::arg(b)}, {detail::arg(out)});
}

}  // namespace

template <FloatingElement T>
void matmul_into(Tensor<T> const& a, Tensor<T> const& b, FTensor const& out, MatmulOptions options) {
    MatmulPlan const plan = matmul_plan(a, b, options);
    detail::check_out("matmul", out, plan.result, a, false);
    detail::check_out("matmul", out, plan.result, b, false);
    run_batched(plan, a, b, out);
}

template <FloatingElement T>
FTensor matmul(Tensor<T> const& a, Tensor<T> const& b, MatmulOptions options) {
    MatmulPlan const plan = matmul_plan(a, b, options);
    FTensor out = FTensor::empty(plan.result, a.device());
    run_batched(plan, a, b, out);
    return out;
}

template <LinearWeight W>
void linear_into(FTensor const& x, Tensor<W> const& w, FTensor const& out) {
    auto const [s, result] = linear_shape(x, w);
    detail::check_out("linear", out, result, x, false);
    detail::check_out("linear", out, result, w, false);
    run_linear(Op::linear, s, x, w, out);
}

template <LinearWeight W>
FTensor linear(FTensor const& x, Tensor<W> const& w) {
    auto const [s, result] = linear_shape(x, w);
    FTensor out = FTensor::empty(result, x.device());
    run_linear(Op::linear, s, x, w, out);
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

// The bias goes with the product to the backend: the GEMMs and Vulkan's K-quant GEMVs add it as they
// write, the CPU's and CUDA's K-quant kernels right after.
template <LinearWeight W>
void linear_into(FTensor const& x, Tensor<W> const& w, FTensor const& bias, FTensor const& out) {
    auto const [s, result] = linear_shape(x, w);
    check_bias(x, s.n, bias);
    detail::check_out("linear", out, result, x, false);
    detail::check_out("linear", out, result, w, false);
    detail::check_out("linear", out, result, bias, false);
    detail::dispatch(x.device(), detail::op::Matmul{Op::linear, s}, {detail::arg(x), detail::arg(w), detail::arg(bias)},
                     {detail::arg(out)});
}

template <LinearWeight W>
FTensor linear(FTensor const& x, Tensor<W> const& w, FTensor const& bias) {
    auto const [s, result] = linear_shape(x, w);
    check_bias(x, s.n, bias);
    FTensor out = FTensor::empty(result, x.device());
    linear_into(x, w, bias, out);
    return out;
}

// ---- linear of a formed input (swiglu_linear, rms_norm_linear)

namespace {

// x (swiglu's gate) and its second operand (up, or rms_norm's gain) checked, then linear with the
// input formed from them, in one op.
template <LinearWeight W>
void formed_linear_into(detail::op::LinearInput input, float eps, FTensor const& x, FTensor const& second,
                        Tensor<W> const& w, FTensor const* bias, FTensor const& out) {
    bool const swiglu = input == detail::op::LinearInput::swiglu;
    std::string const name = swiglu ? "swiglu_linear" : "rms_norm_linear";
    auto const [s, result] = linear_shape(x, w);
    detail::check_same_device(name, x, second);
    if (swiglu && second.shape() != x.shape())
        throw ShapeError(name + ": up has shape " + second.shape().to_string() + ", expected gate's " +
                         x.shape().to_string());
    if (!swiglu && second.shape() != Shape{static_cast<std::int64_t>(s.k)})
        throw ShapeError(name + ": gain has shape " + second.shape().to_string() + ", expected [" +
                         std::to_string(s.k) + "] to match the last axis of " + x.shape().to_string());
    if (!swiglu && !(eps >= 0.0f)) throw Error(name + ": eps must be >= 0, got " + std::to_string(eps));
    if (bias) check_bias(x, s.n, *bias);
    for (FTensor const* in : {&x, &second, bias})
        if (in) detail::check_out(name, out, result, *in, false);
    detail::check_out(name, out, result, w, false);
    detail::dispatch(
        x.device(), detail::op::Matmul{Op::linear, s, input, eps},
        {detail::arg(x), detail::arg(w), bias ? detail::arg(*bias) : detail::no_arg(), detail::arg(second)},
        {detail::arg(out)});
}

}  // namespace

template <LinearWeight W>
FTensor swiglu_linear(FTensor const& gate, FTensor const& up, Tensor<W> const& w) {
    FTensor out = FTensor::empty(linear_shape(gate, w).second, gate.device());
    formed_linear_into(detail::op::LinearInput::swiglu, 0.0f, gate, up, w, nullptr, out);
    return out;
}
template <LinearWeight W>
void swiglu_linear_into(FTensor const& gate, FTensor const& up, Tensor<W> const& w, FTensor const& out) {
    formed_linear_into(detail::op::LinearInput::swiglu, 0.0f, gate, up, w, nullptr, out);
}
template <LinearWeight W>
void swiglu_linear_into(FTensor const& gate, FTensor const& up, Tensor<W> const& w, FTensor const& bias,
                        FTensor const& out) {
    formed_linear_into(detail::op::LinearInput::swiglu, 0.0f, gate, up, w, &bias, out);
}
template <LinearWeight W>
FTensor rms_norm_linear(FTensor const& x, FTensor const& gain, float eps, Tensor<W> const& w) {
    FTensor out = FTensor::empty(linear_shape(x, w).second, x.device());
    formed_linear_into(detail::op::LinearInput::rms_norm, eps, x, gain, w, nullptr, out);
    return out;
}
template <LinearWeight W>
void rms_norm_linear_into(FTensor const& x, FTensor const& gain, float eps, Tensor<W> const& w, FTensor const& out) {
    formed_linear_into(detail::op::LinearInput::rms_norm, eps, x, gain, w, nullptr, out);
}
template <LinearWeight W>
void rms_norm_linear_into(FTensor const& x, FTensor const& gain, float eps, Tensor<W> const& w, FTensor const& bias,
                          FTensor const& out) {
    formed_linear_into(detail::op::LinearInput::rms_norm, eps, x, gain, w, &bias, out);
}

#define RAYO_INSTANTIATE_FORMED_LINEAR(W)                                                                        \
    template FTensor swiglu_linear(FTensor const&, FTensor const&, Tensor<W> const&);                            \
    template void swiglu_linear_into(FTensor const&, FTensor const&, Tensor<W> const&, FTensor const&);          \
    template void swiglu_linear_into(FTensor const&, FTensor const&, Tensor<W> const&, FTensor const&,           \
                                     FTensor const&);                                                            \
    template FTensor rms_norm_linear(FTensor const&, FTensor const&, float, Tensor<W> const&);                   \
    template void rms_norm_linear_into(FTensor const&, FTensor const&, float, Tensor<W> const&, FTensor const&); \
    template void rms_norm_linear_into(FTensor const&, FTensor const&, float, Tensor<W> const&, FTensor const&,  \
                                       FTensor const&);
RAYO_INSTANTIATE_FORMED_LINEAR(float)
RAYO_INSTANTIATE_FORMED_LINEAR(half)
RAYO_INSTANTIATE_FORMED_LINEAR(bfloat16)
RAYO_INSTANTIATE_FORMED_LINEAR(q4_k)
RAYO_INSTANTIATE_FORMED_LINEAR(q6_k)
RAYO_INSTANTIATE_FORMED_LINEAR(q8_0)
RAYO_INSTANTIATE_FORMED_LINEAR(q4_0)
RAYO_INSTANTIATE_FORMED_LINEAR(q5_k)
#undef RAYO_INSTANTIATE_FORMED_LINEAR

// ---- products rounded into 16-bit outputs: the f32 product, then cast

namespace {

// `product` run into an f32 tensor of out's shape on out's device, then rounded into out.
template <class O, class Product>
void rounded_into(Tensor<O> const& out, Shape const& result, Product&& product) {
    FTensor const f32 = FTensor::empty(result, out.device());
    product(f32);
    cast_into(f32, out);
}

}  // namespace

template <FloatingElement T, HalfPrecision O>
void matmul_into(Tensor<T> const& a, Tensor<T> const& b, Tensor<O> const& out, MatmulOptions options) {
    MatmulPlan const plan = matmul_plan(a, b, options);
    detail::check_out("matmul", out, plan.result, a, false);
    detail::check_out("matmul", out, plan.result, b, false);
    rounded_into(out, plan.result, [&](FTensor const& f32) { run_batched(plan, a, b, f32); });
}

template <LinearWeight W, HalfPrecision O>
void linear_into(FTensor const& x, Tensor<W> const& w, Tensor<O> const& out) {
    auto const [s, result] = linear_shape(x, w);
    detail::check_out("linear", out, result, x, false);
    detail::check_out("linear", out, result, w, false);
    rounded_into(out, result, [&](FTensor const& f32) { linear_into(x, w, f32); });
}

template <LinearWeight W, HalfPrecision O>
void linear_into(FTensor const& x, Tensor<W> const& w, FTensor const& bias, Tensor<O> const& out) {
    auto const [s, result] = linear_shape(x, w);
    check_bias(x, s.n, bias);
    detail::check_out("linear", out, result, x, false);
    detail::check_out("linear", out, result, w, false);
    detail::check_out("linear", out, result, bias, false);
    rounded_into(out, result, [&](FTensor const& f32) { linear_into(x, w, bias, f32); });
}

#define RAYO_INSTANTIATE_ROUNDED(O)                                                                               \
    template void matmul_into(Tensor<float> const&, Tensor<float> const&, Tensor<O> const&, MatmulOptions);       \
    template void matmul_into(Tensor<half> const&, Tensor<half> const&, Tensor<O> const&, MatmulOptions);         \
    template void matmul_into(Tensor<bfloat16> const&, Tensor<bfloat16> const&, Tensor<O> const&, MatmulOptions); \
    RAYO_INSTANTIATE_ROUNDED_LINEAR(float, O)                                                                     \
    RAYO_INSTANTIATE_ROUNDED_LINEAR(half, O)                                                                      \
    RAYO_INSTANTIATE_ROUNDED_LINEAR(bfloat16, O)                                                                  \
    RAYO_INSTANTIATE_ROUNDED_LINEAR(q4_k, O)                                                                      \
    RAYO_INSTANTIATE_ROUNDED_LINEAR(q6_k, O)                                                                      \
    RAYO_INSTANTIATE_ROUNDED_LINEAR(q8_0, O)                                                                      \
    RAYO_INSTANTIATE_ROUNDED_LINEAR(q4_0, O)                                                                      \
    RAYO_INSTANTIATE_ROUNDED_LINEAR(q5_k, O)
#define RAYO_INSTANTIATE_ROUNDED_LINEAR(W, O)                                      \
    template void linear_into(FTensor const&, Tensor<W> const&, Tensor<O> const&); \
    template void linear_into(FTensor const&, Tensor<W> const&, FTensor const&, Tensor<O> const&);
RAYO_INSTANTIATE_ROUNDED(half)
RAYO_INSTANTIATE_ROUNDED(bfloat16)
#undef RAYO_INSTANTIATE_ROUNDED_LINEAR
#undef RAYO_INSTANTIATE_ROUNDED

template FTensor matmul(Tensor<float> const&, Tensor<float> const&, MatmulOptions);
template FTensor matmul(Tensor<half> const&, Tensor<half> const&, MatmulOptions);
template FTensor matmul(Tensor<bfloat16> const&, Tensor<bfloat16> const&, MatmulOptions);
template void matmul_into(Tensor<float> const&, Tensor<float> const&, FTensor const&, MatmulOptions);
template void matmul_into(Tensor<half> const&, Tensor<half> const&, FTensor const&, MatmulOptions);
template void matmul_into(Tensor<bfloat16> const&, Tensor<bfloat16> const&, FTensor const&, MatmulOptions);
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
template FTensor linear(FTensor const&, Tensor<q8_0> const&);
template void linear_into(FTensor const&, Tensor<q8_0> const&, FTensor const&);
template FTensor linear(FTensor const&, Tensor<q8_0> const&, FTensor const&);
template void linear_into(FTensor const&, Tensor<q8_0> const&, FTensor const&, FTensor const&);
template FTensor linear(FTensor const&, Tensor<q4_0> const&);
template void linear_into(FTensor const&, Tensor<q4_0> const&, FTensor const&);
template FTensor linear(FTensor const&, Tensor<q4_0> const&, FTensor const&);
template void linear_into(FTensor const&, Tensor<q4_0> const&, FTensor const&, FTensor const&);
template FTensor linear(FTensor const&, Tensor<q5_k> const&);
template void linear_into(FTensor const&, Tensor<q5_k> const&, FTensor const&);
template FTensor linear(FTensor const&, Tensor<q5_k> const&, FTensor const&);
template void linear_into(FTensor const&, Tensor<q5_k> const&, FTensor const&, FTensor const&);

}  // namespace rayo
