// linear(x, w) with q4_k / q6_k weights for many rows of x: weight tiles decoded to f16 in shared
// memory and multiplied on tensor cores (mma.sync m16n8k16, f32 accumulation), x converted to f16
// once beforehand (gemm_activations).
//
// Block tile block_m (x rows) × block_n (weight rows) × 64 (k), 8 warps as 2 (m) × 4 (n), two stages.
// Per k step:
//   1. the next x tile goes global -> shared by cp.async (16 bytes a thread, zero-filled past m);
//   2. the next weight tile's raw bytes are loaded into registers (each thread: one row, 64/TPR values,
//      TPR = 256/block_n threads per row);
//   3. the current tiles are multiplied: fragments by ldmatrix, mma.sync;
//   4. the raw bytes are decoded in f32 (as dequantize does: q4_k d·sc·q − dmin·m, q6_k d·sc·(q − 32),
//      here with one fma) and stored as f16 into the other stage;
//   5. cp.async.wait_group 0, bar.sync: one barrier per step.
// Tiles are 64 f16 (128 bytes) a row, rows stored with their 16-byte chunks XOR-swizzled by row % 8,
// so neither the 16-byte stores nor ldmatrix's eight rows meet a bank twice.
// A 64-value step of k is a quarter of a block: q4_k chunk c = quarter (qs bytes [32c, 32c+32) and the
// header), q6_k values 128h + 64p + [0, 64) (h, p = quarter / 2, quarter % 2) which use the low or high
// nibbles of ql[64h, 64h+64) and two of the four bit pairs of qh[32h, 32h+32).
#include <array>
#include <string>
#include <vector>

#include "rayo/ptx/kernels/quant.hpp"
#include "ptx/kernels/quant_words.hpp"

