// The table of rayo's operations: one row per op with its name, its family, its scalar parameters
// and the element types it takes. Everything else that names an op derives from this table: the
// names in errors, logs and rayo::stats(), the op codes of the CUDA kernel generators
// (rayo::ptx::kernels take a rayo::Op) and those of the GLSL shaders (the build generates
// `op_codes.glsl` from it), the cross-backend test harness's list of what to test, and the support
// matrix in docs/ops.md.
//
//   for (rayo::OpInfo const& row : rayo::op_table)
//       std::cout << row.name << " (" << to_string(row.family) << ")\n";
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "rayo/dtype.hpp"
#include "rayo/export.hpp"

namespace rayo {

// Ops of one family share their operands' layout, their backend entry point and their source
// file in each backend (src/<backend>/ops/<family>.cpp; unary and binary share elementwise.cpp).
// clang-format off
enum class OpFamily : std::uint8_t {
    unary, binary, reduction, softmax, normalization, matmul, quantization, conversion, layout, gather,
    rotary, attention, convolution, pooling
};
// clang-format on

// The family's name; "?" for a value past the last family. A switch, so that a new enumerator
// without its name here is a warning (-Wswitch), and op_family_count counts up to the first "?".
constexpr std::string_view to_string(OpFamily f) noexcept {
    switch (f) {
        case OpFamily::unary: return "unary";
        case OpFamily::binary: return "binary";
        case OpFamily::reduction: return "reduction";
        case OpFamily::softmax: return "softmax";
        case OpFamily::normalization: return "normalization";
        case OpFamily::matmul: return "matmul";
        case OpFamily::quantization: return "quantization";
        case OpFamily::conversion: return "conversion";
        case OpFamily::layout: return "layout";
        case OpFamily::gather: return "gather";
        case OpFamily::rotary: return "rotary";
        case OpFamily::attention: return "attention";
        case OpFamily::convolution: return "convolution";
        case OpFamily::pooling: return "pooling";
    }
    return "?";
}

// How many families there are: OpFamily's values run from 0 to op_family_count - 1. Loops over the
// families run to it rather than naming the last one; the rows of op_table are checked against it
// below.
inline constexpr std::size_t op_family_count = [] {
    std::size_t n = 0;
    while (to_string(static_cast<OpFamily>(n)) != "?") ++n;
    return n;
}();

// Every op, in the order of op_table's rows.
// clang-format off
enum class Op : std::uint8_t {
    // unary: y = f(x), element by element
    relu, leaky_relu, elu, sigmoid, tanh, silu, gelu, gelu_tanh, clip, exp, log, sqrt, abs, neg,
    // binary: element by element (NumPy broadcasting), a tensor or a scalar on the right
    add, sub, mul, div, maximum, minimum, swiglu,
    // reductions over everything or one axis; dot: the sum of a·b
    sum, mean, max, min, argmax, argmin, dot,
    // along the last axis
    softmax, log_softmax,
    layer_norm, rms_norm,
    // matrices
    matmul, linear,
    // the K-quant block types
    quantize, dequantize,
    // element types
    cast,
    // layout: elements copied between views of any strides (permute, expand, concat, narrow, copy)
    copy,
    // gathers: rows picked by a tensor of ids (index_copy: rows written at them)
    embedding, index_select, index_copy,
    // rotary position embedding of [..., seq, heads, head_dim] by token positions
    rope,
    // softmax(q·kᵀ·scale + mask)·v over [batch, seq, heads, head_dim] operands
    attention,
    // 2-D convolution of [N, C, H, W] by [O, C/groups, KH, KW] and the 2-D pools
    conv2d,
    max_pool2d, avg_pool2d,
};
// clang-format on

// A set of element types.
class RAYO_API DTypeSet {
public:
    constexpr DTypeSet() noexcept = default;
    constexpr DTypeSet(std::initializer_list<DType> types) noexcept {
        for (DType t : types) bits_ |= bit(t);
    }
    [[nodiscard]] constexpr bool contains(DType t) const noexcept { return (bits_ & bit(t)) != 0; }
    [[nodiscard]] constexpr bool empty() const noexcept { return bits_ == 0; }
    friend constexpr bool operator==(DTypeSet, DTypeSet) noexcept = default;

private:
    static constexpr std::uint32_t bit(DType t) noexcept { return std::uint32_t{1} << static_cast<unsigned>(t); }
    std::uint32_t bits_ = 0;
};

struct RAYO_API OpInfo {
    Op op;
    std::string_view name;  // as users see it: the function's name, and in errors, logs and stats()
    OpFamily family;
    // The op's scalar parameters, in the order the op takes them ("" past the last).
    std::array<std::string_view, 2> params;
    // The element types of the op's main operand: x for the unary, binary, reduction, softmax and
    // normalization ops; the operands of matmul; linear's weights; the block type quantize writes
    // and dequantize reads; what cast reads and copy moves; the table a gather picks rows from.
    DTypeSet dtypes;

