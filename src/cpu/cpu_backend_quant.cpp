// The CPU backend's K-quant ops. quantize / dequantize: blocks are independent, so the work is
// split over the thread pool by blocks. q8_k quantization and every dequantization run the
// vectorised kernels of the selected ISA; q4_k / q6_k quantization runs the scalar reference (its
// search is sequential in the reference's f32 order, and the reference's bytes are the contract).
//
// linear with q4_k / q6_k weights: a few rows of x (decoding) take the integer dot products
// against the weights as stored, which read each weight byte once; more rows take the f32 GEMM
// with the weights decoded panel by panel inside its packing, each decoded panel then serving
// every row of x.
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "cpu/gemm_driver.hpp"
#include "cpu/kernel_table.hpp"
#include "cpu/thread_pool.hpp"
#include "quant/reference_quantizer.hpp"
#include "rayo/error.hpp"
#include "rayo/quant.hpp"
#include "rayo/settings.hpp"

namespace rayo::cpu {

using detail::TensorView;

namespace {

// Blocks per task: enough work to pay for a thread (the q4_k / q6_k search costs some
// microseconds a block; the vector kernels well under one).
constexpr std::size_t search_grain = 4;
constexpr std::size_t vector_grain = 128;
// Up to this many rows of x the integer dot products win: each row costs ~1.4 ms of them for a
// 4096x14336 weight on AVX2 (the weights read once, tiles reused from L2), while the GEMM pays
// its decoding and packing up front and only overtakes at ~24-32 rows (docs/performance.md).
constexpr std::size_t gemv_max_rows = 16;
// Weight rows per tile of the dot-product path.
constexpr std::size_t gemv_row_grain = 16;

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

void CpuBackend::linear_quantized(detail::MatmulShape shape, TensorView const& x, TensorView const& w,
                                  TensorView const& out) {
    if (!shape.b_transposed || x.dtype != DType::f32 || shape.k % quant_block_values != 0 ||
        (w.dtype != DType::q4_k && w.dtype != DType::q6_k))
        throw Unsupported("cpu: K-quant weights are taken by linear(x, w) with f32 x and rows of whole blocks");
    std::size_t const row_bytes = bytes_for(w.dtype, shape.k);
    if (shape.m > gemv_max_rows) {
        GemmArgs args;
        args.m = shape.m;
        args.n = shape.n;
        args.k = shape.k;
        args.a = ptr<float const>(x);
        args.a_row = shape.k;
        args.a_col = 1;
        args.b = ptr<unsigned char const>(w);
        args.b_type = w.dtype == DType::q4_k ? GemmType::q4_k : GemmType::q6_k;
        args.b_col = row_bytes;
        args.c = ptr<float>(out);
        args.ldc = shape.n;
        gemm(args, kernels());
        return;
    }
    auto const& k = kernels();
    auto& pool = thread_pool();
    std::size_t const blocks = shape.k / quant_block_values;
    std::vector<QuantActivation> activations(shape.m * blocks);
    bool const residual = kquant_activations() == KQuantActivations::q8_k_residual;
    float const* xs = ptr<float const>(x);
    pool.parallel_for(shape.m * blocks, vector_grain / 4, [&](std::size_t b, std::size_t e) {
        k.quantize_activations(xs + b * quant_block_values, activations.data() + b, e - b, residual);
    });
    auto const* weights = ptr<unsigned char const>(w);
    float* y = ptr<float>(out);
    DType const type = w.dtype;
    pool.parallel_for(shape.n, gemv_row_grain, [&](std::size_t b, std::size_t e) {
        // A tile of weight rows stays in L2 while every row of x passes over it.
        for (std::size_t t = b; t < e; t += gemv_row_grain) {
            std::size_t const rows = std::min(gemv_row_grain, e - t);
            for (std::size_t r = 0; r < shape.m; ++r)
                k.quant_gemv(type, weights + t * row_bytes, row_bytes, rows,
                             activations.data() + r * blocks, blocks, y + r * shape.n + t, residual);
        }
    });
}

}  // namespace rayo::cpu
