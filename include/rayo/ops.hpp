// Operations. Each runs on its inputs' device (all inputs must share one) and has two forms: f(...)
// returns a new tensor, f_into(..., out) writes into `out` (a tensor of the result's shape on the
// same device; it may be one of the inputs for element-wise ops). The _into suffix keeps an output
// from ever being taken for an operand. Inputs are validated before anything
// is written, so a failed call leaves every tensor as it was.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "rayo/export.hpp"
#include "rayo/op_table.hpp"
#include "rayo/quant.hpp"
#include "rayo/tensor.hpp"

namespace rayo {

using FTensor = Tensor<float>;

// ---- element-wise, binary, softmax, norms and reductions: f32, f16 and bf16 -------------------
// T is float, half or bfloat16 (FloatingElement). Each value is widened to f32, the op computed as
// for f32, and the result rounded to nearest even into the tensor's type (NaN and ±Inf kept);
// reductions return f32. Every tensor of one call holds one T (a reduction's f32 result aside):
// another type is a rayo::DTypeError naming the op and both types, raised before anything is
// written; rayo::cast converts.

// ---- element-wise ------------------------------------------------------------------------------
// Any unary op of rayo::op_table by its code, with the parameters the table names for it (alpha;
// lo and hi). The named functions below are this with the op filled in. A code of another family
// is a rayo::Error.
template <FloatingElement T>
RAYO_API Tensor<T> unary(Op op, Tensor<T> const& x, float a = 0.0f, float b = 0.0f);
template <FloatingElement T, FloatingElement O>
RAYO_API void unary_into(Op op, Tensor<T> const& x, float a, float b, Tensor<O> const& out);

template <FloatingElement T>
Tensor<T> relu(Tensor<T> const& x) {
    return unary(Op::relu, x);
}
template <FloatingElement T, FloatingElement O>
void relu_into(Tensor<T> const& x, Tensor<O> const& out) {
    unary_into(Op::relu, x, 0.0f, 0.0f, out);
}
template <FloatingElement T>
Tensor<T> leaky_relu(Tensor<T> const& x, float alpha = 0.01f) {
    return unary(Op::leaky_relu, x, alpha);
}
template <FloatingElement T, FloatingElement O>
void leaky_relu_into(Tensor<T> const& x, float alpha, Tensor<O> const& out) {
    unary_into(Op::leaky_relu, x, alpha, 0.0f, out);
}
template <FloatingElement T>
Tensor<T> elu(Tensor<T> const& x, float alpha = 1.0f) {
    return unary(Op::elu, x, alpha);
}
template <FloatingElement T, FloatingElement O>
void elu_into(Tensor<T> const& x, float alpha, Tensor<O> const& out) {
    unary_into(Op::elu, x, alpha, 0.0f, out);
}
template <FloatingElement T>
Tensor<T> sigmoid(Tensor<T> const& x) {
    return unary(Op::sigmoid, x);
}
template <FloatingElement T, FloatingElement O>
void sigmoid_into(Tensor<T> const& x, Tensor<O> const& out) {
    unary_into(Op::sigmoid, x, 0.0f, 0.0f, out);
}
template <FloatingElement T>
Tensor<T> tanh(Tensor<T> const& x) {
    return unary(Op::tanh, x);
}
template <FloatingElement T, FloatingElement O>
void tanh_into(Tensor<T> const& x, Tensor<O> const& out) {
    unary_into(Op::tanh, x, 0.0f, 0.0f, out);
}
template <FloatingElement T>
Tensor<T> silu(Tensor<T> const& x) {
    return unary(Op::silu, x);
}
template <FloatingElement T, FloatingElement O>
void silu_into(Tensor<T> const& x, Tensor<O> const& out) {
    unary_into(Op::silu, x, 0.0f, 0.0f, out);
}
template <FloatingElement T>
Tensor<T> swish(Tensor<T> const& x) {
    return silu(x);
}
template <FloatingElement T, FloatingElement O>
void swish_into(Tensor<T> const& x, Tensor<O> const& out) {
    silu_into(x, out);
}

// gelu(x) = x·Φ(x). `exact` evaluates Φ with erf (Op::gelu); `tanh` is the approximation
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) (Op::gelu_tanh).
enum class Gelu { exact, tanh };
template <FloatingElement T>
Tensor<T> gelu(Tensor<T> const& x, Gelu form = Gelu::exact) {
    return unary(form == Gelu::tanh ? Op::gelu_tanh : Op::gelu, x);
}
template <FloatingElement T, FloatingElement O>
void gelu_into(Tensor<T> const& x, Gelu form, Tensor<O> const& out) {
    unary_into(form == Gelu::tanh ? Op::gelu_tanh : Op::gelu, x, 0.0f, 0.0f, out);
}