namespace rayo::ptx::kernels {

namespace {

using quant_detail::halves_as_float;

constexpr unsigned k_step = quant_gemm_k_step;  // 64 values, 128 bytes of f16 per tile row
constexpr unsigned row_bytes = k_step * 2;
constexpr unsigned threads = quant_gemm_threads;
constexpr unsigned warps_m = 2, warps_n = 4;

// cp.async.cg of 16 bytes with an offset on the shared address; `source_bytes` 0 zero-fills.
void cp_async16(Kernel& k, Reg shared, std::int64_t shared_offset, Reg global, Reg source_bytes) {
    k.instruction("cp.async.cg.shared.global",
                  {AddressUse{Address(shared, shared_offset)}, AddressUse{Address(global)}, ImmUse{16, Type::u32},
                   RegUse{source_bytes, Type::u32, Access::read}},
                  {.compute_capability = 80});
}

// ldmatrix .x4 with an offset on the shared address (the builder's takes a bare register).
std::array<Reg, 4> ldmatrix_x4(Kernel& k, Reg shared, std::int64_t offset) {
    std::array<Reg, 4> r{};
    VectorUse v;
    for (auto& x : r) {
        x = k.reg(Type::b32);
        v.elements.push_back({x, Type::b32, Access::write});
    }
    k.instruction("ldmatrix.sync.aligned.m8n8.x4.shared.b16", {std::move(v), AddressUse{Address(shared, offset)}},
                  {.compute_capability = 75});
    return r;
}

// Two f32 as f16x2, `lo` in the low half (the earlier k).
Reg pack_f16x2(Kernel& k, Reg lo, Reg hi) {
    Reg r = k.reg(Type::b32);
    k.instruction("cvt.rn.f16x2.f32",
                  {RegUse{r, Type::f16x2, Access::write}, RegUse{hi, Type::f32, Access::read},
                   RegUse{lo, Type::f32, Access::read}},
                  {.compute_capability = 80});
    return r;
}

// The raw bytes one thread decodes for one k step.
struct RawTile {
    Reg quarter;                // .u32: k step % 4, the quarter of the block
    std::vector<Reg> words;     // q4_k: header (4) then qs; q6_k: aligned words of ql low, ql high, qh
    Reg misaligned;             // q6_k: .pred, the block starts at 2 mod 4
    std::array<Reg, 2> scales;  // q6_k: .s32
    Reg d_half;                 // q6_k: .f16
};

struct WeightThread {
    Reg row;                         // .u64: the thread's weight row (clamped to n − 1)
    Reg part;                        // .u32: which B-value run of the 32 in each half of the step
    unsigned run;                    // B: values per run (16 or 8); the thread decodes 2 runs
    Reg store_low;                   // .u32: shared offset of the low run's first chunk in the tile (row and swizzle)
    std::vector<Reg> chunk_offsets;  // .u32: per 16-byte chunk, low run then high run
};

RawTile load_raw(Kernel& k, DType type, WeightThread const& t, Reg step) {
    RawTile raw;
    raw.quarter = k.and_(step, 3);
    std::uint32_t const block_bytes = type == DType::q4_k ? 144 : 210;
    Reg const block = k.add(t.row, k.mul_wide(k.shr(step, 2), block_bytes));
    if (type == DType::q4_k) {
        for (Reg r : k.ld_vector(Space::global, Type::u32, 4, Address(block), Cache::nc)) raw.words.push_back(r);
        // qs bytes [32c + B·part, +B)
        Reg const at = k.add(block, k.mul_wide(k.fma(raw.quarter, 32, k.mul(t.part, t.run)), 1));
        for (Reg r : k.ld_vector(Space::global, Type::u32, static_cast<int>(t.run / 4), Address(at, 16), Cache::nc))
            raw.words.push_back(r);
        return raw;
    }
    // q6_k: h = quarter / 2; runs at ql[64h + B·part], ql[64h + 32 + B·part], qh[32h + B·part].
    Reg const h = k.shr(raw.quarter, 1);
    Reg const misalignment = k.and_(block, 2);
    raw.misaligned = k.setp(Cmp::ne, misalignment, 0);
    Reg const aligned = k.sub(block, misalignment);
    Reg const run_start = k.mul(t.part, t.run);
    Reg const ql = k.add(aligned, k.mul_wide(k.fma(h, 64, run_start), 1));
    Reg const qh = k.add(aligned, k.mul_wide(k.fma(h, 32, run_start), 1));
    unsigned const words = t.run / 4;
    auto const segment = [&](Reg base, int offset) {
        for (unsigned w = 0; w < words; ++w)
            raw.words.push_back(
                k.ld(Space::global, Type::u32, Address(base, offset + 4 * static_cast<int>(w)), Cache::nc));
        Reg const next = k.reg(Type::u32);  // needed (and loaded) only for a misaligned block
        Address const after(base, offset + 4 * static_cast<int>(words));
        k.predicated(raw.misaligned, true, [&] { k.ld(next, Space::global, Type::u32, after, Cache::nc); });
        raw.words.push_back(next);
    };
    segment(ql, 0);
    segment(ql, 32);
    segment(qh, 128);
    // scales[4·quarter + (B·part)/16] and that + 2
    Reg const sc = k.add(block, k.mul_wide(k.add(k.shl(raw.quarter, 2), k.shr(run_start, 4)), 1));
    raw.scales = {k.ld(Space::global, Type::s8, Address(sc, 192), Cache::nc),
                  k.ld(Space::global, Type::s8, Address(sc, 194), Cache::nc)};
    raw.d_half = k.reg(Type::f16);
    k.ld(raw.d_half, Space::global, Type::b16, Address(block, 208), Cache::nc);
    return raw;
}

// The thread's two runs of B values (f32): low run (tile k B·part + t) and high run (32 + B·part + t).
std::array<std::vector<Reg>, 2> decode(Kernel& k, DType type, WeightThread const& t, RawTile const& raw) {
    std::array<std::vector<Reg>, 2> runs;
    unsigned const words = t.run / 4;
    if (type == DType::q4_k) {
        auto const [d, dmin] = halves_as_float(k, raw.words[0]);
        // get_scale_min_k4 for sub-blocks 2c, 2c+1 (c = quarter), as in quant_gemv.cpp.
        Reg const sc_low = k.and_(raw.words[1], 0x3f3f3f3f);
        Reg const m_low = k.and_(raw.words[2], 0x3f3f3f3f);
        Reg const sc_high = k.or_(k.and_(raw.words[3], 0x0f0f0f0f), k.and_(k.shr(raw.words[1], 2), 0x30303030));
        Reg const m_high =
            k.or_(k.and_(k.shr(raw.words[3], 4), 0x0f0f0f0f), k.and_(k.shr(raw.words[2], 2), 0x30303030));
        Reg const upper = k.setp(Cmp::ge, raw.quarter, 2);
        Reg const scw = k.selp(sc_high, sc_low, upper, Type::u32);
        Reg const mw = k.selp(m_high, m_low, upper, Type::u32);
        Reg const shift = k.shl(k.and_(raw.quarter, 1), 4);
        Reg const shift_hi = k.add(shift, 8);
        std::array<Reg, 2> const scale{k.mul(d, k.cvt(Type::f32, k.bfe(scw, shift, 8))),
                                       k.mul(d, k.cvt(Type::f32, k.bfe(scw, shift_hi, 8)))};
        std::array<Reg, 2> const neg_min{k.neg(k.mul(dmin, k.cvt(Type::f32, k.bfe(mw, shift, 8)))),
                                         k.neg(k.mul(dmin, k.cvt(Type::f32, k.bfe(mw, shift_hi, 8))))};
        for (int r = 0; r < 2; ++r)
            for (unsigned w = 0; w < words; ++w)
                for (int b = 0; b < 4; ++b) {
                    Reg const q = k.cvt(Type::f32, k.bfe(raw.words[4 + w], 8 * b + 4 * r, 4));
                    runs[r].push_back(k.fma(scale[r], q, neg_min[r]));
                }
        return runs;
    }
    Reg const d = k.cvt(Type::f32, raw.d_half);
    Reg const p4 = k.shl(k.and_(raw.quarter, 1), 2);  // nibble p of ql: shift 4p; qh bit pairs 2·(2p), 2·(2p+1)
    Reg const p4_hi = k.add(p4, 2);
    Reg const select = k.selp(0x5432, 0x3210, raw.misaligned, Type::u32);
    auto const word = [&](unsigned segment, unsigned w) {
        std::size_t const at = segment * (words + 1) + w;
        return k.prmt(raw.words[at], raw.words[at + 1], select);
    };
    for (int r = 0; r < 2; ++r) {
        Reg const scale = k.mul(d, k.cvt(Type::f32, raw.scales[r]));
        for (unsigned w = 0; w < words; ++w) {
            Reg const low = k.and_(k.shr(word(static_cast<unsigned>(r), w), p4), 0x0f0f0f0f);
            Reg const high = k.shl(k.and_(k.shr(word(2, w), r == 0 ? p4 : p4_hi), 0x03030303), 4);
            Reg const codes = k.or_(low, high);
            for (int b = 0; b < 4; ++b) {
                Reg const q = k.reg(Type::s32);
                k.sub(q, k.bfe(codes, 8 * b, 8), 32);
                runs[r].push_back(k.mul(scale, k.cvt(Type::f32, q)));
            }
        }
    }
    return runs;
}

void store_runs(Kernel& k, WeightThread const& t, std::array<std::vector<Reg>, 2> const& runs, Reg weight_tiles,
                std::int64_t stage_offset) {
    unsigned const chunks = t.run / 8;
    for (int r = 0; r < 2; ++r)
        for (unsigned c = 0; c < chunks; ++c) {
            std::array<Reg, 4> packed{};
            for (int e = 0; e < 4; ++e) packed[e] = pack_f16x2(k, runs[r][8 * c + 2 * e], runs[r][8 * c + 2 * e + 1]);
            Reg const at = k.add(weight_tiles, t.chunk_offsets[r * chunks + c]);
            k.st_vector(Space::shared, Type::b32, Address(at, stage_offset), packed);
        }
}

}  // namespace

Kernel gemm_activations(GemmActivationsConfig const& config) {
    if (config.threads == 0 || config.threads % 32 != 0 || config.threads > 1024)
        throw BuildError("ptx kernels: gemm_activations needs a multiple of 32 threads up to 1024, not " +
                         std::to_string(config.threads));
    Kernel k("rayo_quant_gemm_activations_f16");
    k.max_threads(config.threads);
    Reg const x = k.cvta_to_global(k.param(Type::u64, "x"));
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const count = k.param(Type::u32, "count");
    Reg const i = k.global_thread_index();
    Label const done = k.label();
    k.bra_if(k.setp(Cmp::ge, i, k.shr(count, 3)), done);
    Reg const from = k.add(x, k.mul_wide(i, 32));
    std::vector<Reg> const a = k.ld_vector(Space::global, Type::f32, 4, Address(from), Cache::nc);
    std::vector<Reg> const b = k.ld_vector(Space::global, Type::f32, 4, Address(from, 16), Cache::nc);
    std::array<Reg, 4> const packed{pack_f16x2(k, a[0], a[1]), pack_f16x2(k, a[2], a[3]), pack_f16x2(k, b[0], b[1]),
                                    pack_f16x2(k, b[2], b[3])};
    k.st_vector(Space::global, Type::b32, Address(k.add(out, k.mul_wide(i, 16))), packed);
    k.place(done);
    return k;
}

namespace {

// quant_gemm's body, one stage per member function. The builder allocates registers as it emits,
// so the stages run in the order the kernel lists them (their numbering follows that order).
struct QuantGemmBuilder {
    QuantGemmBuilder(Kernel& kernel, DType weight, unsigned block_m, unsigned block_n)
        : k(kernel),
          type(weight),
          bm(block_m),
          bn(block_n),
          warp_m(bm / warps_m),
          warp_n(bn / warps_n),
          mt(warp_m / 16),
          nt(warp_n / 8),
          x_tile(bm * row_bytes),
          w_tile(bn * row_bytes),
          x_stage{0, x_tile},
          w_stage{2 * static_cast<std::int64_t>(x_tile), 2 * static_cast<std::int64_t>(x_tile) + w_tile} {}

