// The tensor-core GEMM: mma.sync.m16n8k16 (f16/bf16 in, f32 accumulate) fed by ldmatrix from a
// multi-stage cp.async pipeline.
//
// Shared memory, per stage: a as tile.m rows of tile.k elements, then b as tile.n rows of tile.k
// (b transposed, [n, k] in memory) or tile.k rows of tile.n (b as [k, n]); always 16-bit elements.
// Rows are made of 16-byte chunks whose index is XORed with bits of the row number, so the 8 rows
// one ldmatrix phase reads (and a warp's cp.async writes) fall on 8 different 16-byte bank groups.
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

namespace rayo::ptx::kernels {

namespace {

using gemm_detail::address_2d;
using gemm_detail::both;
using gemm_detail::load_bias;

// The XOR pattern of a tile whose rows have `chunks` 16-byte chunks: chunk ^ ((row >> shift) & mask).
// 8 consecutive rows then cover all 8 16-byte slots of a 128-byte bank line.
struct Swizzle {
    unsigned chunks = 0, shift = 0, mask = 0;
    explicit Swizzle(unsigned chunks_per_row) : chunks(chunks_per_row) {
        unsigned const width = std::min(chunks_per_row, 8u);
        shift = static_cast<unsigned>(std::countr_zero(8u / width));
        mask = width - 1;
    }
    // Byte offset of (row, chunk) in the tile.
    [[nodiscard]] Reg offset(Kernel& k, Reg row, Reg chunk) const {
        Reg const pattern = k.and_(k.shr(row, shift), mask);
        return k.add(k.mul(row, chunks * 16), k.shl(k.xor_(chunk, pattern), 4));
    }
};

// One operand's copy of a tile into shared memory, per thread: `count` chunks of 8 elements,
// `row_step` rows apart (a multiple of 8, so they share a swizzle pattern).
struct TileLoader {
    bool k_rows = false;     // tile rows are k (b as [k, n]); else rows are m or n and run along k
    bool staged = false;     // through registers (f32 source or element-wise) instead of cp.async
    Type source = Type::f16;  // element type in global memory
    unsigned count = 0, row_step = 0;
    unsigned row_step_bytes = 0;   // shared bytes between consecutive chunks
    Reg base;                      // the tensor (a valid address for zero-fill copies)
    Reg address;                   // .u64 global address of chunk 0 in the current k step
    Reg chunk_stride;              // .u64 global bytes between consecutive chunks
    Reg k_step;                    // .u64 global bytes to the next k step (k_rows; else immediate)
    unsigned k_step_bytes = 0;
    Reg shared;                    // shared address of chunk 0 in slot 0
    Reg index;                     // chunk 0's k offset in the tile: its column, or its row (k_rows)
    Reg column;                    // k_rows: chunk's first global column (element-wise checks)
    std::vector<Reg> fixed_ok;     // per chunk (or one, for k_rows): inside m / n
    std::vector<std::vector<Reg>> values;  // staged: per chunk, 8 values in flight
};

}  // namespace

Kernel detail::gemm_tensor_core(GemmConfig const& c) {
    unsigned const tile_m = c.tile.m, tile_n = c.tile.n, tile_k = c.tile.k;
    unsigned const threads = c.warps * 32, stages = c.stages;
    WarpGrid const grid = gemm_warp_grid(c);
    unsigned const warp_m = tile_m / grid.m, warp_n = tile_n / grid.n;
    unsigned const m_tiles = warp_m / 16, n_tiles = warp_n / 8;  // mma tiles per warp
    unsigned const a_bytes = tile_m * tile_k * 2, stage_bytes = a_bytes + tile_n * tile_k * 2;
    Type const element = c.b;
    bool const b_k_rows = !c.b_transposed;
    Swizzle const a_swizzle(tile_k / 8), b_swizzle(b_k_rows ? tile_n / 8 : tile_k / 8);

    Kernel kernel(gemm_name(c));
    kernel.max_threads(threads);
    GemmFrame const f = gemm_frame(kernel, c);
    Reg const smem = kernel.shared_address(kernel.dynamic_shared(128));
    Reg const tid = kernel.special(Special::tid_x);
    Reg const lane = kernel.and_(tid, 31), warp = kernel.shr(tid, 5);
    Reg const warp_row = kernel.rem(warp, grid.m), warp_col = kernel.div(warp, grid.m);

    // ---- loaders
    kernel.comment("loaders: 16-byte chunks, swizzled");
    // a, or b transposed: rows of the tile are rows of the tensor (m or n), chunks run along k.
    auto k_contiguous = [&](Reg source, Type type, Reg origin, Reg extent, bool check_rows, unsigned rows,
                            unsigned region, Swizzle const& swizzle) {
        TileLoader l;
        l.source = type;
        l.staged = type == Type::f32 || !c.aligned;
        unsigned const chunks = tile_k / 8, bytes = static_cast<unsigned>(bytes_of(type));
        l.row_step = threads / chunks;
        l.count = rows / l.row_step;
        l.row_step_bytes = l.row_step * chunks * 16;
        l.base = source;
        Reg const row = kernel.div(tid, chunks), chunk = kernel.rem(tid, chunks);
        l.index = kernel.shl(chunk, 3);
        Reg const global_row = kernel.add(origin, row);
        l.address = address_2d(kernel, source, global_row, f.k, l.index, bytes);
        l.chunk_stride = kernel.mul_wide(f.k, l.row_step * bytes);
        l.k_step_bytes = tile_k * bytes;
        l.shared = kernel.add(swizzle.offset(kernel, row, chunk), kernel.add(smem, region));
        for (unsigned j = 0; j < l.count; ++j)
            l.fixed_ok.push_back(check_rows ? kernel.setp(Cmp::lt, kernel.add(global_row, j * l.row_step), extent)
                                            : Reg{});
        return l;
    };
    // b as [k, n]: rows of the tile are k, chunks run along n.
    auto k_rows = [&](Swizzle const& swizzle) {
        TileLoader l;
        l.k_rows = true;
        l.source = c.b;
        l.staged = !c.aligned;
        unsigned const chunks = tile_n / 8;
        l.row_step = threads / chunks;
        l.count = tile_k / l.row_step;
        l.row_step_bytes = l.row_step * chunks * 16;
        l.base = f.b;
        Reg const row = kernel.div(tid, chunks), chunk = kernel.rem(tid, chunks);
        l.index = row;
        l.column = kernel.add(f.col0, kernel.shl(chunk, 3));
        l.address = address_2d(kernel, f.b, row, f.n, l.column, 2);
        l.chunk_stride = kernel.mul_wide(f.n, l.row_step * 2);
        l.k_step = kernel.mul_wide(f.n, tile_k * 2);
        l.shared = kernel.add(swizzle.offset(kernel, row, chunk), kernel.add(smem, a_bytes));
        l.fixed_ok.push_back(f.check_n && c.aligned ? kernel.setp(Cmp::lt, l.column, f.n) : Reg{});
        return l;
    };
    std::vector<TileLoader> loaders;
    loaders.push_back(k_contiguous(f.a, c.a, f.row0, f.m, f.check_m, tile_m, 0, a_swizzle));
    loaders.push_back(b_k_rows ? k_rows(b_swizzle)
                               : k_contiguous(f.b, c.b, f.col0, f.n, f.check_n, tile_n, a_bytes, b_swizzle));
    for (auto& l : loaders)
        if (l.staged)
            for (unsigned j = 0; j < l.count; ++j) {
                std::vector<Reg> v;
                for (unsigned e = 0; e < 8; ++e) v.push_back(kernel.reg(l.source == Type::f32 ? Type::f32 : Type::u32));
                l.values.push_back(std::move(v));
            }

    // Whether element `e` of chunk `j` is inside the matrix, for a k step with `k_left` = k − its
    // first k (> 0). Element-wise loaders check every element; the others whole chunks (e = 0),
    // or half-chunks of f32 (e = 4).
    auto element_ok = [&](TileLoader const& l, unsigned j, unsigned e, Reg k_left) {
        if (l.k_rows) {
            Reg const k_ok = f.check_k ? kernel.setp(Cmp::lt, kernel.add(l.index, j * l.row_step), k_left) : Reg{};
            Reg n_ok = l.fixed_ok[0];
            if (!c.aligned && f.check_n) n_ok = kernel.setp(Cmp::lt, kernel.add(l.column, e), f.n);
            return both(kernel, k_ok, n_ok);
        }
        Reg const k_ok = f.check_k ? kernel.setp(Cmp::lt, e == 0 ? l.index : kernel.add(l.index, e), k_left) : Reg{};
        return both(kernel, l.fixed_ok[j], k_ok);
    };
    // Issues one k step's copies (cp.async) or loads (staged) for `slot`.
    auto issue = [&](unsigned slot, Reg k_left) {
        for (auto& l : loaders) {
            Reg address = l.address;
            for (unsigned j = 0; j < l.count; ++j) {
                if (j > 0) address = kernel.add(address, l.chunk_stride);
                if (!l.staged) {
                    Reg const dst = kernel.add(l.shared, slot * stage_bytes + j * l.row_step_bytes);
                    Reg const ok = element_ok(l, j, 0, k_left);
                    if (!ok.valid()) {
                        kernel.cp_async(dst, Address(address), 16);
                    } else {  // outside: copy 0 bytes from a valid address, zero-filling the chunk
                        Reg const from = kernel.selp(address, l.base, ok, Type::u64);
                        kernel.cp_async(dst, Address(from), 16, kernel.selp(16, 0, ok, Type::u32));
                    }
                    continue;
                }
                auto& v = l.values[j];
                if (l.source == Type::f32 && c.aligned) {
                    for (unsigned h = 0; h < 2; ++h) {
                        std::vector<Reg> const half(v.begin() + h * 4, v.begin() + h * 4 + 4);
                        Reg const ok = element_ok(l, j, h * 4, k_left);
                        if (ok.valid())
                            for (Reg r : half) kernel.mov(r, 0.0f);
                        auto const load = [&] {
                            kernel.ld_vector(half, Space::global, Type::f32, Address(address, h * 16), Cache::nc);
                        };
                        if (ok.valid()) kernel.predicated(ok, true, load);
                        else load();
                    }
                    continue;
                }
                Type const type = l.source == Type::f32 ? Type::f32 : Type::u16;
                unsigned const bytes = static_cast<unsigned>(bytes_of(type));
                for (unsigned e = 0; e < 8; ++e) {
                    Reg const ok = element_ok(l, j, e, k_left);
                    auto const load = [&] {
                        kernel.ld(v[e], Space::global, type, Address(address, e * bytes), Cache::nc);
                    };
                    if (ok.valid()) {
                        if (type == Type::f32) kernel.mov(v[e], 0.0f);
                        else kernel.mov(v[e], 0);
                        kernel.predicated(ok, true, load);
                    } else {
                        load();
                    }
                }
            }
        }
    };
    // Converts / packs the staged values and stores them into `slot`.
    bool const any_staged = std::ranges::any_of(loaders, [](TileLoader const& l) { return l.staged; });
    auto store_staged = [&](unsigned slot) {
        for (auto& l : loaders) {
            if (!l.staged) continue;
            for (unsigned j = 0; j < l.count; ++j) {
                auto const& v = l.values[j];
                std::vector<Reg> packed;
                for (unsigned p = 0; p < 4; ++p) {
                    Reg const word = kernel.reg(Type::b32);
                    if (l.source == Type::f32) {  // cvt.rn.{f16x2,bf16x2}.f32 d, high, low
                        Type const pair = element == Type::bf16 ? Type::bf16x2 : Type::f16x2;
                        kernel.instruction("cvt.rn." + std::string(name_of(pair)) + ".f32",
                                           {RegUse{word, pair, Access::write}, RegUse{v[2 * p + 1], Type::f32},
                                            RegUse{v[2 * p], Type::f32}},
                                           {.compute_capability = 80});
                    } else {
                        kernel.mov(word, kernel.prmt(v[2 * p], v[2 * p + 1], 0x5410));  // low halves of two words
                    }
                    packed.push_back(word);
                }
                kernel.st_vector(Space::shared, Type::b32, Address(l.shared, slot * stage_bytes + j * l.row_step_bytes),
                                 packed);
            }
        }
    };
    auto advance = [&] {
        for (auto& l : loaders) {
            if (l.k_rows) kernel.add(l.address, l.address, l.k_step);
            else kernel.add(l.address, l.address, l.k_step_bytes);
        }
    };

    // ---- fragments: each lane's ldmatrix row address, relative to a stage
    kernel.comment("ldmatrix addresses");
    Reg const lane_row16 = kernel.and_(lane, 15), lane_half = kernel.shr(lane, 4);
    std::vector<Reg> a_offsets;  // per 16-wide k slice: shared address in slot 0
    Reg const a_row = kernel.add(kernel.mul(warp_row, warp_m), lane_row16);
    for (unsigned ks = 0; ks < tile_k / 16; ++ks)
        a_offsets.push_back(kernel.add(a_swizzle.offset(kernel, a_row, kernel.add(lane_half, ks * 2)), smem));
    std::vector<Reg> b_offsets;  // transposed b: per k slice; b as [k, n]: per pair of n tiles
    if (!b_k_rows) {
        // matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
        Reg const n_row = kernel.add(kernel.mul(warp_col, warp_n),
                                     kernel.add(kernel.and_(lane, 7), kernel.shl(lane_half, 3)));
        Reg const k_half = kernel.and_(kernel.shr(lane, 3), 1);
        for (unsigned ks = 0; ks < tile_k / 16; ++ks)
            b_offsets.push_back(
                kernel.add(b_swizzle.offset(kernel, n_row, kernel.add(k_half, ks * 2)), kernel.add(smem, a_bytes)));
    } else {
        // .trans matrices: (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15)
        Reg const first_chunk = kernel.add(kernel.mul(warp_col, warp_n / 8), lane_half);
        for (unsigned np = 0; np < n_tiles / 2; ++np)
            b_offsets.push_back(kernel.add(b_swizzle.offset(kernel, lane_row16, kernel.add(first_chunk, np * 2)),
                                           kernel.add(smem, a_bytes)));
    }

    std::vector<Reg> acc(m_tiles * n_tiles * 4);
    for (Reg& r : acc) r = kernel.mov(Type::f32, 0.0f);

    auto multiply = [&](unsigned slot) {
        unsigned const at = slot * stage_bytes;
        for (unsigned ks = 0; ks < tile_k / 16; ++ks) {
            std::vector<std::vector<Reg>> a_frag, b_frag;
            for (unsigned mt = 0; mt < m_tiles; ++mt)
                a_frag.push_back(kernel.ldmatrix(4, false, kernel.add(a_offsets[ks], at + mt * 16 * tile_k * 2)));
            for (unsigned np = 0; np < n_tiles / 2; ++np) {
                if (!b_k_rows)
                    b_frag.push_back(kernel.ldmatrix(4, false, kernel.add(b_offsets[ks], at + np * 16 * tile_k * 2)));
                else
                    b_frag.push_back(kernel.ldmatrix(4, true, kernel.add(b_offsets[np], at + ks * 16 * tile_n * 2)));
            }
            for (unsigned mt = 0; mt < m_tiles; ++mt)
                for (unsigned nt = 0; nt < n_tiles; ++nt) {
                    std::span<Reg const> const d(acc.data() + (mt * n_tiles + nt) * 4, 4);
                    std::vector<Reg> const b{b_frag[nt / 2][(nt % 2) * 2], b_frag[nt / 2][(nt % 2) * 2 + 1]};
                    kernel.mma_m16n8k16(element, d, a_frag[mt], b, d);
                }
        }
    };
    GemmPipeline steps{.issue = issue, .store_staged = {}, .multiply = multiply, .advance = advance};
    if (any_staged) steps.store_staged = store_staged;
    steps.cp_async = std::ranges::any_of(loaders, [](TileLoader const& l) { return !l.staged; });
    gemm_pipeline(kernel, f, tile_k, stages, steps);

    // ---- epilogue: each mma tile's lane holds rows r, r + 8 and columns 2·(lane % 4) + {0, 1}
    kernel.comment("epilogue: f32 fragments to out");
    Reg const row_t = kernel.add(f.row0, kernel.add(kernel.mul(warp_row, warp_m), kernel.shr(lane, 2)));
    Reg const col_t = kernel.add(f.col0, kernel.add(kernel.mul(warp_col, warp_n), kernel.shl(kernel.and_(lane, 3), 1)));
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
                std::array<Reg, 2> const d = c.bias ? std::array{kernel.add(fragment[0], bias[nt * 2]), kernel.add(fragment[1], bias[nt * 2 + 1])}
                                                    : std::array{fragment[0], fragment[1]};
                if (c.aligned) {
                    Reg const ok = both(kernel, row_ok, f.check_n ? col_ok[nt] : Reg{});
                    std::vector<Reg> const pair{d[0], d[1]};
                    auto const store = [&] { kernel.st_vector(Space::global, Type::f32, Address(at, nt * 32), pair); };
                    if (ok.valid()) kernel.predicated(ok, true, store);
                    else store();
                } else {
                    for (unsigned e = 0; e < 2; ++e) {
                        Reg const ok = both(kernel, row_ok, f.check_n ? col_ok[nt * 2 + e] : Reg{});
                        auto const store = [&] {
                            kernel.st(Space::global, Type::f32, Address(at, nt * 32 + e * 4), d[e]);
                        };
                        if (ok.valid()) kernel.predicated(ok, true, store);
                        else store();
                    }
                }
            }
        }
    return kernel;
}

}  // namespace rayo::ptx::kernels
