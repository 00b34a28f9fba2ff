// The quantization family on the CPU, and linear with block-quantized weights. quantize /
// dequantize: blocks are independent, so the work is split over the thread pool by blocks. q8_k
// quantization and every dequantization run the vectorised kernels of the instruction set in use;
// weight quantization (q8_0, q4_0, q4_k, q5_k, q6_k) runs the scalar reference (the K-quant search
// is sequential in the reference's f32 order, and the reference's bytes are the contract).
//
// linear with q8_0 / q4_0 / q4_k / q5_k / q6_k weights: a few rows of x (decoding) take the integer dot products
// against the weights as stored, which read each weight byte once; more rows take the f32 GEMM
// with the weights decoded panel by panel inside its packing, each decoded panel then serving
// every row of x, or, for q8_0 / q4_0 on AVX-512 VNNI, the integer GEMM (cpu/block32_gemm_driver.cpp).
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "cpu/block32_gemm_driver.hpp"
#include "cpu/gemm_driver.hpp"
#include "cpu/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"
#include "quant/reference_quantizer.hpp"
#include "rayo/quant.hpp"
#include "rayo/settings.hpp"

namespace rayo::cpu::ops {

namespace {

// Blocks per task: enough work to pay for a thread (the q4_k / q6_k search costs some
// microseconds a block; the vector kernels well under one).
constexpr std::size_t search_grain = 4;
constexpr std::size_t vector_grain = 128;
// Up to this many rows of x the integer dot products win: the GEMM pays its decoding and packing
// up front, which only more rows of x pay back (docs/backends/cpu.md has the costs per row).
constexpr std::size_t gemv_max_rows = 16;
// Weight rows per tile of the dot-product path.
constexpr std::size_t gemv_row_grain = 16;

bool is_block_type(DType t) { return block_elements(t) > 1; }

template <QuantBlock B>
void quantize_reference(ThreadPool& pool, float const* x, B* out, std::size_t blocks) {
    // A q8_0 / q4_0 block costs well under a microsecond: more of them per task.
    std::size_t const grain = block_values_of<B> == quant_block_values ? search_grain : vector_grain;
    pool.parallel_for(blocks, grain, [&](std::size_t b, std::size_t e) {
        quant::reference::quantize<B>(x + b * block_values_of<B>, out + b, e - b);
    });
}

}  // namespace

Support supports(KernelRunner const&, op::Quantize const&, OpViews const& v) {
    if (v.in[0].dtype != DType::f32 || !is_block_type(v.out[0].dtype))
        return Support::no("cpu: quantize takes f32 values to q8_0, q4_0, q4_k, q5_k, q6_k or q8_k blocks");
    if (!detail::all_contiguous(v)) return Support::no("cpu: quantize takes contiguous tensors");
    return Support::yes();
}

void run(KernelRunner& r, op::Quantize const&, OpViews const& v) {
    auto const& k = r.kernels();
    ThreadPool& pool = r.pool();
    TensorView const& out = v.out[0];
    std::size_t const blocks = v.in[0].numel() / block_elements(out.dtype);
    float const* x = data<float const>(v.in[0]);
    switch (out.dtype) {
        case DType::q4_k: quantize_reference(pool, x, data<q4_k>(out), blocks); return;
        case DType::q5_k: quantize_reference(pool, x, data<q5_k>(out), blocks); return;
        case DType::q6_k: quantize_reference(pool, x, data<q6_k>(out), blocks); return;
        case DType::q8_0: quantize_reference(pool, x, data<q8_0>(out), blocks); return;
        case DType::q4_0: quantize_reference(pool, x, data<q4_0>(out), blocks); return;
        default: {
            q8_k* q = data<q8_k>(out);
            pool.parallel_for(blocks, vector_grain, [&](std::size_t b, std::size_t e) {
                k.quantize_q8_k(x + b * quant_block_values, q + b, e - b);
            });
        }
    }
}

Support supports(KernelRunner const&, op::Dequantize const&, OpViews const& v) {
    if (!is_block_type(v.in[0].dtype) || v.out[0].dtype != DType::f32)
        return Support::no("cpu: dequantize takes q8_0, q4_0, q4_k, q5_k, q6_k or q8_k blocks to f32");
    if (!detail::all_contiguous(v)) return Support::no("cpu: dequantize takes contiguous tensors");
    return Support::yes();
}

void run(KernelRunner& r, op::Dequantize const&, OpViews const& v) {
    auto const& k = r.kernels();
    ThreadPool& pool = r.pool();
    TensorView const& in = v.in[0];
    std::size_t const values = block_elements(in.dtype);
    std::size_t const blocks = in.numel() / values;
    std::size_t const block_bytes = size_of(in.dtype);
    auto const* q = data<unsigned char const>(in);
    float* y = data<float>(v.out[0]);
    pool.parallel_for(blocks, vector_grain, [&](std::size_t b, std::size_t e) {
        k.dequantize(in.dtype, q + b * block_bytes, y + b * values, e - b);
    });
}

namespace {

GemmType gemm_type(DType t) {
    switch (t) {
        case DType::q6_k: return GemmType::q6_k;
        case DType::q8_0: return GemmType::q8_0;
        case DType::q4_0: return GemmType::q4_0;
        case DType::q5_k: return GemmType::q5_k;
        default: return GemmType::q4_k;
    }
}

}  // namespace

void linear_kquant(KernelRunner& r, op::MatmulShape shape, TensorView const& x, TensorView const& w,
                   TensorView const& out) {
    auto const& k = r.kernels();
    ThreadPool& pool = r.pool();
    std::size_t const row_bytes = bytes_for(w.dtype, shape.k);
    if (shape.m > gemv_max_rows && has_block32_gemm(k, w.dtype)) {
        block32_gemm(pool, k, shape.m, shape.n, shape.k, data<float const>(x), w.dtype, data<unsigned char const>(w),
                     row_bytes, data<float>(out));
        return;
    }
    if (shape.m > gemv_max_rows) {
        GemmArgs args;
        args.m = shape.m;
        args.n = shape.n;
        args.k = shape.k;
        args.a = data<float const>(x);
        args.a_row = shape.k;
        args.a_col = 1;
        args.b = data<unsigned char const>(w);
        args.b_type = gemm_type(w.dtype);
        args.b_col = row_bytes;
        args.c = data<float>(out);
        args.ldc = shape.n;
        gemm(args, k);
        return;
    }
    // One activation block per 256 values of a row of x; a q8_0 / q4_0 row that ends inside one
    // has its last block quantized from the values zero-padded to 256 (zeros change neither the
    // block's scale nor the codes of the values).
    std::size_t const blocks = (shape.k + quant_block_values - 1) / quant_block_values;
    std::size_t const weight_blocks = shape.k / block_elements(w.dtype);
    std::vector<QuantActivation> activations(shape.m * blocks);
    bool const residual = kquant_activations() == KQuantActivations::q8_k_residual;
    float const* xs = data<float const>(x);
    if (shape.k % quant_block_values == 0) {
        pool.parallel_for(shape.m * blocks, vector_grain / 4, [&](std::size_t b, std::size_t e) {
            k.quantize_activations(xs + b * quant_block_values, activations.data() + b, e - b, residual);
        });
    } else {
        pool.parallel_for(shape.m * blocks, vector_grain / 4, [&](std::size_t b, std::size_t e) {
            alignas(64) float padded[quant_block_values];
            for (std::size_t i = b; i < e; ++i) {
                std::size_t const row = i / blocks, at = (i % blocks) * quant_block_values;
                std::size_t const count = std::min(quant_block_values, shape.k - at);
                float const* src = xs + row * shape.k + at;
                if (count < quant_block_values) {
                    std::copy(src, src + count, padded);
                    std::fill(padded + count, padded + quant_block_values, 0.0f);
                    src = padded;
                }
                k.quantize_activations(src, activations.data() + i, 1, residual);
            }
        });
    }
    auto const* weights = data<unsigned char const>(w);
    float* y = data<float>(out);
    DType const type = w.dtype;
    pool.parallel_for(shape.n, gemv_row_grain, [&](std::size_t b, std::size_t e) {
        // A tile of weight rows stays in L2 while every row of x passes over it.
        for (std::size_t t = b; t < e; t += gemv_row_grain) {
            std::size_t const rows = std::min(gemv_row_grain, e - t);
            for (std::size_t row = 0; row < shape.m; ++row)
                k.quant_gemv(type, weights + t * row_bytes, row_bytes, rows, activations.data() + row * blocks,
                             weight_blocks, y + row * shape.n + t, residual);
        }
    });
}

}  // namespace rayo::cpu::ops