    // The whole kernel body after the kernel's declaration and thread bound.
    void emit() {
        declare_parameters();
        place_block();
        x_tile_addresses();
        weight_thread();
        fragment_addresses();
        zero_accumulators();
        prologue();
        main_loop();
        epilogue();
    }

    // Declares the kernel's parameters, the pointers converted to global addresses.
    void declare_parameters() {
        x = k.cvta_to_global(k.param(Type::u64, "x"));
        w = k.cvta_to_global(k.param(Type::u64, "w"));
        out = k.cvta_to_global(k.param(Type::u64, "out"));
        m = k.param(Type::u32, "m");
        n = k.param(Type::u32, "n");
        kdim = k.param(Type::u32, "k");
        shared = k.shared_address(k.dynamic_shared(128));
    }

    // The thread's lane and warp, the block's first x row and weight row, and the k step count.
    void place_block() {
        tid = k.special(Special::tid_x);
        lane = k.and_(tid, 31);
        warp = k.shr(tid, 5);
        m0 = k.mul(k.special(Special::ctaid_y), bm);
        n0 = k.mul(k.special(Special::ctaid_x), bn);
        steps = k.shr(kdim, 6);
    }

    // ---- x tile: chunk (row tid/8 + 32i, column chunk tid%8) per thread
    void x_tile_addresses() {
        x_chunks = bm * 8 / threads;
        Reg const x_col = k.and_(tid, 7);
        Reg const x_row0 = k.shr(tid, 3);
        x_shared = k.add(shared, k.fma(x_row0, row_bytes, k.shl(k.xor_(x_col, k.and_(x_row0, 7)), 4)));
        Reg const last_row = k.sub(m, 1);
        for (unsigned i = 0; i < x_chunks; ++i) {
            Reg const row = k.add(m0, k.add(x_row0, 32 * i));
            x_bytes.push_back(k.selp(16, 0, k.setp(Cmp::lt, row, m), Type::u32));
            Reg const element = k.add(k.mul_wide(k.min(row, last_row), kdim), k.mul_wide(x_col, 8));
            x_from.push_back(k.add(x, k.shl(element, 1)));
        }
    }