// min(max(x, lo), hi), as torch.clamp (lo > hi gives hi); NaN stays NaN.
template <FloatingElement T>
Tensor<T> clip(Tensor<T> const& x, float lo, float hi) {
    return unary(Op::clip, x, lo, hi);
}
template <FloatingElement T, FloatingElement O>
void clip_into(Tensor<T> const& x, float lo, float hi, Tensor<O> const& out) {
    unary_into(Op::clip, x, lo, hi, out);
}
template <FloatingElement T>
Tensor<T> exp(Tensor<T> const& x) {
    return unary(Op::exp, x);
}
template <FloatingElement T, FloatingElement O>
void exp_into(Tensor<T> const& x, Tensor<O> const& out) {
    unary_into(Op::exp, x, 0.0f, 0.0f, out);
}
template <FloatingElement T>
Tensor<T> log(Tensor<T> const& x) {
    return unary(Op::log, x);
}
template <FloatingElement T, FloatingElement O>
void log_into(Tensor<T> const& x, Tensor<O> const& out) {
    unary_into(Op::log, x, 0.0f, 0.0f, out);
}
template <FloatingElement T>
Tensor<T> sqrt(Tensor<T> const& x) {
    return unary(Op::sqrt, x);
}
template <FloatingElement T, FloatingElement O>
void sqrt_into(Tensor<T> const& x, Tensor<O> const& out) {
    unary_into(Op::sqrt, x, 0.0f, 0.0f, out);
}
template <FloatingElement T>
Tensor<T> abs(Tensor<T> const& x) {
    return unary(Op::abs, x);
}
template <FloatingElement T, FloatingElement O>
void abs_into(Tensor<T> const& x, Tensor<O> const& out) {
    unary_into(Op::abs, x, 0.0f, 0.0f, out);
}
template <FloatingElement T>
Tensor<T> neg(Tensor<T> const& x) {
    return unary(Op::neg, x);
}
template <FloatingElement T, FloatingElement O>
void neg_into(Tensor<T> const& x, Tensor<O> const& out) {
    unary_into(Op::neg, x, 0.0f, 0.0f, out);
}

// ---- binary: tensors that broadcast (NumPy's rules, up to 8 axes), or a scalar on the right ----
// Any binary op of rayo::op_table by its code; the named functions below call these. a, b and out
// hold one element type (U or O another: DTypeError).
template <FloatingElement T, FloatingElement U>
RAYO_API Tensor<T> binary(Op op, Tensor<T> const& a, Tensor<U> const& b);
template <FloatingElement T, FloatingElement U, FloatingElement O>
RAYO_API void binary_into(Op op, Tensor<T> const& a, Tensor<U> const& b, Tensor<O> const& out);
template <FloatingElement T>
RAYO_API Tensor<T> binary(Op op, Tensor<T> const& a, float s);
template <FloatingElement T, FloatingElement O>
RAYO_API void binary_into(Op op, Tensor<T> const& a, float s, Tensor<O> const& out);

