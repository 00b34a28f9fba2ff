// The CPU kernels instantiated for xsimd::fma3<xsimd::avx2>; this TU alone is compiled with that ISA's flags.
#include "cpu/kernel_table_builder.hpp"

namespace rayo::cpu::avx2 {

KernelTable const& kernel_table() {
    static constexpr KernelTable table = make_kernel_table<xsimd::fma3<xsimd::avx2>>(CpuArch::avx2);
    return table;
}

}  // namespace rayo::cpu::avx2