    // Starts the copies of k step `step`'s x tile into `stage` (one cp.async group).
    void issue_x(Reg step, int stage) {
        Reg const advance = k.mul_wide(step, row_bytes);
        for (unsigned i = 0; i < x_chunks; ++i)
            cp_async16(k, x_shared, x_stage[stage] + 32 * i * row_bytes, k.add(x_from[i], advance), x_bytes[i]);
        k.cp_async_commit();
    }

    // ---- weight tile: row tid / TPR, run part tid % TPR
    void weight_thread() {
        unsigned const per_row = threads / bn;
        wt.run = 32 / per_row;
        Reg const w_row = k.shr(tid, per_row == 2 ? 1 : 2);
        wt.part = k.and_(tid, per_row - 1);
        std::uint32_t const block_bytes = type == DType::q4_k ? 144 : 210;
        Reg const blocks_per_row = k.shr(kdim, 8);
        Reg const n_row = k.min(k.add(n0, w_row), k.sub(n, 1));
        wt.row = k.add(w, k.mul(k.cvt(Type::u64, n_row), k.mul_wide(blocks_per_row, block_bytes)));
        Reg const w_row_base = k.mul(w_row, row_bytes);
        Reg const w_swizzle = k.and_(w_row, 7);
        unsigned const chunks = wt.run / 8;
        for (unsigned r = 0; r < 2; ++r)
            for (unsigned c = 0; c < chunks; ++c) {
                // chunk (32r + B·part)/8 + c of the row
                Reg const chunk = k.add(k.mul(wt.part, chunks), 4 * r + c);
                wt.chunk_offsets.push_back(k.add(w_row_base, k.shl(k.xor_(chunk, w_swizzle), 4)));
            }
        weight_tiles = shared;
    }