template <FloatingElement T, FloatingElement U>
Tensor<T> add(Tensor<T> const& a, Tensor<U> const& b) {
    return binary(Op::add, a, b);
}
template <FloatingElement T, FloatingElement U, FloatingElement O>
void add_into(Tensor<T> const& a, Tensor<U> const& b, Tensor<O> const& out) {
    binary_into(Op::add, a, b, out);
}
template <FloatingElement T>
Tensor<T> add(Tensor<T> const& a, float s) {
    return binary(Op::add, a, s);
}
template <FloatingElement T, FloatingElement O>
void add_into(Tensor<T> const& a, float s, Tensor<O> const& out) {
    binary_into(Op::add, a, s, out);
}
template <FloatingElement T, FloatingElement U>
Tensor<T> sub(Tensor<T> const& a, Tensor<U> const& b) {
    return binary(Op::sub, a, b);
}
template <FloatingElement T, FloatingElement U, FloatingElement O>
void sub_into(Tensor<T> const& a, Tensor<U> const& b, Tensor<O> const& out) {
    binary_into(Op::sub, a, b, out);
}
template <FloatingElement T>
Tensor<T> sub(Tensor<T> const& a, float s) {
    return binary(Op::sub, a, s);
}
template <FloatingElement T, FloatingElement O>
void sub_into(Tensor<T> const& a, float s, Tensor<O> const& out) {
    binary_into(Op::sub, a, s, out);
}
template <FloatingElement T, FloatingElement U>
Tensor<T> mul(Tensor<T> const& a, Tensor<U> const& b) {
    return binary(Op::mul, a, b);
}
template <FloatingElement T, FloatingElement U, FloatingElement O>
void mul_into(Tensor<T> const& a, Tensor<U> const& b, Tensor<O> const& out) {
    binary_into(Op::mul, a, b, out);
}
template <FloatingElement T>
Tensor<T> mul(Tensor<T> const& a, float s) {
    return binary(Op::mul, a, s);
}
template <FloatingElement T, FloatingElement O>
void mul_into(Tensor<T> const& a, float s, Tensor<O> const& out) {
    binary_into(Op::mul, a, s, out);
}
template <FloatingElement T, FloatingElement U>
Tensor<T> div(Tensor<T> const& a, Tensor<U> const& b) {
    return binary(Op::div, a, b);
}
template <FloatingElement T, FloatingElement U, FloatingElement O>
void div_into(Tensor<T> const& a, Tensor<U> const& b, Tensor<O> const& out) {
    binary_into(Op::div, a, b, out);
}
template <FloatingElement T>
Tensor<T> div(Tensor<T> const& a, float s) {
    return binary(Op::div, a, s);
}
template <FloatingElement T, FloatingElement O>
void div_into(Tensor<T> const& a, float s, Tensor<O> const& out) {
    binary_into(Op::div, a, s, out);
}
// The larger / smaller of a and b (NaN if either is NaN; maximum(+0, -0) = +0, minimum = -0), as
// torch.maximum / torch.minimum.
template <FloatingElement T, FloatingElement U>
Tensor<T> maximum(Tensor<T> const& a, Tensor<U> const& b) {
    return binary(Op::maximum, a, b);
}
template <FloatingElement T, FloatingElement U, FloatingElement O>
void maximum_into(Tensor<T> const& a, Tensor<U> const& b, Tensor<O> const& out) {
    binary_into(Op::maximum, a, b, out);
}
template <FloatingElement T>
Tensor<T> maximum(Tensor<T> const& a, float s) {
    return binary(Op::maximum, a, s);
}
template <FloatingElement T, FloatingElement O>
void maximum_into(Tensor<T> const& a, float s, Tensor<O> const& out) {
    binary_into(Op::maximum, a, s, out);
}
template <FloatingElement T, FloatingElement U>
Tensor<T> minimum(Tensor<T> const& a, Tensor<U> const& b) {
    return binary(Op::minimum, a, b);
}
template <FloatingElement T, FloatingElement U, FloatingElement O>
void minimum_into(Tensor<T> const& a, Tensor<U> const& b, Tensor<O> const& out) {
    binary_into(Op::minimum, a, b, out);
}
template <FloatingElement T>
Tensor<T> minimum(Tensor<T> const& a, float s) {
    return binary(Op::minimum, a, s);
}
template <FloatingElement T, FloatingElement O>
void minimum_into(Tensor<T> const& a, float s, Tensor<O> const& out) {
    binary_into(Op::minimum, a, s, out);
}
// silu(a)·b, computed in f32 and rounded once: a SwiGLU feed-forward's gate applied to its up
// projection in one pass (Llama's down(swiglu(gate(x), up(x)))).
template <FloatingElement T, FloatingElement U>
Tensor<T> swiglu(Tensor<T> const& a, Tensor<U> const& b) {
    return binary(Op::swiglu, a, b);
}
template <FloatingElement T, FloatingElement U, FloatingElement O>
void swiglu_into(Tensor<T> const& a, Tensor<U> const& b, Tensor<O> const& out) {
    binary_into(Op::swiglu, a, b, out);
}
template <FloatingElement T>
Tensor<T> swiglu(Tensor<T> const& a, float s) {
    return binary(Op::swiglu, a, s);
}
template <FloatingElement T, FloatingElement O>
void swiglu_into(Tensor<T> const& a, float s, Tensor<O> const& out) {
    binary_into(Op::swiglu, a, s, out);
}
template <FloatingElement T>
Tensor<T> scale(Tensor<T> const& x, float s) {
    return binary(Op::mul, x, s);
}
template <FloatingElement T, FloatingElement O>
void scale_into(Tensor<T> const& x, float s, Tensor<O> const& out) {
    binary_into(Op::mul, x, s, out);
}
// Sum of a·b over all elements (same shape, one element type); an f32 rank-0 tensor.
template <FloatingElement T, FloatingElement U>
RAYO_API FTensor dot(Tensor<T> const& a, Tensor<U> const& b);
template <FloatingElement T, FloatingElement U>
RAYO_API void dot_into(Tensor<T> const& a, Tensor<U> const& b, FTensor const& out);

