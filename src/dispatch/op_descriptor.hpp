// What a backend is asked to run: an op descriptor (one struct per op family, holding the op and
// its parameters) and the views of its operands. Adding an op to a family adds a row to the op
// table (rayo/op_table.hpp), not a member to the Backend interface; a new family adds a struct
// here and one file per backend (src/<backend>/ops/<family>.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
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
    // f32 × f32 may run on the tensor cores as TF32 (MatmulOptions::allow_tf32) where the backend
    // has such a path; others compute it exactly.
    bool tf32 = false;
};

// What linear multiplies: its x as given, or an input formed from x and a fourth operand first:
// swiglu(x, up) (silu(x)·up, x the gate) or rms_norm(x, eps)·gain. A backend may form it inside
// the product's kernel (fused) or into a temporary before it (dispatch/linear_input.hpp).
enum class LinearInput : std::uint8_t { x, swiglu, rms_norm };

// matmul (a and b of one floating type, batched) or linear (f32 a, b the weights: f32, f16, bf16,
// q8_0, q4_0, q4_k, q5_k or q6_k, b_transposed, batch 1). in: a, b[, bias: f32 [n], linear only, added to every row
// of out][, linear with a formed input only: up (f32, a's shape) or gain (f32 [k])]; out: f32
// [batch, m, n].
struct Matmul {
    static constexpr OpFamily family = OpFamily::matmul;
    Op op;
    MatmulShape shape;
    LinearInput input = LinearInput::x;
    float eps = 0.0f;  // rms_norm's
};

// f32 values -> blocks of out's type (q8_0, q4_0, q4_k, q5_k, q6_k, q8_k). in: values; out: blocks.
struct Quantize {
    static constexpr OpFamily family = OpFamily::quantization;
    Op op = Op::quantize;
};

// Blocks (q8_0, q4_0, q4_k, q5_k, q6_k, q8_k) -> f32 values. in: blocks; out: values.
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
// axis, `row` values per entry (whole blocks for the block types, which are copied, not
// decoded). in: table (f32, f16, bf16, i32, q8_0, q4_0, q4_k, q5_k, q6_k), ids (i32, contiguous); out: [outer,
// ids, row] of the table's type, contiguous. An id outside [0, rows): the CPU throws IndexError
// before writing; a GPU writes zeros for that entry and records the id in its fault record
// (device_fault.hpp), raised at the next host read or synchronize().
// index_copy runs the other way: in: src [outer, ids, row] of dst's type (contiguous), ids; out:
// dst [outer, rows, row], entry i of src over entry ids[i] of dst, the rest untouched; an id
// outside [0, rows) writes nothing (the CPU throws IndexError before writing; a GPU records it).
struct Gather {
    static constexpr OpFamily family = OpFamily::gather;
    Op op;
    std::size_t outer = 1, rows = 0, row = 0;
};

// Rotary position embedding of x seen as [tokens, heads, head_dim] (tokens = the product of the
// axes before heads; token t's position is positions[t % positions], so positions holds one entry
// per row of seq, shared by the leading axes, or one per token). Pair p < n_dims/2 of a head is
// (p·2, p·2 + 1) for `halves` false (adjacent, llama.cpp's Llama rope) or (p, p + n_dims/2) for
// `halves` (GPT-NeoX, Hugging Face's rotate_half); it turns by the angle
// position · freq_scale · freq_base^(−2p/n_dims) / factor[p] (factor 1 without freq factors).
// Dimensions from n_dims on are copied. in: x (f32, f16, bf16), positions (i32, contiguous)[,
// factors (f32 [n_dims/2], contiguous)]; out: of x's shape and type (it may be x itself).
struct Rope {
    static constexpr OpFamily family = OpFamily::rotary;
    Op op = Op::rope;
    std::size_t tokens = 0, heads = 0, head_dim = 0, n_dims = 0, positions = 0;
    bool halves = false;
    float freq_base = 10000.0f, freq_scale = 1.0f;
    bool has_factors = false;
};

// How many groups the GPU rope kernels split a token's heads into, for `lanes` threads a token:
// about 4 heads a thread (at most 64 groups) where the tokens alone give fewer than 2^16 threads
// (a decode step's one token), else one. A thread's heads are a chain of dependent loads and
// stores: a Llama-3-8B decode step's 40 heads in one chain took 7.8 µs on an H200.
[[nodiscard]] inline std::size_t rope_head_groups(Rope const& r, std::size_t lanes) {
    if (r.tokens * lanes >= (std::size_t{1} << 16)) return 1;
    return std::clamp<std::size_t>(r.heads / 4, 1, 64);
}

