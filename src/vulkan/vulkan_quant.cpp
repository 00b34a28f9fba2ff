// K-quant ops on the Vulkan backend: dequantization of q4_k / q6_k / q8_k (bit-exact with the
// CPU), quantization to q8_k (byte-exact), and linear(x, w) with q4_k / q6_k weights for a few
// rows of x: x becomes int8 activations on the device (a q8_k block and, in the default
// q8_k_residual mode, a q8_k block of its residual, as the CPU's), then an integer GEMV reads
// each weight byte once for all rows. q4_k / q6_k quantization stays on the CPU.
#include <algorithm>
#include <string>

#include "rayo/error.hpp"
#include "rayo/quant.hpp"
#include "rayo/settings.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace rayo::vulkan {

using detail::TensorView;

namespace {

struct ConvertParams {  // quant_dequantize.comp, quant_q8_k.comp
    std::uint32_t count;  // values (dequantize) or blocks (quantize)
    std::uint32_t in_offset, out_offset;
};

struct ActivationParams {  // quant_activations.comp
    std::uint32_t blocks, in_offset;
};

struct GemvParams {  // quant_gemv.comp
    std::uint32_t n, m, blocks, w_offset, row_bytes, out_offset;
};

constexpr std::size_t activation_words = 146;  // per 256 values, quant_activations.comp's layout
constexpr std::uint32_t gemv_rows_per_group = 4;

}  // namespace

void VulkanBackend::quantize(TensorView const& in, TensorView const& out) {
    if (in.dtype != DType::f32 || in.numel != out.numel || in.numel % quant_block_values != 0)
        throw Unsupported("vulkan: quantize takes f32 values in whole 256-value blocks");
    if (out.dtype == DType::q4_k || out.dtype == DType::q6_k)
        throw Unsupported("vulkan: quantize to " + std::string(to_string(out.dtype)) +
                          " runs on the CPU (the reference's per-block search is sequential, and its bytes are the "
                          "contract); only q8_k has a shader");
    if (out.dtype != DType::q8_k)
        throw Unsupported("vulkan: quantize to " + std::string(to_string(out.dtype)) + " is not a K-quant type");
    std::size_t const blocks = in.numel / quant_block_values;
    if (blocks == 0) return;
    std::lock_guard lock(mutex_);
    reclaim();
    Binding const bi = bind(in, in.numel * sizeof(float), Access::read, "quantize input");
    Binding const bo = bind(out, blocks * sizeof(q8_k), Access::write, "quantize output");
    ConvertParams const params{static_cast<std::uint32_t>(blocks), bi.element_offset(sizeof(float)),
                               bo.element_offset(sizeof(std::uint32_t))};
    dispatch(Shader::quant_q8_k, {}, {bi, bo}, params,
             {static_cast<std::uint32_t>(std::min<std::size_t>(blocks, max_groups()))});
    stream_.submit_if_large();
}

void VulkanBackend::dequantize(TensorView const& in, TensorView const& out) {
    if (out.dtype != DType::f32 || in.numel != out.numel || in.numel % quant_block_values != 0 ||
        (in.dtype != DType::q4_k && in.dtype != DType::q6_k && in.dtype != DType::q8_k))
        throw Unsupported("vulkan: dequantize takes q4_k, q6_k or q8_k blocks to f32, got " +
                          std::string(to_string(in.dtype)));
    if (in.numel == 0) return;
    std::lock_guard lock(mutex_);
    reclaim();
    Binding const bi = bind(in, bytes_for(in.dtype, in.numel), Access::read, "dequantize input");
    Binding const bo = bind(out, out.numel * sizeof(float), Access::write, "dequantize output");
    std::uint32_t const type = in.dtype == DType::q4_k ? 0 : in.dtype == DType::q6_k ? 1 : 2;
    ConvertParams const params{static_cast<std::uint32_t>(in.numel), static_cast<std::uint32_t>(bi.offset),
                               bo.element_offset(sizeof(float))};
    dispatch(Shader::quant_dequantize, {type}, {bi, bo}, params,
             {static_cast<std::uint32_t>(std::min<std::size_t>((in.numel + 255) / 256, max_groups()))});
    stream_.submit_if_large();
}

void VulkanBackend::linear_quantized_gemv(detail::MatmulShape shape, TensorView const& x, TensorView const& w,
                                          TensorView const& out) {
    std::size_t const blocks = shape.k / quant_block_values;
    std::size_t const groups = (shape.n + gemv_rows_per_group - 1) / gemv_rows_per_group;
    bool const residual = kquant_activations() == KQuantActivations::q8_k_residual;
    std::lock_guard lock(mutex_);
    reclaim();
    if (groups > max_groups())
        throw Unsupported("vulkan linear: " + std::to_string(shape.n) + " weight rows need more workgroups than one "
                          "dispatch may have");
    Binding const bx = bind(x, shape.m * shape.k * sizeof(float), Access::read, "linear x");
    Binding const bw = bind(w, bytes_for(w.dtype, shape.n * shape.k), Access::read, "linear weights");
    Binding const bo = bind(out, shape.m * shape.n * sizeof(float), Access::write, "linear output");
    ScratchBuffer activations = scratch(shape.m * blocks * activation_words * sizeof(std::uint32_t));
    ActivationParams const act{static_cast<std::uint32_t>(shape.m * blocks), bx.element_offset(sizeof(float))};
    dispatch(Shader::quant_activations, {residual ? 1u : 0u}, {bx, activations.bind(Access::write)}, act,
             {static_cast<std::uint32_t>(std::min<std::size_t>(shape.m * blocks, max_groups()))});
    GemvParams const params{static_cast<std::uint32_t>(shape.n),
                            static_cast<std::uint32_t>(shape.m),
                            static_cast<std::uint32_t>(blocks),
                            static_cast<std::uint32_t>(bw.offset),
                            static_cast<std::uint32_t>(bytes_for(w.dtype, shape.k)),
                            bo.element_offset(sizeof(float))};
    std::uint32_t const type = w.dtype == DType::q4_k ? 0 : 1;
    dispatch(Shader::quant_gemv, {type, residual ? 1u : 0u}, {bw, activations.bind(Access::read), bo}, params,
             {static_cast<std::uint32_t>(groups)});
    stream_.submit_if_large();
}

}  // namespace rayo::vulkan