// ---- softmax along the last axis (axis must name it: -1 or rank-1) ---------------------------
template <FloatingElement T>
RAYO_API Tensor<T> softmax(Tensor<T> const& x, int axis = -1);
template <FloatingElement T, FloatingElement O>
RAYO_API void softmax_into(Tensor<T> const& x, int axis, Tensor<O> const& out);
template <FloatingElement T>
RAYO_API Tensor<T> log_softmax(Tensor<T> const& x, int axis = -1);
template <FloatingElement T, FloatingElement O>
RAYO_API void log_softmax_into(Tensor<T> const& x, int axis, Tensor<O> const& out);

// ---- reductions: over everything (rank-0 result) or along one axis -------------------------------
// Sums accumulate in double per block, so large tensors keep float accuracy. max/min propagate NaN;
// argmax/argmin give the first index of the extreme value (a NaN counts as the extreme). The
// results are f32 (i64 indices) whatever x's floating type.
template <FloatingElement T>
RAYO_API FTensor sum(Tensor<T> const& x);
template <FloatingElement T>
RAYO_API void sum_into(Tensor<T> const& x, FTensor const& out);
template <FloatingElement T>
RAYO_API FTensor sum(Tensor<T> const& x, int axis, bool keepdim = false);
template <FloatingElement T>
RAYO_API void sum_into(Tensor<T> const& x, int axis, bool keepdim, FTensor const& out);
template <FloatingElement T>
RAYO_API FTensor mean(Tensor<T> const& x);
template <FloatingElement T>
RAYO_API void mean_into(Tensor<T> const& x, FTensor const& out);
template <FloatingElement T>
RAYO_API FTensor mean(Tensor<T> const& x, int axis, bool keepdim = false);
template <FloatingElement T>
RAYO_API void mean_into(Tensor<T> const& x, int axis, bool keepdim, FTensor const& out);
template <FloatingElement T>
RAYO_API FTensor max(Tensor<T> const& x);
template <FloatingElement T>
RAYO_API void max_into(Tensor<T> const& x, FTensor const& out);
template <FloatingElement T>
RAYO_API FTensor max(Tensor<T> const& x, int axis, bool keepdim = false);
template <FloatingElement T>
RAYO_API void max_into(Tensor<T> const& x, int axis, bool keepdim, FTensor const& out);
template <FloatingElement T>
RAYO_API FTensor min(Tensor<T> const& x);
template <FloatingElement T>
RAYO_API void min_into(Tensor<T> const& x, FTensor const& out);
template <FloatingElement T>
RAYO_API FTensor min(Tensor<T> const& x, int axis, bool keepdim = false);
template <FloatingElement T>
RAYO_API void min_into(Tensor<T> const& x, int axis, bool keepdim, FTensor const& out);
template <FloatingElement T>
RAYO_API Tensor<std::int64_t> argmax(Tensor<T> const& x);
template <FloatingElement T>
RAYO_API void argmax_into(Tensor<T> const& x, Tensor<std::int64_t> const& out);
template <FloatingElement T>
RAYO_API Tensor<std::int64_t> argmax(Tensor<T> const& x, int axis, bool keepdim = false);
template <FloatingElement T>
RAYO_API void argmax_into(Tensor<T> const& x, int axis, bool keepdim, Tensor<std::int64_t> const& out);
template <FloatingElement T>
RAYO_API Tensor<std::int64_t> argmin(Tensor<T> const& x);
template <FloatingElement T>
RAYO_API void argmin_into(Tensor<T> const& x, Tensor<std::int64_t> const& out);
template <FloatingElement T>
RAYO_API Tensor<std::int64_t> argmin(Tensor<T> const& x, int axis, bool keepdim = false);
template <FloatingElement T>
RAYO_API void argmin_into(Tensor<T> const& x, int axis, bool keepdim, Tensor<std::int64_t> const& out);

