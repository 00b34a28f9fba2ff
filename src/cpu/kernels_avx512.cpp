// The CPU kernels instantiated for xsimd::avx512bw; this TU alone is compiled with that ISA's flags.
#include "cpu/kernel_table_builder.hpp"

namespace rayo::cpu::avx512 {

KernelTable const& kernel_table() {
    static constexpr KernelTable table = make_kernel_table<xsimd::avx512bw>(CpuArch::avx512);
    return table;
}

}  // namespace rayo::cpu::avx512
