// The CPU kernels of one instruction set, as plain function pointers. Each per-ISA TU
// (kernels_<isa>.cpp) fills one table from the templates in include/rayo/cpu/; the CPU backend
// splits work over the thread pool and calls the table of the selected arch.
//
// Rule for the per-ISA TUs: they are compiled with ISA flags, so they must not instantiate
// out-of-line standard-library templates (std::vector, std::function, ...) whose COMDAT copy the
// linker could pick for TUs built for a lower ISA. Kernels take raw pointers and sizes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rayo/cpu/attention_tile.hpp"
#include "rayo/cpu/block32_gemm_args.hpp"
#include "rayo/cpu/convolution_args.hpp"
#include "rayo/cpu/gemm_args.hpp"
#include "rayo/cpu/quant_activation.hpp"
#include "rayo/dtype.hpp"
#include "rayo/op_table.hpp"
#include "rayo/quant.hpp"
#include "rayo/settings.hpp"

namespace rayo::cpu {

// Result of reducing one contiguous run: the sum (double), or the extreme value and its index.
struct ReduceResult {
    double value = 0.0;
    std::int64_t index = 0;
};

struct KernelTable {
    CpuArch arch;

    // stream: write `out` with non-temporal stores (for outputs much larger than the caches).
    // a, b: the unary op's parameters (alpha; lo and hi).
    void (*unary)(Op op, float a, float b, float const* in, float* out, std::size_t n, bool stream);
    void (*binary)(Op op, float const* a, float const* b, float* out, std::size_t n, bool stream);
    void (*binary_scalar)(Op op, float const* a, float s, float* out, std::size_t n, bool stream);
    // out[i] = a[i·a_step] op b[i·b_step], steps 0 (a repeated element) or 1.
    void (*binary_broadcast)(Op op, float const* a, std::size_t a_step, float const* b, std::size_t b_step, float* out,
                             std::size_t n, bool stream);

    // f16 / bf16 (`type`) <-> f32 for n values (rayo/cpu/element_conversion.hpp): the 16-bit
    // tensors go through the f32 kernels a block at a time.
    void (*widen)(DType type, void const* in, float* out, std::size_t n);
    void (*narrow)(DType type, float const* in, void* out, std::size_t n);
    // out[r·out_stride + c] = in[c·in_stride + r] for r < rows, c < cols: 32-bit elements of a
    // transposing copy (rayo/cpu/transpose.hpp).
    void (*transpose32)(std::uint32_t const* in, std::size_t in_stride, std::uint32_t* out, std::size_t out_stride,
                        std::size_t rows, std::size_t cols);

    // Reduces in[0..n): sum -> value; max/min -> value (NaN if any); argmax/argmin -> value and
    // first index of the extreme (the first NaN if any).
    ReduceResult (*reduce)(Op op, float const* in, std::size_t n);
    // Column reduction of a row-major [rows, cols] block whose rows are `row_stride` floats apart:
    // for each column j, value[j] and index[j] as above. index may be null for sum/max/min.
    void (*reduce_columns)(Op op, float const* in, std::size_t rows, std::size_t cols, std::size_t row_stride,
                           double* value, std::int64_t* index);
    double (*dot)(float const* a, float const* b, std::size_t n);

    // Row-wise ops over `rows` rows of `cols` contiguous floats.
    void (*softmax_rows)(float const* in, float* out, std::size_t rows, std::size_t cols, bool log);
    // gamma/beta may be null (no affine part).
    void (*layer_norm_rows)(float const* in, float const* gamma, float const* beta, float eps, float* out,
                            std::size_t rows, std::size_t cols);
    void (*rms_norm_rows)(float const* in, float const* gamma, float eps, float* out, std::size_t rows,
                          std::size_t cols);
    // One tile of flash attention's online softmax (rayo/cpu/attention.hpp).
    void (*attention_tile)(AttentionTile const& tile);