// ---- matrices ------------------------------------------------------------------------------------
// How matmul reads b, and how exact an f32 product must be.
struct MatmulOptions {
    // b holds [..., n, k]: the product is a·bᵀ, read in place with no transposed copy (attention's
    // q·kᵀ, a linear layer's weights).
    bool transpose_b = false;
    // f32 × f32 may run on the tensor cores in TF32, as PyTorch's allow_tf32 permits: each operand
    // keeps its sign, exponent and top 10 mantissa bits (a relative error of up to 2^-10 per
    // operand), the products are summed in f32. CUDA on Hopper (sm_90) takes it, 8-9x the exact
    // f32 rate on large products (docs/performance.md); CPU, Vulkan and older GPUs compute exactly.
    bool allow_tf32 = false;
};
// a[..., m, k] · b[..., k, n] -> f32 [..., m, n]: one matrix product for each index of the leading
// (batch) axes, which broadcast by NumPy's rules ([b, h, m, k]·[b, h, k, n], [h, m, k]·[k, n]); 2-D
// operands are one product. f16 and bf16 inputs are accumulated in f32.
template <FloatingElement T>
RAYO_API FTensor matmul(Tensor<T> const& a, Tensor<T> const& b, MatmulOptions options = {});
template <FloatingElement T>
RAYO_API void matmul_into(Tensor<T> const& a, Tensor<T> const& b, FTensor const& out, MatmulOptions options = {});
// The 16-bit float types a product may be rounded into.
template <class T>
concept HalfPrecision = std::same_as<T, half> || std::same_as<T, bfloat16>;
// The product rounded into an f16 or bf16 out (to nearest even): computed in f32 as above, then
// rounded as cast does.
template <FloatingElement T, HalfPrecision O>
RAYO_API void matmul_into(Tensor<T> const& a, Tensor<T> const& b, Tensor<O> const& out, MatmulOptions options = {});
// Weight types of linear: f32, f16, bf16, and the GGUF block types q8_0, q4_0, q4_k, q5_k and q6_k.
template <class W>
concept QuantWeight = std::same_as<W, q4_k> || std::same_as<W, q6_k> || std::same_as<W, q8_0> ||
    std::same_as<W, q4_0> || std::same_as<W, q5_k>;
template <class W>
concept LinearWeight = FloatingElement<W> || QuantWeight<W>;

// x[..., in] · w[out, in]ᵀ -> f32 [..., out]: the leading axes of x are batch axes. Block-quantized
// weights (whose rows must be whole blocks) are decoded exactly (as dequantize does) panel by panel
// and multiplied in f32.
template <LinearWeight W>
RAYO_API FTensor linear(FTensor const& x, Tensor<W> const& w);
template <LinearWeight W>
RAYO_API void linear_into(FTensor const& x, Tensor<W> const& w, FTensor const& out);
// x·wᵀ + bias, bias [out] (one value per row of w) added to every row of the product: in the GPU
// GEMMs' epilogue for f32, f16 and bf16 weights, as a separate add for block-quantized weights.
template <LinearWeight W>
RAYO_API FTensor linear(FTensor const& x, Tensor<W> const& w, FTensor const& bias);
template <LinearWeight W>
RAYO_API void linear_into(FTensor const& x, Tensor<W> const& w, FTensor const& bias, FTensor const& out);
// Both forms rounded into an f16 or bf16 out, as matmul_into does.
template <LinearWeight W, HalfPrecision O>
RAYO_API void linear_into(FTensor const& x, Tensor<W> const& w, Tensor<O> const& out);
template <LinearWeight W, HalfPrecision O>
RAYO_API void linear_into(FTensor const& x, Tensor<W> const& w, FTensor const& bias, Tensor<O> const& out);
// linear of an input formed in the same op, as a decode step's feed-forward and projections take
// it: swiglu_linear(gate, up, w) = linear(swiglu(gate, up), w) and rms_norm_linear(x, gain, eps,
// w) = linear(rms_norm(x, gain, eps), w), each with an optional bias. One op: a backend forms the
// input inside the product's kernel where it has one (CUDA's one-row K-quant GEMV), else into a
// temporary of its own just before it, so they run inside rayo::capture like any op. f32 operands;
// up has gate's shape, gain is [in]. Counted as linear in rayo::stats().
template <LinearWeight W>
RAYO_API FTensor swiglu_linear(FTensor const& gate, FTensor const& up, Tensor<W> const& w);
template <LinearWeight W>
RAYO_API void swiglu_linear_into(FTensor const& gate, FTensor const& up, Tensor<W> const& w, FTensor const& out);
template <LinearWeight W>
RAYO_API void swiglu_linear_into(FTensor const& gate, FTensor const& up, Tensor<W> const& w, FTensor const& bias,
                                 FTensor const& out);
template <LinearWeight W>
RAYO_API FTensor rms_norm_linear(FTensor const& x, FTensor const& gain, float eps, Tensor<W> const& w);
template <LinearWeight W>
RAYO_API void rms_norm_linear_into(FTensor const& x, FTensor const& gain, float eps, Tensor<W> const& w,
                                   FTensor const& out);