    // ---- fragments: per lane, the ldmatrix row addresses for each k16 step of a tile
    void fragment_addresses() {
        wm = k.shr(warp, 2);
        wn = k.and_(warp, 3);
        Reg const swz = k.and_(lane, 7);
        Reg const a_row = k.fma(wm, warp_m, k.and_(lane, 15));
        Reg const b_row = k.add(k.mul(wn, warp_n), k.add(k.and_(lane, 7), k.shl(k.shr(lane, 4), 3)));
        for (int ks = 0; ks < 4; ++ks) {
            Reg const a_chunk = k.xor_(k.add(k.shr(lane, 4), 2 * ks), swz);
            a_at[ks] = k.add(shared, k.fma(a_row, row_bytes, k.shl(a_chunk, 4)));
            Reg const b_chunk = k.xor_(k.add(k.and_(k.shr(lane, 3), 1), 2 * ks), swz);
            b_at[ks] = k.add(shared, k.fma(b_row, row_bytes, k.shl(b_chunk, 4)));
        }
    }

    // The warp tile's f32 accumulators, zeroed: 4 per mma tile.
    void zero_accumulators() {
        acc.resize(mt * nt);
        for (auto& c : acc)
            for (auto& r : c) r = k.mov(Type::f32, 0.0f);
    }

    // The MMAs of one k step in `stage`: fragments by ldmatrix, then mma.sync.
    void multiply(int stage) {
        for (int ks = 0; ks < 4; ++ks) {
            std::vector<std::array<Reg, 4>> a(mt);
            for (unsigned i = 0; i < mt; ++i) a[i] = ldmatrix_x4(k, a_at[ks], x_stage[stage] + i * 16 * row_bytes);
            std::vector<std::array<Reg, 2>> b(nt);
            for (unsigned p = 0; p < nt / 2; ++p) {
                auto const r = ldmatrix_x4(k, b_at[ks], w_stage[stage] + p * 16 * row_bytes);
                b[2 * p] = {r[0], r[1]};
                b[2 * p + 1] = {r[2], r[3]};
            }
            for (unsigned i = 0; i < mt; ++i)
                for (unsigned j = 0; j < nt; ++j)
                    k.mma_m16n8k16(Type::f16, acc[i * nt + j], a[i], b[j], acc[i * nt + j]);
        }
    }

    // The end of a k step: the x copies have landed, and the block's threads meet.
    void finish_step() {
        k.cp_async_wait(0);
        k.bar_sync();
    }

    // ---- prologue: step 0 into stage 0
    void prologue() {
        Reg const zero = k.mov(Type::u32, 0);
        issue_x(zero, 0);
        store_runs(k, wt, decode(k, type, wt, load_raw(k, type, wt, zero)), weight_tiles, w_stage[0]);
        finish_step();
    }

