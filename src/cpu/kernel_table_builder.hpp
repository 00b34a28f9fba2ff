// Fills a KernelTable from the kernel templates for one xsimd arch. Included only by the per-ISA
// TUs (kernels_<isa>.cpp), each compiled with its ISA's flags.
#pragma once

#include "cpu/kernel_table.hpp"
#include "rayo/cpu/attention.hpp"
#include "rayo/cpu/convolution.hpp"
#include "rayo/cpu/element_conversion.hpp"
#include "rayo/cpu/elementwise.hpp"
#include "rayo/cpu/gemm.hpp"
#include "rayo/cpu/normalization.hpp"
#include "rayo/cpu/quant_dot.hpp"
#include "rayo/cpu/quantize.hpp"
#include "rayo/cpu/reduction.hpp"
#include "rayo/cpu/softmax.hpp"
#include "rayo/cpu/transpose.hpp"

namespace rayo::cpu {

template <class A>
ReduceResult reduce_kernel(Op op, float const* in, std::size_t n) {
    switch (op) {
        case Op::sum:
        case Op::mean: return {sum_kernel<A>(in, n), 0};
        case Op::max: return {extreme_kernel<A, true>(in, n), 0};
        case Op::min: return {extreme_kernel<A, false>(in, n), 0};
        case Op::argmax:
        case Op::argmin: {
            float const v = op == Op::argmax ? extreme_kernel<A, true>(in, n) : extreme_kernel<A, false>(in, n);
            return {v, static_cast<std::int64_t>(find_first_kernel<A>(in, n, v))};
        }
        default: return {};
    }
}

template <class A, bool Vnni = false>
constexpr KernelTable make_kernel_table(CpuArch arch) {
    return KernelTable{
        .arch = arch,
        .unary = &unary_kernel<A>,
        .binary = &binary_kernel<A>,
        .binary_scalar = &binary_scalar_kernel<A>,
        .binary_broadcast = &binary_broadcast_kernel<A>,
        .widen = &widen_kernel<A>,
        .narrow = &narrow_kernel<A>,
        .transpose32 = &transpose32_kernel<A>,
        .reduce = &reduce_kernel<A>,
        .reduce_columns = &reduce_columns_kernel<A>,
        .dot = &dot_kernel<A>,
        .softmax_rows = &softmax_rows_kernel<A>,
        .layer_norm_rows = &layer_norm_rows_kernel<A>,
        .rms_norm_rows = &rms_norm_rows_kernel<A>,
        .attention_tile = &attention_tile_kernel<A>,
        .gemm_mr = gemm::mr<A>,
        .gemm_nr = gemm::nr<A>,
        .gemm_pack_a = &gemm::pack_a<A>,
        .gemm_pack_b = &gemm::pack_b<A>,
        .gemm_micro = &gemm::micro<A>,
        .gemm_micro_direct_a = &gemm::micro_direct_a<A>,
        .conv_pack_im2col = &conv::pack_im2col<A>,
        .conv_depthwise = &conv::depthwise<A>,
        .quantize_q8_k = &kquant::quantize_q8_k_kernel<A>,
        .dequantize = &kquant::dequantize_kernel<A>,
        .quantize_activations = &kquant::quantize_activations_kernel<A>,
        .quant_gemv = &kquant::quant_gemv_kernel<A, Vnni>,
        .block32_quantize_x = nullptr,  // set by the AVX-512 VNNI table (kernels_avx512.cpp)
        .block32_gemm_region = nullptr,
    };
}

}  // namespace rayo::cpu