template <LinearWeight W>
RAYO_API void rms_norm_linear_into(FTensor const& x, FTensor const& gain, float eps, Tensor<W> const& w,
                                   FTensor const& bias, FTensor const& out);

// ---- element types -------------------------------------------------------------------------------
// The element types cast converts between.
template <class T>
concept CastElement =
    std::same_as<T, float> || std::same_as<T, half> || std::same_as<T, bfloat16> || std::same_as<T, std::int32_t>;

// x's values as To, on x's device: floats round to nearest even (overflow to ±Inf), NaN and ±Inf
// stay; to i32, values truncate toward zero and saturate at INT32_MIN / INT32_MAX, NaN gives 0;
// from i32, values round to nearest even. cast<T>(x) of x's own type is a copy.
template <CastElement To, CastElement From>
RAYO_API Tensor<To> cast(Tensor<From> const& x);
template <CastElement To, CastElement From>
RAYO_API void cast_into(Tensor<From> const& x, Tensor<To> const& out);

// ---- layout: new contiguous tensors from other arrangements of x's elements ----------------------
// T: float, half, bfloat16 or int32_t (CastElement). At most 8 axes.
// x with its axes in the order `dims` (a permutation of 0..rank-1): result axis i is x's axis dims[i].
template <CastElement T>
RAYO_API Tensor<T> permute(Tensor<T> const& x, std::vector<int> const& dims);
template <CastElement T>
RAYO_API void permute_into(Tensor<T> const& x, std::vector<int> const& dims, Tensor<T> const& out);
// x with axes a and b swapped (negative axes count from the end).
template <CastElement T>
RAYO_API Tensor<T> transpose(Tensor<T> const& x, int a, int b);
// x repeated to `shape`, which it broadcasts to (NumPy's rules): [n] to [m, n], [m, 1] to [m, n].
template <CastElement T>
RAYO_API Tensor<T> expand(Tensor<T> const& x, Shape const& shape);
// `length` entries of axis `axis` from `start`: a view sharing x's storage when axis is 0 (as
// slice), a new tensor otherwise.
template <CastElement T>
RAYO_API Tensor<T> narrow(Tensor<T> const& x, int axis, std::int64_t start, std::int64_t length);
// The tensors joined along `axis`; every other axis must match, and all sit on one device.
template <CastElement T>
RAYO_API Tensor<T> concat(std::vector<Tensor<T>> const& tensors, int axis);
// dst's elements set to src's (one shape and device; dst may be a view into a larger tensor, such
// as one step's rows of a preallocated KV cache: cache.slice(pos, pos + 1)). They may not overlap.
template <CastElement T>
RAYO_API void copy_into(Tensor<T> const& src, Tensor<T> const& dst);

// ---- gathers: entries picked by ids, a Tensor<int32_t> on the table's device ---------------------
// An id outside the table is a rayo::IndexError naming it and its position in ids: the CPU raises
// it before writing anything; a GPU never reads out of bounds, writes zeros for that entry and
// raises the error at the device's next host read (to_vector, to(cpu)) or synchronize().

// Table types of embedding: the floats and the GGUF block types of linear's weights.
template <class W>
concept EmbeddingTable = FloatingElement<W> || QuantWeight<W>;
// What embedding of a table of W gives: W itself for the floats, f32 for the block types (rows
// decoded exactly as dequantize does).
template <EmbeddingTable W>
using embedding_result_t = std::conditional_t<FloatingElement<W>, W, float>;

// table [rows, dim], ids of any shape -> [ids..., dim], row ids[i] of the table for each id: a
// model's token embeddings (llama.cpp's get_rows, torch.nn.functional.embedding).
template <EmbeddingTable W>
RAYO_API Tensor<embedding_result_t<W>> embedding(Tensor<W> const& table, Tensor<std::int32_t> const& ids);
template <EmbeddingTable W>
RAYO_API void embedding_into(Tensor<W> const& table, Tensor<std::int32_t> const& ids,
                             Tensor<embedding_result_t<W>> const& out);
// x's entries along `axis` picked by ids (rank 0 or 1): x's shape with that axis ids.numel() long,
// as torch.index_select. index_select(table, 0, ids) is embedding for rank-1 ids.
template <CastElement T>
RAYO_API Tensor<T> index_select(Tensor<T> const& x, int axis, Tensor<std::int32_t> const& ids);
template <CastElement T>
RAYO_API void index_select_into(Tensor<T> const& x, int axis, Tensor<std::int32_t> const& ids, Tensor<T> const& out);
// The inverse: src's entry i along `axis` written over dst's entry ids[i] (ids rank 0 or 1; src is
// dst's shape with that axis ids.numel() long), dst's other entries left as they are, as
// torch.Tensor.index_copy_ (llama.cpp's set_rows): a token's keys and values into a KV cache at a
// position held on the device. With an id repeated, one of its entries lands (on the CPU the
// last). An id outside dst's axis: the CPU throws IndexError before writing; a GPU skips that
// entry and raises the error at the next host read or synchronize(), as the gathers do.
template <CastElement T>
RAYO_API void index_copy_into(Tensor<T> const& src, int axis, Tensor<std::int32_t> const& ids, Tensor<T> const& dst);

