// The strided copy kernel (rayo/ptx/kernels/layout.hpp).
#include "rayo/ptx/kernels/layout.hpp"

#include <string>

#include "ptx/kernels/strided_layout.hpp"

namespace rayo::ptx::kernels {

Kernel copy_strided(CopyStridedKernelConfig const& config) {
    std::string const name =
        "rayo_copy_strided_r" + std::to_string(config.rank) + "_b" + std::to_string(config.element_bytes);
    if (config.rank < 1 || config.rank > layout_detail::max_rank)
        throw BuildError("ptx kernel '" + name + "': rank " + std::to_string(config.rank) + " is not 1 to 8");
    if (config.element_bytes != 2 && config.element_bytes != 4)
        throw BuildError("ptx kernel '" + name + "': elements of 2 or 4 bytes");
    Kernel k(name);
    k.max_threads(config.block_threads);
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const in = k.cvta_to_global(k.param(Type::u64, "in"));
    Reg const n = k.param(Type::u32, "n");
    layout_detail::StridedParams const layout = layout_detail::strided_params(k, "in_stride", "out_stride");
    Type const bits = config.element_bytes == 2 ? Type::b16 : Type::b32;
    layout_detail::grid_loop_u32(k, n, [&](Reg i) {
        auto const [src, dst] = layout_detail::strided_offsets(k, layout, config.rank, i);
        Reg const value = k.ld(Space::global, bits, k.element_address(in, src, config.element_bytes));
        k.st(Space::global, bits, k.element_address(out, dst, config.element_bytes), value);
    });
    return k;
}

}  // namespace rayo::ptx::kernels