    // GEMM building blocks (see include/rayo/cpu/gemm.hpp): the register-blocked micro-kernel
    // and the packers that feed it.
    std::size_t gemm_mr;
    std::size_t gemm_nr;
    // Packs rows [i0, i0+mc) x depth [p0, p0+kc) of A into MR-row panels (zero-padded).
    void (*gemm_pack_a)(GemmArgs const& args, std::size_t i0, std::size_t mc, std::size_t p0, std::size_t kc,
                        float* packed);
    // Packs depth [p0, p0+kc) x columns [j0, j0+nc) of B into NR-column panels (zero-padded).
    void (*gemm_pack_b)(GemmArgs const& args, std::size_t p0, std::size_t kc, std::size_t j0, std::size_t nc,
                        float* packed);
    // C[mr_used, nr_used] (row stride ldc) = (accumulate ? C : 0) + Apanel · Bpanel over kc.
    void (*gemm_micro)(std::size_t kc, float const* a_panel, float const* b_panel, float* c, std::size_t ldc,
                       std::size_t mr_used, std::size_t nr_used, bool accumulate);
    // As gemm_micro, but reading an f32 A in place (rows [i0, i0+mr_used), depth [p0, p0+kc), via
    // args' strides): small products skip packing A. Optional: null means the driver packs A.
    void (*gemm_micro_direct_a)(GemmArgs const& args, std::size_t i0, std::size_t p0, std::size_t kc,
                                float const* b_panel, float* c, std::size_t ldc, std::size_t mr_used,
                                std::size_t nr_used, bool accumulate);

    // conv2d (include/rayo/cpu/convolution.hpp): depth [d0, d0+kc) x pixels [j0, j0+count) of a
    // plane group's im2col matrix packed as gemm_micro's B panels, and the direct depthwise kernel.
    void (*conv_pack_im2col)(ConvGeometry const& g, float const* x, std::size_t d0, std::size_t kc, std::size_t j0,
                             std::size_t count, float* packed);
    void (*conv_depthwise)(DepthwiseArgs const& args);

    // Block types (see include/rayo/cpu/quantize.hpp), byte for byte the scalar reference:
    // `blocks` blocks of 256 floats -> q8_k, and blocks of `type` (any block type) -> floats.
    void (*quantize_q8_k)(float const* in, q8_k* out, std::size_t blocks);
    void (*dequantize)(DType type, void const* in, float* out, std::size_t blocks);
    // Activations of the quantized dot products (include/rayo/cpu/quant_dot.hpp): `blocks` blocks
    // of 256 floats -> `blocks` QuantActivation, with the residual q8_k or without.
    void (*quantize_activations)(float const* in, QuantActivation* out, std::size_t blocks, bool residual);
    // y[r] = weight row r · x for `rows` rows of `type` (q8_0, q4_0, q4_k, q5_k or q6_k),
    // `row_bytes` apart, each `blocks` blocks long (for q8_0 / q4_0 eight blocks share one of x's).
    void (*quant_gemv)(DType type, void const* w, std::size_t row_bytes, std::size_t rows, QuantActivation const* x,
                       std::size_t blocks, float* y, bool residual);
    // Many rows of x times q8_0 / q4_0 weights in integers (include/rayo/cpu/block32_gemm.hpp):
    // x -> 16-bit codes and a scale per 32 values (`values` a multiple of 32), and one thread's
    // rows [i0, i1) x columns [j0, j1) of C with its packing buffer (block32::packed_bytes(j1 − j0),
    // 64-byte aligned). Only where the CPU has AVX-512 VNNI; null elsewhere, where the
    // decoded-panel GEMM serves.
    void (*block32_quantize_x)(float const* x, std::size_t values, std::int16_t* codes, float* scales);
    void (*block32_gemm_region)(Block32GemmArgs const& args, std::size_t i0, std::size_t i1, std::size_t j0,
                                std::size_t j1, unsigned char* packed);
};

// One per ISA, each in its own namespace and TU (kernels_<isa>.cpp); only those the build
// contains are linked.
namespace sse4_2 {
KernelTable const& kernel_table();
}
namespace avx2 {
KernelTable const& kernel_table();
}
namespace avx512 {
KernelTable const& kernel_table();
KernelTable const& vnni_kernel_table();  // the same kernels, with the VNNI K-quant dot products
}  // namespace avx512

// The table of the arch in use (rayo::cpu_arch()).
KernelTable const& kernels();

}  // namespace rayo::cpu
