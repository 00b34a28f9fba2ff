// The tensor-core GEMM: mma.sync.m16n8k16 (f16/bf16 in, f32 accumulate) fed by ldmatrix from a
// multi-stage cp.async pipeline, composed of the stages in tensor_core_stages.hpp (which describes
// the shared-memory layout).
//
// Pipeline: stages − 1 k steps are in flight before the first MMA; each iteration waits for the
// oldest group, synchronises once, issues the copies of the k step stages − 1 ahead into the slot
// freed by the previous iteration, and multiplies the current slot. An operand that is not 16-bit
// in memory (f32 a) or not 16-byte aligned goes through registers instead: loaded at the top of
// the iteration, converted/packed and stored after the MMAs, so its latency hides behind them too.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rayo/ptx/kernels/gemm.hpp"
#include "ptx/kernels/gemm_addressing.hpp"
#include "ptx/kernels/tensor_core_stages.hpp"

namespace rayo::ptx::kernels {

namespace {

using gemm_detail::address_2d;
using gemm_detail::both;
using gemm_detail::load_bias;
using gemm_detail::Swizzle;
using gemm_detail::TileLoader;

}  // namespace

Kernel detail::gemm_tensor_core(GemmConfig const& c) {
    unsigned const tile_m = c.tile.m, tile_n = c.tile.n, tile_k = c.tile.k;
    bool const b_k_rows = !c.b_transposed;
    Swizzle const a_swizzle(tile_k / 8), b_swizzle(b_k_rows ? tile_n / 8 : tile_k / 8);

    Kernel kernel(gemm_name(c));
    kernel.max_threads(c.warps * 32);
    GemmFrame const f = gemm_frame(kernel, c);
    gemm_detail::TensorCoreBlock const block = gemm_detail::TensorCoreBlock::of(kernel, c);
    Reg const tid = block.tid;

    // ---- loaders
    kernel.comment("loaders: 16-byte chunks, swizzled");
    // b as [k, n]: rows of the tile are k, chunks run along n.
    auto k_rows = [&](Swizzle const& swizzle) {
        TileLoader l;
        l.k_rows = true;
        l.source = c.b;
        l.staged = !c.aligned;
        l.element_wise = !c.aligned;
        l.check_k = f.check_k;
        unsigned const chunks = tile_n / 8;
        l.row_step = block.threads / chunks;
        l.count = tile_k / l.row_step;
        l.row_step_bytes = l.row_step * chunks * 16;
        l.base = f.b;
        Reg const row = kernel.div(tid, chunks), chunk = kernel.rem(tid, chunks);
        l.index = row;
        l.column = kernel.add(f.col0, kernel.shl(chunk, 3));
        l.columns = f.n;
        l.check_columns = f.check_n;
        l.address = address_2d(kernel, f.b, row, f.n, l.column, 2);
        l.chunk_stride = kernel.mul_wide(f.n, l.row_step * 2);
        l.k_step = kernel.mul_wide(f.n, tile_k * 2);
        l.shared = kernel.add(swizzle.offset(kernel, row, chunk), kernel.add(block.smem, block.a_bytes));
        l.fixed_ok.push_back(f.check_n && c.aligned ? kernel.setp(Cmp::lt, l.column, f.n) : Reg{});
        return l;
    };
    std::vector<TileLoader> loaders;
    loaders.push_back(gemm_detail::k_contiguous_loader(kernel, block,
                                                       {.tensor = f.a,
                                                        .type = c.a,
                                                        .origin = f.row0,
                                                        .extent = f.m,
                                                        .k = f.k,
                                                        .check_rows = f.check_m,
                                                        .check_k = f.check_k,
                                                        .aligned = c.aligned,
                                                        .rows = tile_m,
                                                        .region = 0},
                                                       a_swizzle));
    loaders.push_back(b_k_rows ? k_rows(b_swizzle)
                               : gemm_detail::k_contiguous_loader(kernel, block,
                                                                  {.tensor = f.b,
                                                                   .type = c.b,
                                                                   .origin = f.col0,
                                                                   .extent = f.n,
                                                                   .k = f.k,
                                                                   .check_rows = f.check_n,
                                                                   .check_k = f.check_k,
                                                                   .aligned = c.aligned,
                                                                   .rows = tile_n,
                                                                   .region = block.a_bytes},
                                                                  b_swizzle));
    gemm_detail::TileCopies copies(kernel, block, std::move(loaders));
    gemm_detail::WarpMma mma(kernel, block, b_k_rows, a_swizzle, b_swizzle);
    unsigned const warp_m = mma.warp_m, warp_n = mma.warp_n, m_tiles = mma.m_tiles, n_tiles = mma.n_tiles;
    std::vector<Reg> const& acc = mma.acc;

    GemmPipeline steps{.issue = [&](unsigned slot, Reg k_left) { copies.issue(slot, k_left); },
                       .store_staged = {},
                       .multiply = [&](unsigned slot) { mma.multiply(slot); },
                       .advance = [&] { copies.advance(); }};
    if (copies.any_staged()) steps.store_staged = [&](unsigned slot) { copies.store_staged(slot); };
    steps.cp_async = copies.any_cp_async();
    gemm_pipeline(kernel, f, tile_k, c.stages, steps);

    // ---- epilogue: each mma tile's lane holds rows r, r + 8 and columns 2·(lane % 4) + {0, 1}
    kernel.comment("epilogue: f32 fragments to out");
    Reg const lane = block.lane;
    Reg const row_t = kernel.add(f.row0, kernel.add(kernel.mul(block.warp_row, warp_m), kernel.shr(lane, 2)));
    Reg const col_t =
        kernel.add(f.col0, kernel.add(kernel.mul(block.warp_col, warp_n), kernel.shl(kernel.and_(lane, 3), 1)));
    Reg const base = address_2d(kernel, f.out, row_t, f.n, col_t, 4);
    std::vector<Reg> col_ok;  // per n tile (aligned) or per n tile and element
    if (f.check_n)
        for (unsigned nt = 0; nt < n_tiles; ++nt)
            for (unsigned e = 0; e < (c.aligned ? 1u : 2u); ++e)
                col_ok.push_back(kernel.setp(Cmp::lt, kernel.add(col_t, nt * 8 + e), f.n));
    // The bias of the thread's two columns of each n tile, loaded once for all its rows.
    std::vector<Reg> bias;
    if (c.bias)
        for (unsigned nt = 0; nt < n_tiles; ++nt) {
            std::size_t const guards = c.aligned ? 1 : 2;
            std::span<Reg const> const ok =
                f.check_n ? std::span<Reg const>(col_ok).subspan(nt * guards, guards) : std::span<Reg const>{};
            for (Reg v : load_bias(kernel, f.bias, kernel.add(col_t, nt * 8), 2, c.aligned, ok)) bias.push_back(v);
        }
    for (unsigned mt = 0; mt < m_tiles; ++mt)
        for (unsigned h = 0; h < 2; ++h) {
            unsigned const row_offset = mt * 16 + h * 8;
            Reg const row_ok = f.check_m ? kernel.setp(Cmp::lt, kernel.add(row_t, row_offset), f.m) : Reg{};
            Reg const at = row_offset == 0 ? base : kernel.add(base, kernel.mul_wide(f.n, row_offset * 4));
            for (unsigned nt = 0; nt < n_tiles; ++nt) {
                Reg const* fragment = acc.data() + (mt * n_tiles + nt) * 4 + h * 2;
                std::array<Reg, 2> const d = c.bias ? std::array{kernel.add(fragment[0], bias[nt * 2]),
                                                                 kernel.add(fragment[1], bias[nt * 2 + 1])}
                                                    : std::array{fragment[0], fragment[1]};
                if (c.aligned) {
                    Reg const ok = both(kernel, row_ok, f.check_n ? col_ok[nt] : Reg{});
                    std::vector<Reg> const pair{d[0], d[1]};
                    auto const store = [&] { kernel.st_vector(Space::global, Type::f32, Address(at, nt * 32), pair); };
                    if (ok.valid())
                        kernel.predicated(ok, true, store);
                    else
                        store();
                } else {
                    for (unsigned e = 0; e < 2; ++e) {
                        Reg const ok = both(kernel, row_ok, f.check_n ? col_ok[nt * 2 + e] : Reg{});
                        auto const store = [&] {
                            kernel.st(Space::global, Type::f32, Address(at, nt * 32 + e * 4), d[e]);
                        };
                        if (ok.valid())
                            kernel.predicated(ok, true, store);
                        else
                            store();
                    }
                }
            }
        }
    return kernel;
}

}  // namespace rayo::ptx::kernels
