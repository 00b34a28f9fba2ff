// What a backend is asked to run: an op descriptor (one struct per op family, holding the op and
// its parameters) and the views of its operands. Adding an op to a family adds a row to the op
// table (rayo/op_table.hpp), not a member to the Backend interface; a new family adds a struct
// here and one file per backend (src/<backend>/ops/<family>.cpp).
#pragma once

#include <cstddef>
#include <span>
#include <variant>

#include "dispatch/tensor_view.hpp"
#include "rayo/op_table.hpp"

namespace rayo::detail {

namespace op {

// y = f(x) element by element, f = op with parameters a, b (OpInfo::params: alpha; lo, hi).
// in: x; out: y, of x's shape (it may be x itself).
struct Unary {
    static constexpr OpFamily family = OpFamily::unary;
    Op op;
    float a = 0.0f, b = 0.0f;
};

// out = lhs op rhs element by element, rhs a tensor of lhs's shape or (scalar_rhs) the scalar.
// in: lhs[, rhs]; out: of lhs's shape (it may be an input itself).
struct Binary {
    static constexpr OpFamily family = OpFamily::binary;
    Op op;
    bool scalar_rhs = false;
    float scalar = 0.0f;
};

// A tensor seen as [outer, extent, inner] around the reduced axis; a whole-tensor reduction is
// [1, numel, 1].
struct ReduceShape {
    std::size_t outer = 1, extent = 1, inner = 1;
};

// sum, mean, max, min (f32 results) or argmax, argmin (i64: the first index of the extreme, a NaN
// counting as the extreme) over the extent. in: x; out: outer·inner results.
struct Reduce {
    static constexpr OpFamily family = OpFamily::reduction;
    Op op;
    ReduceShape shape;
};

// out[0] = Σ a[i]·b[i]. in: a, b of equal numel; out: one f32.
struct Dot {
    static constexpr OpFamily family = OpFamily::reduction;
    Op op = Op::dot;
};

// softmax or log_softmax of each row of in (its last axis). in: x; out: y of x's shape.
struct Softmax {
    static constexpr OpFamily family = OpFamily::softmax;
    Op op;
};

// layer_norm or rms_norm of each row of in (its last axis), then ·gamma (+ beta for layer_norm).
// in: x, gamma, beta (gamma and beta [cols], or not present); out: y of x's shape.
struct Norm {
    static constexpr OpFamily family = OpFamily::normalization;
    Op op;
    float eps = 0.0f;
};

// out[m, n] = a[m, k] · b[k, n], or a[m, k] · b[n, k]ᵀ when b_transposed; `batch` such products,
// matrix i of the batch at a + i·a_batch, b + i·b_batch (elements; 0: the same matrix for every
// product) and out + i·m·n.
struct MatmulShape {
    std::size_t m = 0, n = 0, k = 0;
    bool b_transposed = false;
    std::size_t batch = 1, a_batch = 0, b_batch = 0;
};

// matmul (a and b of one floating type, batched) or linear (f32 a, b the weights: f32, f16, bf16,
// q4_k or q6_k, b_transposed, batch 1). in: a, b[, bias: f32 [n], linear with floating weights,
// added to every row of out]; out: f32 [batch, m, n].
struct Matmul {
    static constexpr OpFamily family = OpFamily::matmul;
    Op op;
    MatmulShape shape;
};

// f32 values -> blocks of out's type (q4_k, q6_k, q8_k). in: values; out: blocks.
struct Quantize {
    static constexpr OpFamily family = OpFamily::quantization;
    Op op = Op::quantize;
};

// Blocks (q4_k, q6_k, q8_k) -> f32 values. in: blocks; out: values.
struct Dequantize {
    static constexpr OpFamily family = OpFamily::quantization;
    Op op = Op::dequantize;
};

// Values converted to out's element type (f32, f16, bf16, i32 either way): floats rounded to
// nearest even, NaN and ±Inf kept; to i32 truncated toward zero and saturated, NaN giving 0.
// in: x; out: y of x's shape (the same element type: a copy).
struct Cast {
    static constexpr OpFamily family = OpFamily::conversion;
    Op op = Op::cast;
};

// out[i] = in[i] for every element of two views of one shape and element type (f32, f16, bf16,
// i32) with any strides: a permuted or broadcast input, an output inside a larger tensor. The
// output repeats no element and does not overlap the input. in: x; out: y.
struct Copy {
    static constexpr OpFamily family = OpFamily::layout;
    Op op = Op::copy;
};

// out[o, i, :] = table[o, ids[i], :]: the table seen as [outer, rows, row] around the gathered
// axis, `row` values per entry (whole blocks for the K-quant types, which are copied, not
// decoded). in: table (f32, f16, bf16, i32, q4_k, q6_k), ids (i32, contiguous); out: [outer,
// ids, row] of the table's type, contiguous. An id outside [0, rows): the CPU throws IndexError
// before writing; a GPU writes zeros for that entry and records the id in its fault record
// (device_fault.hpp), raised at the next host read or synchronize().
struct Gather {
    static constexpr OpFamily family = OpFamily::gather;
    Op op;
    std::size_t outer = 1, rows = 0, row = 0;
};

}  // namespace op

using OpDescriptor = std::variant<op::Unary, op::Binary, op::Reduce, op::Dot, op::Softmax, op::Norm, op::Matmul,
                                  op::Quantize, op::Dequantize, op::Cast, op::Copy, op::Gather>;

[[nodiscard]] inline Op op_of(OpDescriptor const& d) noexcept {
    return std::visit([](auto const& f) { return f.op; }, d);
}

// Whether the descriptor's op belongs to the family of its struct (op::Unary holds a unary op, ...).
[[nodiscard]] inline bool well_formed(OpDescriptor const& d) noexcept {
    return std::visit([](auto const& f) { return family(f.op) == f.family; }, d);
}

// The operands of one op, in the order its descriptor documents.
struct OpViews {
    std::span<TensorView const> in;
    std::span<TensorView const> out;
};

}  // namespace rayo::detail
