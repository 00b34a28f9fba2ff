// The Vulkan backend's op families, one source file each (elementwise.cpp holds the unary and
// binary families). For each descriptor: supports() says whether the shaders take these views on
// this device, run() records the dispatches (the device mutex held, see shader_runner.hpp).
#pragma once

#include "vulkan/shader_runner.hpp"
#include "dispatch/backend.hpp"

namespace rayo::vulkan::ops {

// supports() and run() for every op descriptor, the same list for every backend.
using OpRunner = ShaderRunner;
#include "dispatch/op_entry_points.inc"

// Whether the shaders decode blocks of `t` as linear's weights (q4_k, q5_k, q6_k, q8_0, q4_0).
[[nodiscard]] constexpr bool is_weight_block_type(DType t) noexcept {
    return t == DType::q4_k || t == DType::q5_k || t == DType::q6_k || t == DType::q8_0 || t == DType::q4_0;
}

// linear(x, w[, bias]) with block-quantized weights (is_weight_block_type) and at most
// kquant_gemv_max_rows rows of x (quantization.cpp): the f32 K-quant GEMV, the bias (null: none)
// added as each output is written, for matmul.cpp.
inline constexpr std::size_t kquant_gemv_max_rows = 16;
void linear_kquant_gemv(ShaderRunner&, op::MatmulShape shape, TensorView const& x, TensorView const& w,
                        TensorView const* bias, TensorView const& out);
// Records decoding `count` values of the blocks of `type` at `in` (a binding from bind_blocks) into
// f32 at `out` (quantization.cpp).
void record_dequantize(ShaderRunner&, Binding const& in, DType type, std::size_t count, Binding const& out);
// `bytes` of blocks at `view` for a shader that reads them as words (quantization.cpp): q6_k, q8_0
// and q4_0 blocks are 2-byte aligned, so the view may start 2 bytes past a word. The buffer is
// bound from the word that holds the view's first byte, its bound size rounded up to whole words
// (the last block's last word may end 2 bytes past it; allocations are carved at aligned offsets),
// and the binding's offset is the view's own byte offset, which the shader gets as an address.
[[nodiscard]] Binding bind_blocks(ShaderRunner&, TensorView const& view, std::size_t bytes, Access access,
                                  char const* what);

}  // namespace rayo::vulkan::ops
