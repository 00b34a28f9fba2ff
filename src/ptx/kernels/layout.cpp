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

Kernel transpose_tiled(TransposeKernelConfig const& config) {
    std::string const name = "rayo_transpose_tiled_b" + std::to_string(config.element_bytes);
    if (config.element_bytes != 2 && config.element_bytes != 4)
        throw BuildError("ptx kernel '" + name + "': elements of 2 or 4 bytes");
    constexpr unsigned tile = 32, step = 8, pitch = tile + 1;
    Kernel k(name);
    k.max_threads(tile * step);
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const in = k.cvta_to_global(k.param(Type::u64, "in"));
    Reg const rows = k.param(Type::u32, "rows"), cols = k.param(Type::u32, "cols");
    Reg const in_stride = k.param(Type::u32, "in_stride"), out_stride = k.param(Type::u32, "out_stride");
    Reg const in_batch = k.param(Type::u32, "in_batch"), out_batch = k.param(Type::u32, "out_batch");
    Type const bits = config.element_bytes == 2 ? Type::b16 : Type::b32;
    unsigned const bytes = config.element_bytes;
    // Every element in a 4-byte slot of the tile, whatever its size: a column read then touches
    // 32 banks for 2-byte elements too.
    Reg const slots = k.shared_address(k.shared_array("tile", Type::b32, tile * pitch));
    Reg const tx = k.special(Special::tid_x), ty = k.special(Special::tid_y);
    Reg const c0 = k.mul(k.special(Special::ctaid_x), tile), r0 = k.mul(k.special(Special::ctaid_y), tile);
    Reg const product = k.special(Special::ctaid_z);
    Reg const in_first = k.mul(product, in_batch), out_first = k.mul(product, out_batch);
    auto slot = [&](Reg row, Reg col) { return k.add(slots, k.mul(k.fma(row, pitch, col), 4u)); };

    // Tile rows are in's rows (out's columns c): the threads of a warp read along one of them.
    Reg const r_in = k.add(r0, tx);
    for (unsigned i = 0; i < tile / step; ++i) {
        Reg const t = k.add(ty, i * step);
        Reg const c = k.add(c0, t);
        k.if_then(k.and_pred(k.setp(Cmp::lt, c, cols), k.setp(Cmp::lt, r_in, rows)), [&] {
            Reg const at = k.add(in_first, k.fma(c, in_stride, r_in));
            k.st(Space::shared, bits, slot(t, tx), k.ld(Space::global, bits, k.element_address(in, at, bytes)));
        });
    }
    k.bar_sync();
    // ... and write along out's rows: column tx of the tile.
    Reg const c_out = k.add(c0, tx);
    for (unsigned i = 0; i < tile / step; ++i) {
        Reg const t = k.add(ty, i * step);
        Reg const r = k.add(r0, t);
        k.if_then(k.and_pred(k.setp(Cmp::lt, r, rows), k.setp(Cmp::lt, c_out, cols)), [&] {
            Reg const at = k.add(out_first, k.fma(r, out_stride, c_out));
            k.st(Space::global, bits, k.element_address(out, at, bytes), k.ld(Space::shared, bits, slot(tx, t)));
        });
    }
    return k;
}

}  // namespace rayo::ptx::kernels
