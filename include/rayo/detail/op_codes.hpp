// Op codes shared by the dispatcher and every backend's kernels.
#pragma once

#include <cstdint>
#include <string_view>

namespace rayo::detail {

enum class UnaryOp : std::uint8_t {
    relu, leaky_relu, elu, sigmoid, tanh, silu, gelu_tanh, gelu_erf, clip, exp, log, sqrt, abs, neg
};
// Scalar parameters of the parametrised unary ops (alpha for leaky_relu/elu, lo/hi for clip).
struct UnaryParams {
    float a = 0.0f;
    float b = 0.0f;
};

enum class BinaryOp : std::uint8_t { add, sub, mul, div };
enum class ReduceOp : std::uint8_t { sum, max, min, argmax, argmin };
enum class NormOp : std::uint8_t { layer_norm, rms_norm };

constexpr std::string_view to_string(UnaryOp op) noexcept {
    constexpr std::string_view names[] = {"relu", "leaky_relu", "elu", "sigmoid", "tanh", "silu", "gelu_tanh",
                                          "gelu", "clip", "exp", "log", "sqrt", "abs", "neg"};
    return names[static_cast<int>(op)];
}
constexpr std::string_view to_string(BinaryOp op) noexcept {
    constexpr std::string_view names[] = {"add", "sub", "mul", "div"};
    return names[static_cast<int>(op)];
}
constexpr std::string_view to_string(ReduceOp op) noexcept {
    constexpr std::string_view names[] = {"sum", "max", "min", "argmax", "argmin"};
    return names[static_cast<int>(op)];
}
constexpr bool is_arg_reduction(ReduceOp op) noexcept { return op == ReduceOp::argmax || op == ReduceOp::argmin; }

}  // namespace rayo::detail
