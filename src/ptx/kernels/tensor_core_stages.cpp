// The stages of the tensor-core kernels (tensor_core_stages.hpp).
#include "ptx/kernels/tensor_core_stages.hpp"

#include <algorithm>
#include <bit>
#include <span>
#include <string>
#include <utility>

#include "ptx/kernels/gemm_addressing.hpp"

namespace rayo::ptx::kernels::gemm_detail {

Swizzle::Swizzle(unsigned chunks_per_row) : chunks(chunks_per_row) {
    unsigned const width = std::min(chunks_per_row, 8u);
    shift = static_cast<unsigned>(std::countr_zero(8u / width));
    mask = width - 1;
}

Reg Swizzle::offset(Kernel& k, Reg row, Reg chunk) const {
    Reg const pattern = k.and_(k.shr(row, shift), mask);
    return k.add(k.mul(row, chunks * 16), k.shl(k.xor_(chunk, pattern), 4));
}

TensorCoreBlock TensorCoreBlock::of(Kernel& k, GemmConfig const& c) {
    TensorCoreBlock b;
    b.tile_m = c.tile.m;
    b.tile_n = c.tile.n;
    b.tile_k = c.tile.k;
    b.threads = c.warps * 32;
    b.a_bytes = c.tile.m * c.tile.k * 2;
    b.stage_bytes = b.a_bytes + c.tile.n * c.tile.k * 2;
    b.element = c.b;
    b.grid = detail::gemm_warp_grid(c);
    b.smem = k.shared_address(k.dynamic_shared(128));
    b.tid = k.special(Special::tid_x);
    b.lane = k.and_(b.tid, 31);
    Reg const warp = k.shr(b.tid, 5);
    b.warp_row = k.rem(warp, b.grid.m);
    b.warp_col = k.div(warp, b.grid.m);
    return b;
}

TileLoader k_contiguous_loader(Kernel& kernel, TensorCoreBlock const& block, KContiguousOperand const& o,
                               Swizzle const& swizzle) {
    TileLoader l;
    l.source = o.type;
    l.staged = o.type == Type::f32 || !o.aligned;
    l.element_wise = !o.aligned;
    l.check_k = o.check_k;
    unsigned const chunks = block.tile_k / 8, bytes = static_cast<unsigned>(bytes_of(o.type));
    l.row_step = block.threads / chunks;
    l.count = o.rows / l.row_step;
    l.row_step_bytes = l.row_step * chunks * 16;
    l.base = o.tensor;
    Reg const row = kernel.div(block.tid, chunks), chunk = kernel.rem(block.tid, chunks);
    l.index = kernel.shl(chunk, 3);
    Reg const global_row = kernel.add(o.origin, row);
    l.address = address_2d(kernel, o.tensor, global_row, o.k, l.index, bytes);
    l.chunk_stride = kernel.mul_wide(o.k, l.row_step * bytes);
    l.k_step_bytes = block.tile_k * bytes;
    l.shared = kernel.add(swizzle.offset(kernel, row, chunk), kernel.add(block.smem, o.region));
    for (unsigned j = 0; j < l.count; ++j)
        l.fixed_ok.push_back(o.check_rows ? kernel.setp(Cmp::lt, kernel.add(global_row, j * l.row_step), o.extent)
                                          : Reg{});
    return l;
}

TileCopies::TileCopies(Kernel& k, TensorCoreBlock const& block, std::vector<TileLoader> loaders)
    : k_(&k), block_(block), loaders_(std::move(loaders)) {
    for (auto& l : loaders_)
        if (l.staged)
            for (unsigned j = 0; j < l.count; ++j) {
                std::vector<Reg> v;
                for (unsigned e = 0; e < 8; ++e) v.push_back(k.reg(l.source == Type::f32 ? Type::f32 : Type::u32));
                l.values.push_back(std::move(v));
            }
}

bool TileCopies::any_staged() const {
    return std::ranges::any_of(loaders_, [](TileLoader const& l) { return l.staged; });
}

bool TileCopies::any_cp_async() const {
    return std::ranges::any_of(loaders_, [](TileLoader const& l) { return !l.staged; });
}

// Whether element `e` of chunk `j` is inside the matrix, for a k step with `k_left` = k − its
// first k (> 0). Element-wise loaders check every element; the others whole chunks (e = 0), or
// half-chunks of f32 (e = 4).
Reg TileCopies::element_ok(TileLoader const& l, unsigned j, unsigned e, Reg k_left) {
    Kernel& kernel = *k_;
    if (l.k_rows) {
        Reg const k_ok = l.check_k ? kernel.setp(Cmp::lt, kernel.add(l.index, j * l.row_step), k_left) : Reg{};
        Reg n_ok = l.fixed_ok[0];
        if (l.element_wise && l.check_columns) n_ok = kernel.setp(Cmp::lt, kernel.add(l.column, e), l.columns);
        return both(kernel, k_ok, n_ok);
    }
    Reg const k_ok = l.check_k ? kernel.setp(Cmp::lt, e == 0 ? l.index : kernel.add(l.index, e), k_left) : Reg{};
    return both(kernel, l.fixed_ok[j], k_ok);
}

void TileCopies::issue(unsigned slot, Reg k_left) {
    Kernel& kernel = *k_;
    for (auto& l : loaders_) {
        Reg address = l.address;
        for (unsigned j = 0; j < l.count; ++j) {
            if (j > 0) address = kernel.add(address, l.chunk_stride);
            if (!l.staged) {
                Reg const dst = kernel.add(l.shared, slot * block_.stage_bytes + j * l.row_step_bytes);
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
            if (l.source == Type::f32 && !l.element_wise) {
                for (unsigned h = 0; h < 2; ++h) {
                    std::vector<Reg> const half(v.begin() + h * 4, v.begin() + h * 4 + 4);
                    Reg const ok = element_ok(l, j, h * 4, k_left);
                    if (ok.valid())
                        for (Reg r : half) kernel.mov(r, 0.0f);
                    auto const load = [&] {
                        kernel.ld_vector(half, Space::global, Type::f32, Address(address, h * 16), Cache::nc);
                    };
                    if (ok.valid())
                        kernel.predicated(ok, true, load);
                    else
                        load();
                }
                continue;
            }
            Type const type = l.source == Type::f32 ? Type::f32 : Type::u16;
            unsigned const bytes = static_cast<unsigned>(bytes_of(type));
            for (unsigned e = 0; e < 8; ++e) {
                Reg const ok = element_ok(l, j, e, k_left);
                auto const load = [&] { kernel.ld(v[e], Space::global, type, Address(address, e * bytes), Cache::nc); };
                if (ok.valid()) {
                    if (type == Type::f32)
                        kernel.mov(v[e], 0.0f);
                    else
                        kernel.mov(v[e], 0);
                    kernel.predicated(ok, true, load);
                } else {
                    load();
                }
            }
        }
    }
}

void TileCopies::store_staged(unsigned slot) {
    Kernel& kernel = *k_;
    for (auto& l : loaders_) {
        if (!l.staged) continue;
        for (unsigned j = 0; j < l.count; ++j) {
            auto const& v = l.values[j];
            std::vector<Reg> packed;
            for (unsigned p = 0; p < 4; ++p) {
                Reg const word = kernel.reg(Type::b32);
                if (l.source == Type::f32) {  // cvt.rn.{f16x2,bf16x2}.f32 d, high, low
                    Type const pair = block_.element == Type::bf16 ? Type::bf16x2 : Type::f16x2;
                    kernel.instruction("cvt.rn." + std::string(name_of(pair)) + ".f32",
                                       {RegUse{word, pair, Access::write}, RegUse{v[2 * p + 1], Type::f32},
                                        RegUse{v[2 * p], Type::f32}},
                                       {.compute_capability = 80});
                } else {
                    kernel.mov(word, kernel.prmt(v[2 * p], v[2 * p + 1], 0x5410));  // low halves of two words
                }
                packed.push_back(word);
            }
            kernel.st_vector(Space::shared, Type::b32,
                             Address(l.shared, slot * block_.stage_bytes + j * l.row_step_bytes), packed);
        }
    }
}

void TileCopies::advance() {
    for (auto& l : loaders_) {
        if (l.k_rows)
            k_->add(l.address, l.address, l.k_step);
        else
            k_->add(l.address, l.address, l.k_step_bytes);
    }
}

WarpMma::WarpMma(Kernel& kernel, TensorCoreBlock const& block, bool b_k_rows, Swizzle const& a_swizzle,
                 Swizzle const& b_swizzle)
    : k_(&kernel), block_(block), b_k_rows_(b_k_rows) {
    warp_m = block.tile_m / block.grid.m;
    warp_n = block.tile_n / block.grid.n;
    m_tiles = warp_m / 16;
    n_tiles = warp_n / 8;
    Reg const lane = block.lane, smem = block.smem;
    kernel.comment("ldmatrix addresses");
    Reg const lane_row16 = kernel.and_(lane, 15), lane_half = kernel.shr(lane, 4);
    // a: per 16-wide k slice, the shared address in slot 0
    Reg const a_row = kernel.add(kernel.mul(block.warp_row, warp_m), lane_row16);
    for (unsigned ks = 0; ks < block.tile_k / 16; ++ks)
        a_offsets_.push_back(kernel.add(a_swizzle.offset(kernel, a_row, kernel.add(lane_half, ks * 2)), smem));
    // b transposed: per k slice; b as [k, n]: per pair of n tiles
    if (!b_k_rows) {
        // matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
        Reg const n_row =
            kernel.add(kernel.mul(block.warp_col, warp_n), kernel.add(kernel.and_(lane, 7), kernel.shl(lane_half, 3)));
        Reg const k_half = kernel.and_(kernel.shr(lane, 3), 1);
        for (unsigned ks = 0; ks < block.tile_k / 16; ++ks)
            b_offsets_.push_back(kernel.add(b_swizzle.offset(kernel, n_row, kernel.add(k_half, ks * 2)),
                                            kernel.add(smem, block.a_bytes)));
    } else {
        // .trans matrices: (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15)
        Reg const first_chunk = kernel.add(kernel.mul(block.warp_col, warp_n / 8), lane_half);
        for (unsigned np = 0; np < n_tiles / 2; ++np)
            b_offsets_.push_back(kernel.add(b_swizzle.offset(kernel, lane_row16, kernel.add(first_chunk, np * 2)),
                                            kernel.add(smem, block.a_bytes)));
    }
    acc.resize(m_tiles * n_tiles * 4);
    for (Reg& r : acc) r = kernel.mov(Type::f32, 0.0f);
}

void WarpMma::multiply(unsigned slot) {
    Kernel& kernel = *k_;
    unsigned const at = slot * block_.stage_bytes, tile_k = block_.tile_k, tile_n = block_.tile_n;
    for (unsigned ks = 0; ks < tile_k / 16; ++ks) {
        std::vector<std::vector<Reg>> a_frag, b_frag;
        for (unsigned mt = 0; mt < m_tiles; ++mt)
            a_frag.push_back(kernel.ldmatrix(4, false, kernel.add(a_offsets_[ks], at + mt * 16 * tile_k * 2)));
        for (unsigned np = 0; np < n_tiles / 2; ++np) {
            if (!b_k_rows_)
                b_frag.push_back(kernel.ldmatrix(4, false, kernel.add(b_offsets_[ks], at + np * 16 * tile_k * 2)));
            else
                b_frag.push_back(kernel.ldmatrix(4, true, kernel.add(b_offsets_[np], at + ks * 16 * tile_n * 2)));
        }
        for (unsigned mt = 0; mt < m_tiles; ++mt)
            for (unsigned nt = 0; nt < n_tiles; ++nt) {
                std::span<Reg const> const d(acc.data() + (mt * n_tiles + nt) * 4, 4);
                std::vector<Reg> const b{b_frag[nt / 2][(nt % 2) * 2], b_frag[nt / 2][(nt % 2) * 2 + 1]};
                kernel.mma_m16n8k16(block_.element, d, a_frag[mt], b, d);
            }
    }
}

}  // namespace rayo::ptx::kernels::gemm_detail
