// The strided copy kernel (rayo/ptx/kernels/layout.hpp).
#include "rayo/ptx/kernels/layout.hpp"

#include <array>
#include <string>

namespace rayo::ptx::kernels {

namespace {
constexpr unsigned max_rank = 8;
}  // namespace

Kernel copy_strided(CopyStridedKernelConfig const& config) {
    std::string const name =
        "rayo_copy_strided_r" + std::to_string(config.rank) + "_b" + std::to_string(config.element_bytes);
    if (config.rank < 1 || config.rank > max_rank)
        throw BuildError("ptx kernel '" + name + "': rank " + std::to_string(config.rank) + " is not 1 to 8");
    if (config.element_bytes != 2 && config.element_bytes != 4)
        throw BuildError("ptx kernel '" + name + "': elements of 2 or 4 bytes");
    Kernel k(name);
    k.max_threads(config.block_threads);
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const in = k.cvta_to_global(k.param(Type::u64, "in"));
    Reg const n = k.param(Type::u32, "n");
    std::array<std::array<Reg, max_rank>, 3> layout;  // dims, in's strides, out's strides
    constexpr char const* names[] = {"dim", "in_stride", "out_stride"};
    for (std::size_t p = 0; p < 3; ++p)
        for (unsigned d = 0; d < max_rank; ++d) layout[p][d] = k.param(Type::u32, names[p] + std::to_string(d));
    Type const bits = config.element_bytes == 2 ? Type::b16 : Type::b32;
    Reg i = k.global_thread_index();
    Reg const step = k.mul(k.special(Special::nctaid_x), k.special(Special::ntid_x));
    Label top = k.label(), done = k.label();
    k.place(top);
    k.bra_if(k.setp(Cmp::ge, i, n), done);
    Reg rest = k.mov(Type::u32, i), src = k.mov(Type::u32, 0u), dst = k.mov(Type::u32, 0u);
    for (unsigned d = config.rank; d-- > 0;) {
        Reg const coordinate = d ? k.rem(rest, layout[0][d]) : rest;
        if (d) rest = k.div(rest, layout[0][d]);
        src = k.fma(coordinate, layout[1][d], src);
        dst = k.fma(coordinate, layout[2][d], dst);
    }
    Reg const value = k.ld(Space::global, bits, k.element_address(in, src, config.element_bytes));
    k.st(Space::global, bits, k.element_address(out, dst, config.element_bytes), value);
    k.add(i, i, step);
    k.bra(top);
    k.place(done);
    return k;
}

}  // namespace rayo::ptx::kernels
