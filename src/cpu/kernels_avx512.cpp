// The CPU kernels instantiated for xsimd::avx512bw; this TU alone is compiled with that ISA's flags.
// The VNNI table differs only in its K-quant dot products, which carry the extension as a function
// attribute (see include/rayo/cpu/quant_dot.hpp), so the rest runs on AVX-512 CPUs without it.
#include "cpu/kernel_table_builder.hpp"

namespace rayo::cpu::avx512 {

KernelTable const& kernel_table() {
    static constexpr KernelTable table = make_kernel_table<xsimd::avx512bw>(CpuArch::avx512);
    return table;
}

KernelTable const& vnni_kernel_table() {
    static constexpr KernelTable table = make_kernel_table<xsimd::avx512bw, true>(CpuArch::avx512_vnni);
    return table;
}

}  // namespace rayo::cpu::avx512