// ---- normalisation over the last axis ------------------------------------------------------------
// x, gamma, beta and out hold one floating type T; the statistics are computed in f32.
// layer_norm: (x - mean) / sqrt(var + eps) · gamma + beta, with the biased variance.
template <FloatingElement T>
RAYO_API Tensor<T> layer_norm(Tensor<T> const& x, float eps = 1e-5f);
template <FloatingElement T, FloatingElement O>
RAYO_API void layer_norm_into(Tensor<T> const& x, float eps, Tensor<O> const& out);
template <FloatingElement T, FloatingElement W>
RAYO_API Tensor<T> layer_norm(Tensor<T> const& x, Tensor<W> const& gamma, Tensor<W> const& beta, float eps = 1e-5f);
template <FloatingElement T, FloatingElement W, FloatingElement O>
RAYO_API void layer_norm_into(Tensor<T> const& x, Tensor<W> const& gamma, Tensor<W> const& beta, float eps,
                              Tensor<O> const& out);
// rms_norm: x / sqrt(mean(x²) + eps) · gamma.
template <FloatingElement T>
RAYO_API Tensor<T> rms_norm(Tensor<T> const& x, float eps = 1e-6f);
template <FloatingElement T, FloatingElement O>
RAYO_API void rms_norm_into(Tensor<T> const& x, float eps, Tensor<O> const& out);
template <FloatingElement T, FloatingElement W>
RAYO_API Tensor<T> rms_norm(Tensor<T> const& x, Tensor<W> const& gamma, float eps = 1e-6f);
template <FloatingElement T, FloatingElement W, FloatingElement O>
RAYO_API void rms_norm_into(Tensor<T> const& x, Tensor<W> const& gamma, float eps, Tensor<O> const& out);

// ---- rotary position embedding -------------------------------------------------------------------
// Which dimensions of a head rotate together.
enum class RopeStyle {
    adjacent,  // (0, 1), (2, 3), …: llama.cpp's rope for Llama-family GGUF weights (GGML_ROPE_TYPE_NORMAL)
    halves,    // (0, n/2), (1, n/2 + 1), …: GPT-NeoX, Hugging Face's rotate_half
};
struct RopeParams {
    RopeStyle style = RopeStyle::adjacent;
    // The rotated prefix of each head (even, ≤ head_dim); 0: the whole head. The rest is copied.
    int n_dims = 0;
    float freq_base = 10000.0f;
    // Linear position interpolation: positions are multiplied by it.
    float freq_scale = 1.0f;
    // f32 [n_dims/2]: pair p's frequency is divided by factors[p] (Llama-3's rope scaling as GGUF
    // files carry it, `rope_freqs.weight`). On x's device.
    std::optional<FTensor> freq_factors;
};
// x [..., seq, heads, head_dim] rotated pair by pair: pair p of the token at position pos turns by
// pos · freq_scale · freq_base^(−2p/n_dims) / factors[p]. positions (i32) holds seq entries (shared
// by the leading axes) or one per token (the product of the axes before heads). Computed in f32.
template <FloatingElement T>
RAYO_API Tensor<T> rope(Tensor<T> const& x, Tensor<std::int32_t> const& positions, RopeParams const& params = {});
// out may be x itself (rotated in place).
template <FloatingElement T>
RAYO_API void rope_into(Tensor<T> const& x, Tensor<std::int32_t> const& positions, RopeParams const& params,
                        Tensor<T> const& out);

