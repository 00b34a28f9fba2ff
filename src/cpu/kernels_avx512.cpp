// The CPU kernels instantiated for xsimd::avx512bw; this TU alone is compiled with that ISA's flags.
// The VNNI table differs only in its K-quant dot products and its integer GEMM of q8_0 / q4_0
// weights, which carry the extension as a function attribute (see include/rayo/cpu/quant_dot.hpp),
// so the rest runs on AVX-512 CPUs without it.
#include "cpu/kernel_table_builder.hpp"
#include "rayo/cpu/block32_gemm.hpp"

namespace rayo::cpu::avx512 {

KernelTable const& kernel_table() {
    static constexpr KernelTable table = make_kernel_table<xsimd::avx512bw>(CpuArch::avx512);
    return table;
}

KernelTable const& vnni_kernel_table() {
    static constexpr KernelTable table = [] {
        KernelTable vnni = make_kernel_table<xsimd::avx512bw, true>(CpuArch::avx512_vnni);
        vnni.block32_quantize_x = &block32::quantize_x;
        vnni.block32_gemm_region = &block32::gemm_region;
        return vnni;
    }();
    return table;
}

}  // namespace rayo::cpu::avx512