    // ---- main loop, two steps per turn so each stage's offsets are immediates (steps is a multiple of 4)
    void main_loop() {
        Reg const last_step = k.sub(steps, 1);
        Reg const step = k.reg(Type::u32);
        k.for_range(step, 0, steps, 2, [&] {
            for (int stage = 0; stage < 2; ++stage) {
                // The step after the last re-loads the last one into the idle stage: no branch needed.
                Reg const next = k.min(k.add(step, stage + 1), last_step);
                issue_x(next, 1 - stage);
                RawTile const raw = load_raw(k, type, wt, next);
                multiply(stage);
                store_runs(k, wt, decode(k, type, wt, raw), weight_tiles, w_stage[1 - stage]);
                finish_step();
            }
        });
    }

    // ---- epilogue: c0, c1 at (row g, columns 2·(lane%4) + 0, 1), c2, c3 at row g + 8
    void epilogue() {
        Reg const row0 = k.add(m0, k.fma(wm, warp_m, k.shr(lane, 2)));
        Reg const col0 = k.add(n0, k.fma(wn, warp_n, k.shl(k.and_(lane, 3), 1)));
        Reg const base = k.add(out, k.shl(k.add(k.mul_wide(row0, n), k.cvt(Type::u64, col0)), 2));
        Reg const rows8 = k.mul_wide(n, 8 * 4);
        std::vector<std::array<Reg, 2>> row_ok(mt);
        std::vector<std::array<Reg, 2>> col_ok(nt);
        for (unsigned i = 0; i < mt; ++i)
            for (int h = 0; h < 2; ++h) row_ok[i][h] = k.setp(Cmp::lt, k.add(row0, 16 * i + 8 * h), m);
        for (unsigned j = 0; j < nt; ++j)
            for (int e = 0; e < 2; ++e) col_ok[j][e] = k.setp(Cmp::lt, k.add(col0, 8 * j + e), n);
        Reg at = base;
        for (unsigned i = 0; i < mt; ++i)
            for (int h = 0; h < 2; ++h) {
                for (unsigned j = 0; j < nt; ++j)
                    for (int e = 0; e < 2; ++e)
                        k.predicated(k.and_pred(row_ok[i][h], col_ok[j][e]), true, [&] {
                            k.st(Space::global, Type::f32, Address(at, 4 * (8 * j + e)), acc[i * nt + j][2 * h + e]);
                        });
                if (i + 1 < mt || h == 0) at = k.add(at, rows8);
            }
    }

    Kernel& k;
    DType const type;
    unsigned const bm, bn;
    unsigned const warp_m, warp_n;      // warp tile
    unsigned const mt, nt;              // mma tiles per warp
    unsigned const x_tile, w_tile;      // bytes of one stage's x and weight tiles
    std::int64_t const x_stage[2];      // shared offsets of the two stages' x tiles
    std::int64_t const w_stage[2];      // ... and of their weight tiles
    Reg x, w, out, m, n, kdim, shared;  // parameters and the dynamic shared memory
    Reg tid, lane, warp, m0, n0, steps;
    // The thread's x chunks: how many, their shared address in stage 0, global addresses, copy sizes.
    unsigned x_chunks = 0;
    Reg x_shared;
    std::vector<Reg> x_from, x_bytes;
    WeightThread wt;
    Reg weight_tiles;
    Reg wm, wn;  // the warp's place in the block's 2 x 4 warps
    std::array<Reg, 4> a_at{}, b_at{};
    std::vector<std::array<Reg, 4>> acc;  // per mma tile (i, j) at i * nt + j
};

}  // namespace

Kernel quant_gemm(QuantGemmConfig const& config) {
    DType const type = config.weight;
    if (type != DType::q4_k && type != DType::q6_k)
        throw BuildError("ptx kernels: quant_gemm takes q4_k or q6_k weights, not " + std::string(to_string(type)));
    if ((config.block_m != 64 && config.block_m != 128) || (config.block_n != 64 && config.block_n != 128))
        throw BuildError("ptx kernels: quant_gemm tiles are 64 or 128 on each side, not " +
                         std::to_string(config.block_m) + " x " + std::to_string(config.block_n));
    unsigned const bm = config.block_m, bn = config.block_n;

    Kernel k("rayo_quant_gemm_" + std::string(to_string(type)) + "_" + std::to_string(bm) + "x" + std::to_string(bn));
    k.max_threads(threads);
    QuantGemmBuilder(k, type, bm, bn).emit();
    return k;
}

}  // namespace rayo::ptx::kernels