// ---- attention -------------------------------------------------------------------------------------
struct AttentionParams {
    // The scores' factor; 0: 1/√head_dim.
    float scale = 0.0f;
    // Query row i sees the keys at positions ≤ query_offset + i.
    bool causal = false;
    // The position of q's first row among the keys; by default kv_len − q_len (the queries are the
    // last rows: prefill when equal, decode against a KV cache when q_len is 1).
    std::optional<std::int64_t> query_offset;
    // The same position read from device memory when the op runs, in place of query_offset: i32,
    // one element, on q's device; causal only. k and v can then be a whole KV cache of which the
    // rows past the position are hidden, and a captured attention (rayo::capture) follows the value
    // written there between replays. A stored value outside [0, kv_len] is taken as the nearer end.
    std::optional<Tensor<std::int32_t>> query_position;
    // Added to the scores before the softmax: f32, broadcastable to [batch, heads, q_len, kv_len]
    // (NumPy's rules: [q_len, kv_len], [batch, 1, 1, kv_len], …), −Inf hiding a key. On q's device.
    std::optional<FTensor> mask;
};
// softmax(q·kᵀ·scale [+ mask]) · v, per batch and head, with q [batch, q_len, heads, head_dim] and
// k, v [batch, kv_len, kv_heads, head_dim] (rank 3: batch 1), one floating type, kv_heads dividing
// heads (grouped-query attention: query head h reads key/value head h / (heads / kv_heads)).
// Result [batch, q_len, heads, head_dim] of q's type; scores, softmax and sums in f32, the score
// matrix never stored. A query row that sees no key gives zeros, not NaN.
template <FloatingElement T>
RAYO_API Tensor<T> attention(Tensor<T> const& q, Tensor<T> const& k, Tensor<T> const& v,
                             AttentionParams const& params = {});
template <FloatingElement T>
RAYO_API void attention_into(Tensor<T> const& q, Tensor<T> const& k, Tensor<T> const& v, AttentionParams const& params,
                             Tensor<T> const& out);

// ---- convolution and pooling: [N, C, H, W] images (rank 3: N = 1) --------------------------------
// (height, width) pairs.
struct Conv2dParams {
    std::array<int, 2> stride{1, 1};
    std::array<int, 2> padding{0, 0};  // zeros on each side
    std::array<int, 2> dilation{1, 1};
    int groups = 1;  // depthwise: groups = C = O
};
// x [N, C, H, W] cross-correlated with w [O, C/groups, KH, KW] (as torch.nn.functional.conv2d) ->
// [N, O, OH, OW], OH = (H + 2·padding − dilation·(KH − 1) − 1) / stride + 1, accumulated in f32.
template <FloatingElement T>
RAYO_API Tensor<T> conv2d(Tensor<T> const& x, Tensor<T> const& w, Conv2dParams const& params = {});
template <FloatingElement T>
RAYO_API void conv2d_into(Tensor<T> const& x, Tensor<T> const& w, Conv2dParams const& params, Tensor<T> const& out);
// … + bias [O], added to each output channel.
template <FloatingElement T>
RAYO_API Tensor<T> conv2d(Tensor<T> const& x, Tensor<T> const& w, Tensor<T> const& bias,
                          Conv2dParams const& params = {});
template <FloatingElement T>
RAYO_API void conv2d_into(Tensor<T> const& x, Tensor<T> const& w, Tensor<T> const& bias, Conv2dParams const& params,
                          Tensor<T> const& out);

// The output sizes of convolve2d, as scipy.signal.convolve2d names them.
enum class ConvolveMode {
    full,   // every overlap: [H + KH − 1, W + KW − 1]
    same,   // the image's size, centred on the full result
    valid,  // only where the kernel lies inside the image: [H − KH + 1, W − KW + 1]
};
// The true 2-D convolution (the kernel flipped) of one image [H, W] by kernel [KH, KW]: a conv2d
// with one channel.
template <FloatingElement T>
RAYO_API Tensor<T> convolve2d(Tensor<T> const& image, Tensor<T> const& kernel, ConvolveMode mode = ConvolveMode::full);

struct Pool2dParams {
    std::array<int, 2> kernel{2, 2};
    std::optional<std::array<int, 2>> stride;  // default: the kernel
    std::array<int, 2> padding{0, 0};          // at most half the kernel
    // avg_pool2d: padding cells count in the divisor (PyTorch's default).
    bool count_include_pad = true;
};
// The maximum or mean of each window of each channel: x [N, C, H, W] -> [N, C, OH, OW],
// OH = (H + 2·padding − kernel) / stride + 1. max_pool2d's padding is −Inf.
template <FloatingElement T>
RAYO_API Tensor<T> max_pool2d(Tensor<T> const& x, Pool2dParams const& params = {});
template <FloatingElement T>
RAYO_API void max_pool2d_into(Tensor<T> const& x, Pool2dParams const& params, Tensor<T> const& out);
template <FloatingElement T>
RAYO_API Tensor<T> avg_pool2d(Tensor<T> const& x, Pool2dParams const& params = {});
template <FloatingElement T>
RAYO_API void avg_pool2d_into(Tensor<T> const& x, Pool2dParams const& params, Tensor<T> const& out);

}  // namespace rayo