// Scaled dot-product attention. q [batch, q_len, heads, head_dim], k and v [batch, kv_len,
// kv_heads, head_dim], out [batch, q_len, heads, head_dim]: one floating type, contiguous; query
// head h reads key/value head h / (heads / kv_heads). Row i of q sits at position query_offset + i
// of the keys: with `causal`, it sees keys j ≤ query_offset + i. Scores are q·k·scale (+ the mask,
// f32, its element (b, h, i, j) at b·mask_batch + h·mask_head + i·mask_row + j: a step of 0
// broadcasts), softmax in f32, times v. A row that sees no key (or only −Inf scores) is zeros.
// With stored_position, query_offset is instead the i32 at in[4] when the op runs, clamped to
// [0, kv_len] (causal only), so the host cannot size work by it.
// in: q, k, v[, mask][, position]; out: o.
struct Attention {
    static constexpr OpFamily family = OpFamily::attention;
    Op op = Op::attention;
    std::size_t batch = 1, q_len = 0, kv_len = 0, heads = 0, kv_heads = 0, head_dim = 0;
    float scale = 1.0f;
    bool causal = false;
    std::int64_t query_offset = 0;
    bool stored_position = false;
    bool has_mask = false;
    std::size_t mask_batch = 0, mask_head = 0, mask_row = 0;
};

// out[n, o, y, x] = bias[o] + Σ over c of its group, i, j of in[n, c, y·stride_h − pad_h + i·dilation_h,
// x·stride_w − pad_w + j·dilation_w] · w[o, c, i, j] (w[o, c, kh−1−i, kw−1−j] when `flip`: a true
// convolution), reads outside the image counting as 0. Group g holds input channels
// [g·c/groups, (g+1)·c/groups) and output channels [g·o/groups, (g+1)·o/groups). pad_h and pad_w
// are the top and left padding; oh and ow the output's size (the bottom and right padding follow).
struct Conv2dShape {
    std::size_t n = 0, c = 0, h = 0, w = 0;
    std::size_t o = 0, kh = 0, kw = 0;
    std::size_t oh = 0, ow = 0;
    std::size_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
    std::size_t groups = 1;
    bool flip = false;
};

// in: x [n, c, h, w], w [o, c/groups, kh, kw][, bias [o]] (one floating type, contiguous); out:
// [n, o, oh, ow] of that type, contiguous. Accumulated in f32.
struct Conv2d {
    static constexpr OpFamily family = OpFamily::convolution;
    Op op = Op::conv2d;
    Conv2dShape shape;
    bool has_bias = false;
};

// max_pool2d or avg_pool2d over windows of planes [planes, h, w] (planes = n·c): out[p, y, x]
// over in[p, y·stride_h − pad_h + i, x·stride_w − pad_w + j] for i < kh, j < kw inside the image;
// the average divides by kh·kw (count_include_pad) or by the window's cells inside the image.
// A NaN in a window makes its max NaN. in: x (floating, contiguous); out: [planes, oh, ow].
struct Pool2d {
    static constexpr OpFamily family = OpFamily::pooling;
    Op op;
    std::size_t planes = 0, h = 0, w = 0, oh = 0, ow = 0, kh = 0, kw = 0;
    std::size_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
    bool count_include_pad = true;
};

}  // namespace op

using OpDescriptor =
    std::variant<op::Unary, op::Binary, op::Reduce, op::Dot, op::Softmax, op::Norm, op::Matmul, op::Quantize,
                 op::Dequantize, op::Cast, op::Copy, op::Gather, op::Rope, op::Attention, op::Conv2d, op::Pool2d>;

// Whether `test.template operator()<D>()` holds for every alternative D of OpDescriptor (a
// compile-time check over the descriptors: the backends' op_entry_points.inc).
template <class Test>
[[nodiscard]] constexpr bool every_descriptor(Test test) {
    return [&]<class... D>(std::type_identity<std::variant<D...>>) {
        return (test.template operator()<D>() && ...);
    }(std::type_identity<OpDescriptor>{});
}

// Every family of the op table has a descriptor.
static_assert(
    [] {
        for (std::size_t f = 0; f < op_family_count; ++f)
            if (every_descriptor([f]<class D>() { return D::family != static_cast<OpFamily>(f); })) return false;
        return true;
    }(),
    "every OpFamily has a descriptor struct in OpDescriptor");

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
