// The CPU backend's quantize / dequantize: blocks are independent, so the work is split over the
// thread pool by blocks. q8_k quantization and every dequantization run the vectorised kernels of
// the selected ISA; q4_k / q6_k quantization runs the scalar reference (its search is sequential
// in the reference's f32 order, and the reference's bytes are the contract).
#include <cstddef>
#include <string>

#include "cpu/cpu_backend.hpp"
#include "cpu/kernel_table.hpp"
#include "cpu/thread_pool.hpp"
#include "quant/reference_quantizer.hpp"
#include "rayo/error.hpp"
#include "rayo/quant.hpp"

namespace rayo::cpu {

using detail::TensorView;

namespace {

// Blocks per task: enough work to pay for a thread (the q4_k / q6_k search costs some
// microseconds a block; the vector kernels well under one).
constexpr std::size_t search_grain = 4;
constexpr std::size_t vector_grain = 128;

template <class T>
T* ptr(TensorView const& v) noexcept {
    return reinterpret_cast<T*>(v.buffer + v.offset);
}

template <QuantBlock B>
void quantize_reference(float const* x, B* out, std::size_t blocks) {
    thread_pool().parallel_for(blocks, search_grain, [&](std::size_t b, std::size_t e) {
        quant::reference::quantize<B>(x + b * quant_block_values, out + b, e - b);
    });
}

}  // namespace

void CpuBackend::quantize(TensorView const& in, TensorView const& out) {
    if (in.dtype != DType::f32 || in.numel != out.numel || in.numel % quant_block_values != 0)
        throw Unsupported("cpu: quantize takes f32 values in whole 256-value blocks");
    std::size_t const blocks = in.numel / quant_block_values;
    float const* x = ptr<float>(in);
    switch (out.dtype) {
        case DType::q4_k: quantize_reference(x, ptr<q4_k>(out), blocks); return;
        case DType::q6_k: quantize_reference(x, ptr<q6_k>(out), blocks); return;
        case DType::q8_k: {
            auto const& k = kernels();
            q8_k* q = ptr<q8_k>(out);
            thread_pool().parallel_for(blocks, vector_grain, [&](std::size_t b, std::size_t e) {
                k.quantize_q8_k(x + b * quant_block_values, q + b, e - b);
            });
            return;
        }
        default: break;
    }
    throw Unsupported("cpu: quantize to " + std::string(to_string(out.dtype)) + " is not a K-quant type");
}

void CpuBackend::dequantize(TensorView const& in, TensorView const& out) {
    if (out.dtype != DType::f32 || in.numel != out.numel || in.numel % quant_block_values != 0 ||
        (in.dtype != DType::q4_k && in.dtype != DType::q6_k && in.dtype != DType::q8_k))
        throw Unsupported("cpu: dequantize takes q4_k, q6_k or q8_k blocks to f32, got " +
                          std::string(to_string(in.dtype)));
    auto const& k = kernels();
    std::size_t const blocks = in.numel / quant_block_values;
    std::size_t const block_bytes = size_of(in.dtype);
    auto const* q = ptr<unsigned char const>(in);
    float* y = ptr<float>(out);
    DType const type = in.dtype;
    thread_pool().parallel_for(blocks, vector_grain, [&](std::size_t b, std::size_t e) {
        k.dequantize(type, q + b * block_bytes, y + b * quant_block_values, e - b);
    });
}

}  // namespace rayo::cpu
