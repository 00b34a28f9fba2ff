// The CPU kernels instantiated for xsimd::sse4_2; this TU alone is compiled with that ISA's flags.
#include "cpu/kernel_table_builder.hpp"

namespace rayo::cpu::sse4_2 {

KernelTable const& kernel_table() {
    static constexpr KernelTable table = make_kernel_table<xsimd::sse4_2>(CpuArch::sse4_2);
    return table;
}

}  // namespace rayo::cpu::sse4_2