    [[nodiscard]] constexpr std::size_t param_count() const noexcept {
        return params[0].empty() ? 0 : params[1].empty() ? 1 : 2;
    }
};

namespace detail {
inline constexpr DTypeSet f32_only{DType::f32};
inline constexpr DTypeSet floating{DType::f32, DType::f16, DType::bf16};
inline constexpr DTypeSet elements{DType::f32, DType::f16, DType::bf16, DType::i32};  // what moves as it is
inline constexpr DTypeSet quant_blocks{DType::q4_k, DType::q6_k, DType::q8_k, DType::q8_0, DType::q4_0, DType::q5_k};
inline constexpr DTypeSet weight_types{DType::f32,  DType::f16,  DType::bf16, DType::q4_k,
                                       DType::q6_k, DType::q8_0, DType::q4_0, DType::q5_k};
}  // namespace detail

inline constexpr std::array op_table{
    OpInfo{Op::relu, "relu", OpFamily::unary, {}, detail::floating},
    OpInfo{Op::leaky_relu, "leaky_relu", OpFamily::unary, {"alpha"}, detail::floating},
    OpInfo{Op::elu, "elu", OpFamily::unary, {"alpha"}, detail::floating},
    OpInfo{Op::sigmoid, "sigmoid", OpFamily::unary, {}, detail::floating},
    OpInfo{Op::tanh, "tanh", OpFamily::unary, {}, detail::floating},
    OpInfo{Op::silu, "silu", OpFamily::unary, {}, detail::floating},
    OpInfo{Op::gelu, "gelu", OpFamily::unary, {}, detail::floating},
    OpInfo{Op::gelu_tanh, "gelu_tanh", OpFamily::unary, {}, detail::floating},
    OpInfo{Op::clip, "clip", OpFamily::unary, {"lo", "hi"}, detail::floating},
    OpInfo{Op::exp, "exp", OpFamily::unary, {}, detail::floating},
    OpInfo{Op::log, "log", OpFamily::unary, {}, detail::floating},
    OpInfo{Op::sqrt, "sqrt", OpFamily::unary, {}, detail::floating},
    OpInfo{Op::abs, "abs", OpFamily::unary, {}, detail::floating},
    OpInfo{Op::neg, "neg", OpFamily::unary, {}, detail::floating},
    OpInfo{Op::add, "add", OpFamily::binary, {}, detail::floating},
    OpInfo{Op::sub, "sub", OpFamily::binary, {}, detail::floating},
    OpInfo{Op::mul, "mul", OpFamily::binary, {}, detail::floating},
    OpInfo{Op::div, "div", OpFamily::binary, {}, detail::floating},
    OpInfo{Op::maximum, "maximum", OpFamily::binary, {}, detail::floating},
    OpInfo{Op::minimum, "minimum", OpFamily::binary, {}, detail::floating},
    OpInfo{Op::swiglu, "swiglu", OpFamily::binary, {}, detail::floating},
    OpInfo{Op::sum, "sum", OpFamily::reduction, {"axis"}, detail::floating},
    OpInfo{Op::mean, "mean", OpFamily::reduction, {"axis"}, detail::floating},
    OpInfo{Op::max, "max", OpFamily::reduction, {"axis"}, detail::floating},
    OpInfo{Op::min, "min", OpFamily::reduction, {"axis"}, detail::floating},
    OpInfo{Op::argmax, "argmax", OpFamily::reduction, {"axis"}, detail::floating},
    OpInfo{Op::argmin, "argmin", OpFamily::reduction, {"axis"}, detail::floating},
    OpInfo{Op::dot, "dot", OpFamily::reduction, {}, detail::floating},
    OpInfo{Op::softmax, "softmax", OpFamily::softmax, {"axis"}, detail::floating},
    OpInfo{Op::log_softmax, "log_softmax", OpFamily::softmax, {"axis"}, detail::floating},
    OpInfo{Op::layer_norm, "layer_norm", OpFamily::normalization, {"eps"}, detail::floating},
    OpInfo{Op::rms_norm, "rms_norm", OpFamily::normalization, {"eps"}, detail::floating},
    OpInfo{Op::matmul, "matmul", OpFamily::matmul, {}, detail::floating},
    OpInfo{Op::linear, "linear", OpFamily::matmul, {}, detail::weight_types},
    OpInfo{Op::quantize, "quantize", OpFamily::quantization, {}, detail::quant_blocks},
    OpInfo{Op::dequantize, "dequantize", OpFamily::quantization, {}, detail::quant_blocks},
    OpInfo{Op::cast, "cast", OpFamily::conversion, {}, detail::elements},
    OpInfo{Op::copy, "copy", OpFamily::layout, {}, detail::elements},
    OpInfo{Op::embedding, "embedding", OpFamily::gather, {}, detail::weight_types},
    OpInfo{Op::index_select, "index_select", OpFamily::gather, {"axis"}, detail::elements},
    OpInfo{Op::index_copy, "index_copy", OpFamily::gather, {"axis"}, detail::elements},
    OpInfo{Op::rope, "rope", OpFamily::rotary, {"freq_base", "freq_scale"}, detail::floating},
    OpInfo{Op::attention, "attention", OpFamily::attention, {"scale"}, detail::floating},
    OpInfo{Op::conv2d, "conv2d", OpFamily::convolution, {}, detail::floating},
    OpInfo{Op::max_pool2d, "max_pool2d", OpFamily::pooling, {}, detail::floating},
    OpInfo{Op::avg_pool2d, "avg_pool2d", OpFamily::pooling, {}, detail::floating},
};

// The rows are in the enum's order, one per op: an op's code is its row's index. The first check
// names Op's last enumerator, the one place that does: an op added after it moves it here.
static_assert(op_table.size() == static_cast<std::size_t>(Op::avg_pool2d) + 1,
              "one row per Op, the last being Op's last enumerator");
static_assert(
    [] {
        for (std::size_t i = 0; i < op_table.size(); ++i)
            if (static_cast<std::size_t>(op_table[i].op) != i) return false;
        return true;
    }(),
    "op_table's rows follow the order of enum class Op");

[[nodiscard]] constexpr OpInfo const& info(Op op) noexcept { return op_table[static_cast<std::size_t>(op)]; }
[[nodiscard]] constexpr std::string_view to_string(Op op) noexcept { return info(op).name; }
[[nodiscard]] constexpr OpFamily family(Op op) noexcept { return info(op).family; }
[[nodiscard]] constexpr bool is_arg_reduction(Op op) noexcept { return op == Op::argmax || op == Op::argmin; }

// How many ops a family has. A switch over one family's ops states the count it handles in a
// static_assert, so that a new row fails to compile until every backend has its case.
[[nodiscard]] constexpr std::size_t op_count(OpFamily f) noexcept {
    std::size_t n = 0;
    for (OpInfo const& row : op_table) n += row.family == f ? 1 : 0;
    return n;
}

// Every row's family is one of the op_family_count families, and each of those has a row: a family
// whose name to_string(OpFamily) lacks fails here as soon as it has ops.
static_assert(
    [] {
        for (OpInfo const& row : op_table)
            if (static_cast<std::size_t>(row.family) >= op_family_count) return false;
        for (std::size_t f = 0; f < op_family_count; ++f)
            if (op_count(static_cast<OpFamily>(f)) == 0) return false;
        return true;
    }(),
    "every op's family is named by to_string(OpFamily), and every named family has ops in op_table");

}  // namespace rayo
