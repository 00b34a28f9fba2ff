// quantize / dequantize between f32 values and the block types.
#include <algorithm>
#include <cstdint>
#include <string>

#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/quant.hpp"
#include "rayo/tensor.hpp"

namespace rayo {

namespace {

// Tensor<B>::empty checks the same, but a caller-made `out` of the right type cannot get here
// with a bad shape, while x can: name the op and the rule.
void check_block_axis(char const* op, DType type, Shape const& shape) {
    std::size_t const values = block_elements(type);
    if (shape.rank() == 0 || shape[shape.rank() - 1] % static_cast<std::int64_t>(values) != 0)
        throw ShapeError(std::string(op) + " to " + std::string(to_string(type)) + ": shape " + shape.to_string() +
                         " has a last dimension that is not a multiple of " + std::to_string(values) + " (one " +
                         (values == quant_block_values ? "super-block" : "block") + " holds " + std::to_string(values) +
                         " values of a row)");
}

}  // namespace

template <QuantBlock B>
void quantize_into(Tensor<float> const& x, Tensor<B> const& out) {
    check_block_axis("quantize", dtype_of<B>, x.shape());
    detail::check_out("quantize", out, x.shape(), x, false);
    if (x.numel() == 0) return;
    detail::dispatch(x.device(), detail::op::Quantize{}, {detail::arg(x)}, {detail::arg(out)});
}

template <QuantBlock B>
Tensor<B> quantize(Tensor<float> const& x) {
    check_block_axis("quantize", dtype_of<B>, x.shape());
    Tensor<B> out = Tensor<B>::empty(x.shape(), x.device());
    quantize_into(x, out);
    return out;
}

// Rows of x (its last axis) in chunks of about a thirty-second of the tensor each, quantized in
// turn with a report after each: every backend runs each chunk as it runs the whole.
template <QuantBlock B>
void quantize_into(Tensor<float> const& x, Tensor<B> const& out, ProgressCallback const& progress) {
    check_block_axis("quantize", dtype_of<B>, x.shape());
    detail::check_out("quantize", out, x.shape(), x, false);
    std::uint64_t const total = x.numel();
    if (progress) progress(0, total);
    if (total == 0) return;
    auto const cols = x.shape()[x.rank() - 1];
    auto const rows = static_cast<std::int64_t>(total / static_cast<std::uint64_t>(cols));
    Tensor<float> const x_rows = x.reshape({rows, cols});
    Tensor<B> const out_rows = out.reshape({rows, cols});
    std::int64_t const chunk = std::max<std::int64_t>(1, (rows + 31) / 32);
    for (std::int64_t r = 0; r < rows; r += chunk) {
        std::int64_t const end = std::min(rows, r + chunk);
        Tensor<B> const part = out_rows.slice(r, end);
        detail::dispatch(x.device(), detail::op::Quantize{}, {detail::arg(x_rows.slice(r, end))}, {detail::arg(part)});
        if (progress) progress(static_cast<std::uint64_t>(end) * static_cast<std::uint64_t>(cols), total);
    }
}

template <QuantBlock B>
Tensor<B> quantize(Tensor<float> const& x, ProgressCallback const& progress) {
    check_block_axis("quantize", dtype_of<B>, x.shape());
    Tensor<B> out = Tensor<B>::empty(x.shape(), x.device());
    quantize_into(x, out, progress);
    return out;
}

template <QuantBlock B>
void dequantize_into(Tensor<B> const& q, Tensor<float> const& out) {
    detail::check_out("dequantize", out, q.shape(), q, false);
    if (q.numel() == 0) return;
    detail::dispatch(q.device(), detail::op::Dequantize{}, {detail::arg(q)}, {detail::arg(out)});
}

template <QuantBlock B>
Tensor<float> dequantize(Tensor<B> const& q) {
    Tensor<float> out = Tensor<float>::empty(q.shape(), q.device());
    dequantize_into(q, out);
    return out;
}

#define RAYO_INSTANTIATE_QUANT(B)                                                                          \
    template Tensor<B> quantize<B>(Tensor<float> const& x);                                                \
    template void quantize_into<B>(Tensor<float> const& x, Tensor<B> const& out);                          \
    template Tensor<B> quantize<B>(Tensor<float> const& x, ProgressCallback const&);                       \
    template void quantize_into<B>(Tensor<float> const& x, Tensor<B> const& out, ProgressCallback const&); \
    template Tensor<float> dequantize<B>(Tensor<B> const& q);                                              \
    template void dequantize_into<B>(Tensor<B> const& q, Tensor<float> const& out);

RAYO_INSTANTIATE_QUANT(q4_k)
RAYO_INSTANTIATE_QUANT(q6_k)
RAYO_INSTANTIATE_QUANT(q8_k)
RAYO_INSTANTIATE_QUANT(q8_0)
RAYO_INSTANTIATE_QUANT(q4_0)
RAYO_INSTANTIATE_QUANT(q5_k)

#undef RAYO_INSTANTIATE_QUANT

}  // namespace rayo
