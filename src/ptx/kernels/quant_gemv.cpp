// linear(x, w) with q4_k / q5_k / q6_k / q8_0 / q4_0 weights for a few rows of x: the weights are
// read once, as stored, and multiplied with int8 activation records (quantize_activations) by dp4a.
//
// One warp per weight row. Each lane multiplies 32 (q4_k) or 16 (q6_k) values of a block against
// every row of x, keeping one f32 accumulator per row of x:
//   q4_k: 8 lanes per block, lane j loads qs bytes [16j, 16j+16) with one 16-byte load and the
//         block's 16-byte header (d, dmin, 12 bytes of scales); Σ q·x per sub-block half by dp4a
//         (u8 x s8), times the 6-bit scales in int32 (≤ 2^25, exact), the min term from the
//         record's int16 sums by dp2a, then d·S − dmin·M in f32.
//   q5_k: q4_k's lanes and records; lane j also loads qh bytes [16s, 16s+16) (s = j%2) and ORs the
//         fifth bit of each code in (bit 2c of qh for the low nibbles, 2c+1 for the high ones).
//   q8_0 / q4_0: one lane per 32-value block, 32 blocks a warp step; the block's bytes (2-byte
//         aligned: 34 / 18-byte blocks) loaded as aligned words and re-assembled by prmt as q6_k's;
//         Σ w·x by dp4a (s8 × s8, or q4_0's u8 nibbles × s8 minus 8·Σx from the record's sums).
//   q6_k: 16 lanes per block, lane j takes ql bytes [64h + l0, +4) and [64h + 32 + l0, +4) and
//         qh [32h + l0, +4) (h = j/8, l0 = 4·(j%8)): 16 values, each in its own 16-value sub-block.
//         Blocks are 210 bytes, so a block is 2-byte aligned only: words are loaded from the 4-byte
//         aligned address below and, for blocks at 2 mod 4, re-assembled with the next word by prmt.
//         The 6-bit codes become signed q − 32 bytes (flip bit 5, then smear it into bits 6-7 by a
//         multiply with 6), so dp4a gives Σ (q − 32)·x directly.
// With the residual records every product is taken twice (main and residual quants of x) on the same
// weight registers. Blocks past the row's end (the last group of a row) re-read the last block with
// its weight scale zeroed, so the loop has no branches and loads no out-of-range memory.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "rayo/ptx/kernels/quant.hpp"
#include "ptx/kernels/quant_words.hpp"

namespace rayo::ptx::kernels {

namespace {

using quant_detail::halves_as_float;
using quant_detail::pack_bytes;

std::array<Reg, 4> as_array(std::vector<Reg> const& v) { return {v[0], v[1], v[2], v[3]}; }

// Σ_t w[t]·x[t] over four words of bytes: one dp4a chain.
Reg dot16(Kernel& k, std::array<Reg, 4> const& w, std::array<Reg, 4> const& x, bool weights_signed) {
    Reg sum = k.dp4a(w[0], x[0], 0, weights_signed, true);
    for (int t = 1; t < 4; ++t) sum = k.dp4a(w[t], x[t], sum, weights_signed, true);
    return sum;
}

struct Row {
    Reg weights;                    // .u64: the row's first block
    Space space = Space::global;    // where the records are: global (.u64 addresses) or shared (fused, .u32)
    Reg records;                    // .u64 / .u32: this lane's part of the first record of x row 0
    Reg valid_limit;                // .u32: blocks per row
    Reg last_block;                 // .u32: blocks per row − 1
    std::vector<Reg> x_row_offset;  // .u64 / .u32 per row of x: a · blocks_per_row · record bytes
};

// This lane's part of record `b` of x row 0.
Reg record_at(Kernel& k, Row const& row, Reg b, std::uint32_t record_bytes) {
    if (row.space == Space::shared) return k.add(row.records, k.mul(b, record_bytes));
    return k.add(row.records, k.mul_wide(b, record_bytes));
}

Cache record_cache(Row const& row) { return row.space == Space::shared ? Cache::none : Cache::nc; }

// ---- q4_k ---------------------------------------------------------------------------------------

struct Q4Weights {
    std::array<Reg, 4> header;
    std::array<Reg, 4> qs;
    std::optional<std::array<Reg, 4>> qh;  // q5_k: qh bytes [16s, 16s+16) of the block
    Reg valid;                             // .pred
    Reg record;                            // .u64: this lane's part of the block's record (x row 0)
};

struct Q4Lane {
    Reg j;            // lane within the block's eight
    Reg upper;        // .pred: sub-blocks 4..7 (c >= 2)
    Reg shift;        // byte of sub-block 2c within its scale word, in bits
    Reg shift_hi;     // and of 2c+1
    Reg qs_offset;    // .u64: 16 + 16j (q5_k: 48 + 16j)
    Reg qs_offset32;  // .u32: the same, for blocks in shared memory
    bool q5 = false;  // q5_k: the fifth bits from qh
    Reg qh_offset;    // q5_k .u64: 16 + 16·(j%2)
    Reg qh_offset32;  // q5_k .u32
    Reg high_shift;   // q5_k .u32: 2c, the qh bit of sub-block 2c
    std::uint32_t block_bytes = 144;
};

// The block at `at` (global .u64, or a streamed slot in shared memory, .u32).
Q4Weights read_q4_k(Kernel& k, Space space, Reg at, Q4Lane const& lane, Reg valid, Reg record) {
    Cache const cache = space == Space::global ? Cache::nc : Cache::none;
    Q4Weights w;
    w.valid = valid;
    w.header = as_array(k.ld_vector(space, Type::u32, 4, Address(at), cache));
    Reg const qs_offset = space == Space::global ? lane.qs_offset : lane.qs_offset32;
    w.qs = as_array(k.ld_vector(space, Type::u32, 4, Address(k.add(at, qs_offset)), cache));
    if (lane.q5) {
        Reg const qh_offset = space == Space::global ? lane.qh_offset : lane.qh_offset32;
        w.qh = as_array(k.ld_vector(space, Type::u32, 4, Address(k.add(at, qh_offset)), cache));
    }
    w.record = record;
    return w;
}

Q4Weights load_q4_k(Kernel& k, Row const& row, Q4Lane const& lane, Reg block, std::uint32_t record_bytes) {
    Reg const valid = k.setp(Cmp::lt, block, row.valid_limit);
    Reg const b = k.min(block, row.last_block);
    Reg const at = k.add(row.weights, k.mul_wide(b, lane.block_bytes));
    return read_q4_k(k, Space::global, at, lane, valid, record_at(k, row, b, record_bytes));
}

void multiply_q4_k(Kernel& k, Row const& row, Q4Lane const& lane, Q4Weights const& w, bool residual,
                   std::vector<Reg> const& acc) {
    auto const scales = halves_as_float(k, w.header[0]);
    Reg const d = k.selp(scales[0], 0.0f, w.valid, Type::f32);
    Reg const neg_dmin = k.selp(k.neg(scales[1]), 0.0f, w.valid, Type::f32);
    // The eight 6-bit scales and mins as words of bytes (get_scale_min_k4), then this lane's two.
    Reg const sc_low = k.and_(w.header[1], 0x3f3f3f3f);
    Reg const m_low = k.and_(w.header[2], 0x3f3f3f3f);
    Reg const sc_high = k.or_(k.and_(w.header[3], 0x0f0f0f0f), k.and_(k.shr(w.header[1], 2), 0x30303030));
    Reg const m_high = k.or_(k.and_(k.shr(w.header[3], 4), 0x0f0f0f0f), k.and_(k.shr(w.header[2], 2), 0x30303030));
    Reg const scw = k.selp(sc_high, sc_low, lane.upper, Type::u32);
    Reg const mw = k.selp(m_high, m_low, lane.upper, Type::u32);
    Reg const sc_lo = k.bfe(scw, lane.shift, 8);
    Reg const sc_hi = k.bfe(scw, lane.shift_hi, 8);
    Reg const mins = k.shr(mw, lane.shift);  // bytes 0, 1: the mins of sub-blocks 2c, 2c+1 (for dp2a.lo)
    std::array<Reg, 4> lo{}, hi{};
    for (int t = 0; t < 4; ++t) {
        lo[t] = k.and_(w.qs[t], 0x0f0f0f0f);
        hi[t] = k.and_(k.shr(w.qs[t], 4), 0x0f0f0f0f);
        if (w.qh) {  // q5_k: codes up to 31, so u8 × s8 dp4a stays exact
            Reg const bits = k.shr((*w.qh)[t], lane.high_shift);
            lo[t] = k.or_(lo[t], k.shl(k.and_(bits, 0x01010101), 4));
            hi[t] = k.or_(hi[t], k.shl(k.and_(bits, 0x02020202), 3));
        }
    }
    for (std::size_t a = 0; a < acc.size(); ++a) {
        Reg const rec = a == 0 ? w.record : k.add(w.record, row.x_row_offset[a]);
        auto const x_lo = as_array(k.ld_vector(row.space, Type::b32, 4, Address(rec), record_cache(row)));
        auto const x_hi = as_array(k.ld_vector(row.space, Type::b32, 4, Address(rec, 128), record_cache(row)));
        // sums (main, residual) as int16 pairs, then d_main, d_residual
        auto const slot = as_array(k.ld_vector(row.space, Type::b32, 4, Address(rec, 512), record_cache(row)));
        auto const term = [&](std::array<Reg, 4> const& xl, std::array<Reg, 4> const& xh, Reg sums, Reg x_scale) {
            Reg s = k.mul(dot16(k, lo, xl, false), sc_lo);
            s = k.fma(dot16(k, hi, xh, false), sc_hi, s);
            Reg const m = k.dp2a(sums, mins, 0, false, true, false);  // int16 sums × the u8 mins
            Reg const t = k.fma(k.cvt(Type::f32, s), d, k.mul(k.cvt(Type::f32, m), neg_dmin));
            k.fma(acc[a], t, x_scale, acc[a]);  // in place: the loop carries acc
        };
        term(x_lo, x_hi, slot[0], slot[2]);
        if (residual) {
            auto const r_lo = as_array(k.ld_vector(row.space, Type::b32, 4, Address(rec, 256), record_cache(row)));
            auto const r_hi = as_array(k.ld_vector(row.space, Type::b32, 4, Address(rec, 384), record_cache(row)));
            term(r_lo, r_hi, slot[1], slot[3]);
        }
    }
}

// ---- q6_k ---------------------------------------------------------------------------------------

struct Q6Weights {
    std::array<Reg, 4> q;       // signed bytes q − 32 for i = 0..3
    std::array<Reg, 4> scales;  // .s32
    Reg d;                      // .f32, zero past the row's end
    Reg record;
};

struct Q6Raw {
    Reg a0, a1, b0, b1, h0, h1;  // aligned words of ql (low part), ql (+32) and qh, and the words after
    Reg misaligned;              // .pred: the block starts at 2 mod 4
    std::array<Reg, 4> scales;
    Reg d_half;  // .f16
    Reg valid;
    Reg record;
};

// A lane's offsets within a q6_k block; .u64 for global blocks, .u32 for blocks in shared memory.
struct Q6Offsets {
    Reg ql;     // 64h + l0
    Reg qh;     // 128 + 32h + l0
    Reg scale;  // 192 + 8h + (j%8)/4; scale i at +2i
};

struct Q6Lane {
    Q6Offsets global;
    Q6Offsets shared;
};

// The block at `at` (global .u64, or a streamed slot in shared memory, .u32): both only 2-byte
// aligned, so words come from the 4-byte aligned address below.
Q6Raw read_q6_k(Kernel& k, Space space, Reg at, Q6Offsets const& offsets, Reg valid, Reg record) {
    Cache const cache = space == Space::global ? Cache::nc : Cache::none;
    Q6Raw w;
    w.valid = valid;
    Reg const misalignment = k.and_(at, 2);
    w.misaligned = k.setp(Cmp::ne, misalignment, 0);
    Reg const aligned = k.sub(at, misalignment);
    Reg const ql = k.add(aligned, offsets.ql);
    Reg const qh = k.add(aligned, offsets.qh);
    w.a0 = k.ld(space, Type::u32, Address(ql), cache);
    w.b0 = k.ld(space, Type::u32, Address(ql, 32), cache);
    w.h0 = k.ld(space, Type::u32, Address(qh), cache);
    // The word after is needed (and loaded) only for a misaligned block; prmt ignores it otherwise.
    w.a1 = k.reg(Type::u32);
    w.b1 = k.reg(Type::u32);
    w.h1 = k.reg(Type::u32);
    k.predicated(w.misaligned, true, [&] {
        k.ld(w.a1, space, Type::u32, Address(ql, 4), cache);
        k.ld(w.b1, space, Type::u32, Address(ql, 36), cache);
        k.ld(w.h1, space, Type::u32, Address(qh, 4), cache);
    });
    Reg const sc = k.add(at, offsets.scale);
    for (int i = 0; i < 4; ++i) w.scales[i] = k.ld(space, Type::s8, Address(sc, 2 * i), cache);
    w.d_half = k.reg(Type::f16);
    k.ld(w.d_half, space, Type::b16, Address(at, 208), cache);
    w.record = record;
    return w;
}

Q6Raw load_q6_k(Kernel& k, Row const& row, Q6Lane const& lane, Reg block, std::uint32_t record_bytes) {
    Reg const valid = k.setp(Cmp::lt, block, row.valid_limit);
    Reg const b = k.min(block, row.last_block);
    Reg const at = k.add(row.weights, k.mul_wide(b, 210));
    return read_q6_k(k, Space::global, at, lane.global, valid, record_at(k, row, b, record_bytes));
}

Q6Weights decode_q6_k(Kernel& k, Q6Raw const& raw) {
    Reg const select = k.selp(0x5432, 0x3210, raw.misaligned, Type::u32);
    Reg const wa = k.prmt(raw.a0, raw.a1, select);
    Reg const wb = k.prmt(raw.b0, raw.b1, select);
    // Bit 1 of each 2-bit pair becomes bit 5 of a code: flipping it makes the codes q ^ 32.
    Reg const h = k.xor_(k.prmt(raw.h0, raw.h1, select), static_cast<std::int64_t>(0xAAAAAAAAu));
    std::array<Reg, 4> flipped{
        k.or_(k.and_(wa, 0x0f0f0f0f), k.and_(k.shl(h, 4), 0x30303030)),
        k.or_(k.and_(wb, 0x0f0f0f0f), k.and_(k.shl(h, 2), 0x30303030)),
        k.or_(k.and_(k.shr(wa, 4), 0x0f0f0f0f), k.and_(h, 0x30303030)),
        k.or_(k.and_(k.shr(wb, 4), 0x0f0f0f0f), k.and_(k.shr(h, 2), 0x30303030)),
    };
    Q6Weights w;
    for (int i = 0; i < 4; ++i) {
        // (q ^ 32) as a signed 6-bit value, sign-extended per byte: bit 5 copied into bits 6 and 7.
        w.q[i] = k.or_(flipped[i], k.mul(k.and_(flipped[i], 0x20202020), 6));
    }
    w.scales = raw.scales;
    w.d = k.selp(k.cvt(Type::f32, raw.d_half), 0.0f, raw.valid, Type::f32);
    w.record = raw.record;
    return w;
}

void multiply_q6_k(Kernel& k, Row const& row, Q6Weights const& w, bool residual, std::vector<Reg> const& acc) {
    for (std::size_t a = 0; a < acc.size(); ++a) {
        Reg const rec = a == 0 ? w.record : k.add(w.record, row.x_row_offset[a]);
        auto const scales = k.ld_vector(row.space, Type::f32, 2, Address(rec, 512), record_cache(row));
        auto const term = [&](std::array<Reg, 4> const& x, Reg x_scale) {
            Reg s = k.mul(k.dp4a(w.q[0], x[0], 0), w.scales[0]);
            for (int i = 1; i < 4; ++i) s = k.fma(k.dp4a(w.q[i], x[i], 0), w.scales[i], s);
            k.fma(acc[a], k.cvt(Type::f32, s), k.mul(w.d, x_scale), acc[a]);  // in place: the loop carries acc
        };
        term(as_array(k.ld_vector(row.space, Type::b32, 4, Address(rec), record_cache(row))), scales[0]);
        if (residual)
            term(as_array(k.ld_vector(row.space, Type::b32, 4, Address(rec, 256), record_cache(row))), scales[1]);
    }
}

// ---- q8_0 / q4_0 ---------------------------------------------------------------------------------

// One lane's 32-value block: its codes as words of bytes in value order (q8_0: s8; q4_0: u8
// nibbles, low values then high), d (.f32, zero past the row's end) and the record slot.
struct SmallWeights {
    std::array<Reg, 8> codes;
    Reg d;
    Reg record;  // .u64: the block's record (x row 0)
};

// The block at `at`: qs (32 or 16 bytes) at byte 2, only 2-byte aligned, so read as the aligned
// words below it and, for blocks whose qs start at 2 mod 4, re-assembled with the halfword after.
SmallWeights load_small(Kernel& k, DType type, Row const& row, Reg block, std::uint32_t record_bytes) {
    bool const q8 = type == DType::q8_0;
    unsigned const words = q8 ? 8 : 4;
    Reg const valid = k.setp(Cmp::lt, block, row.valid_limit);
    Reg const b = k.min(block, row.last_block);
    Reg const at = k.add(row.weights, k.mul_wide(b, static_cast<std::uint32_t>(size_of(type))));
    Reg const qs = k.add(at, 2);
    Reg const misalignment = k.and_(qs, 2);
    Reg const misaligned = k.setp(Cmp::ne, misalignment, 0);
    Reg const aligned = k.sub(qs, misalignment);
    std::vector<Reg> raw;
    for (unsigned i = 0; i < words; ++i)
        raw.push_back(k.ld(Space::global, Type::u32, Address(aligned, 4 * static_cast<int>(i)), Cache::nc));
    // Only a misaligned block needs (and loads) the halfword after: the block's last two bytes, which
    // end it, so a word there would read past the last block.
    Reg const after = k.reg(Type::u32);
    Address const next(aligned, 4 * static_cast<int>(words));
    k.predicated(misaligned, true, [&] { k.ld(after, Space::global, Type::u16, next, Cache::nc); });
    raw.push_back(after);
    Reg const select = k.selp(0x5432, 0x3210, misaligned, Type::u32);
    SmallWeights w;
    for (unsigned i = 0; i < words; ++i) {
        Reg const word = k.prmt(raw[i], raw[i + 1], select);
        if (q8) {
            w.codes[i] = word;
        } else {
            w.codes[i] = k.and_(word, 0x0f0f0f0f);
            w.codes[4 + i] = k.and_(k.shr(word, 4), 0x0f0f0f0f);
        }
    }
    Reg const d_half = k.reg(Type::f16);
    k.ld(d_half, Space::global, Type::b16, Address(at), Cache::nc);
    // A block past the row's end re-reads the last one with its scale zeroed (no branch, no load
    // out of range); its record exists, since the last record has all eight slots.
    w.d = k.selp(k.cvt(Type::f32, d_half), 0.0f, valid, Type::f32);
    w.record = k.add(row.records, k.mul_wide(k.shr(b, 3), record_bytes));
    return w;
}

// Σ over the block's 32 values, per row of x: dp4a on the record's main (and residual) quants, q4_0's
// −8 as 8·Σx from the slot, then acc += that · (d · d_x).
void multiply_small(Kernel& k, DType type, Row const& row, Reg lane_slot, SmallWeights const& w, bool residual,
                    std::vector<Reg> const& acc) {
    bool const q8 = type == DType::q8_0;
    for (std::size_t a = 0; a < acc.size(); ++a) {
        Reg const rec = a == 0 ? w.record : k.add(w.record, row.x_row_offset[a]);
        Reg const quants = k.add(rec, k.mul_wide(k.shl(lane_slot, 5), 1));
        auto const slot = as_array(k.ld_vector(
            row.space, Type::b32, 4, Address(k.add(rec, k.mul_wide(k.shl(lane_slot, 4), 1)), 512), record_cache(row)));
        auto const term = [&](int offset, Reg sum, Reg x_scale) {
            Cache const cache = record_cache(row);
            auto const x0 = as_array(k.ld_vector(row.space, Type::b32, 4, Address(quants, offset), cache));
            auto const x1 = as_array(k.ld_vector(row.space, Type::b32, 4, Address(quants, offset + 16), cache));
            Reg s = k.mov(Type::s32, 0);
            for (int t = 0; t < 4; ++t) s = k.dp4a(w.codes[t], x0[t], s, q8, true);
            for (int t = 0; t < 4; ++t) s = k.dp4a(w.codes[4 + t], x1[t], s, q8, true);
            if (!q8) s = k.sub(s, k.shl(k.bitcast(Type::s32, sum), 3));
            k.fma(acc[a], k.cvt(Type::f32, s), k.mul(w.d, k.bitcast(Type::f32, x_scale)), acc[a]);
        };
        term(0, slot[0], slot[2]);
        if (residual) term(256, slot[1], slot[3]);
    }
}

// ---- fused activation quantization (into shared memory) -----------------------------------------

// One warp's q8 block of 256 values, lane L holding values 8L..8L+7: q = rni(x·127/amax), d = amax/127.
// Not the reference's bytes (that takes the first value of largest magnitude, sign kept, and an IEEE
// division), but the same approximation x ≈ d·q with |q| ≤ 127 (|x·iscale| ≤ 127·(1 + 2^-21) < 127.5),
// at a third of the instructions; amax = 0 gives d = 0 and q = 0 (0·inf is NaN, which cvt turns to 0).
struct FastQ8 {
    std::array<Reg, 8> q;      // .s32
    std::array<Reg, 2> words;  // the quants as int8 bytes, value order
    Reg d;                     // .f32
    Reg sum;                   // .s32: Σ of this lane's eight quants
};

FastQ8 fast_q8(Kernel& k, std::array<Reg, 8> const& x, Reg ones) {
    Reg amax = k.abs(x[0]);
    for (int i = 1; i < 8; ++i) amax = k.max(amax, k.abs(x[i]));
    for (int delta = 16; delta >= 1; delta /= 2) amax = k.max(amax, k.shfl(ShuffleMode::bfly, amax, delta));
    FastQ8 out{};
    out.d = k.fma(amax, 1.0f / 127.0f, quant_detail::warp_non_finite_sum(k, x));  // d carries a NaN in x
    Reg const iscale = k.mul(k.rcp_approx(amax), 127.0f);
    for (int i = 0; i < 8; ++i) out.q[i] = k.cvt(Type::s32, k.mul(x[i], iscale), Rounding::rni);
    out.words = {pack_bytes(k, out.q[0], out.q[1], out.q[2], out.q[3]),
                 pack_bytes(k, out.q[4], out.q[5], out.q[6], out.q[7])};
    out.sum = k.dp4a(out.words[1], ones, k.dp4a(out.words[0], ones, 0));
    return out;
}

// Record `index` (x block `index`, 256 f32 at x + 1024·index) quantized by one warp into the shared
// record at `record` (.u32), laid out as quantize_activations lays it out (quant.hpp).
void quantize_record(Kernel& k, DType weight, bool residual, Reg x, Reg index, Reg record, Reg lane) {
    Reg const at = k.add(x, k.add(k.mul_wide(index, 1024), k.mul_wide(lane, 32)));
    auto const v0 = k.ld_vector(Space::global, Type::f32, 4, Address(at), Cache::nc);
    auto const v1 = k.ld_vector(Space::global, Type::f32, 4, Address(at, 16), Cache::nc);
    std::array<Reg, 8> const v{v0[0], v0[1], v0[2], v0[3], v1[0], v1[1], v1[2], v1[3]};
    Reg const ones = k.mov(Type::u32, 0x01010101);
    FastQ8 const main = fast_q8(k, v, ones);
    FastQ8 res{};
    if (residual) {
        Reg const neg_d = k.neg(main.d);
        std::array<Reg, 8> r{};
        for (int i = 0; i < 8; ++i) r[i] = k.fma(k.cvt(Type::f32, main.q[i]), neg_d, v[i]);
        res = fast_q8(k, r, ones);
    } else {
        res.d = k.mov(Type::f32, 0.0f);
        res.sum = k.mov(Type::s32, 0);
    }
    std::array<Reg, 2> const d_pair{main.d, res.d};
    if (weight != DType::q6_k) {
        // q4_k, q5_k: producer lane L: consumer lane j = 2c + s (c = L/8, s = (L/2)%2), piece
        // hi = (L/4)%2, byte 8·(L%2).
        Reg const c = k.shr(lane, 3);
        Reg const hi = k.and_(k.shr(lane, 2), 1);
        Reg const s = k.and_(k.shr(lane, 1), 1);
        Reg const j16 = k.shl(k.fma(c, 2, s), 4);
        Reg const quant_at = k.add(record, k.add(k.fma(hi, 128, j16), k.shl(k.and_(lane, 1), 3)));
        k.st_vector(Space::shared, Type::b32, Address(quant_at), main.words);
        if (residual) k.st_vector(Space::shared, Type::b32, Address(quant_at, 256), res.words);
        Reg const main16 = k.add(main.sum, k.shfl(ShuffleMode::bfly, main.sum, 1));
        Reg const res16 = residual ? k.add(res.sum, k.shfl(ShuffleMode::bfly, res.sum, 1)) : res.sum;
        Reg const pair_at = k.add(record, j16);
        Reg const slot_at = k.add(pair_at, k.shl(hi, 1));
        k.predicated(k.setp(Cmp::eq, k.and_(lane, 1), 0), true, [&] {
            k.st(Space::shared, Type::u16, Address(slot_at, 512), main16);
            k.st(Space::shared, Type::u16, Address(slot_at, 516), res16);
            k.st_vector(Space::shared, Type::f32, Address(pair_at, 520), d_pair);
        });
    } else {
        // Producer lane L: half h = L/16, i = (L/4)%4; first word to consumer lane j = 8h + 2·(L%4) at
        // byte 4i, second to lane j + 1.
        Reg const h = k.shr(lane, 4);
        Reg const i = k.and_(k.shr(lane, 2), 3);
        Reg const j16 = k.shl(k.fma(h, 8, k.shl(k.and_(lane, 3), 1)), 4);
        Reg const quant_at = k.add(record, k.add(j16, k.shl(i, 2)));
        k.st(Space::shared, Type::b32, Address(quant_at), main.words[0]);
        k.st(Space::shared, Type::b32, Address(quant_at, 16), main.words[1]);
        if (residual) {
            k.st(Space::shared, Type::b32, Address(quant_at, 256), res.words[0]);
            k.st(Space::shared, Type::b32, Address(quant_at, 272), res.words[1]);
        }
        Reg const slot_at = k.add(record, j16);
        k.st_vector(Space::shared, Type::f32, Address(slot_at, 512), d_pair);
        k.st_vector(Space::shared, Type::f32, Address(slot_at, 528), d_pair);
    }
}

// The streamed GEMV's producer: each warp's ring of slots and the position of the next slot to fill.
struct Ring {
    Reg base;  // .u32: this warp's first slot
    Reg slot;  // .u32: the slot to fill next
    Reg row;   // .u32: its weight row (>= n: nothing left to fill)
    Reg step;  // .u32: its slot-sized step within the row
};

// Requests the next slot of `ring` (8 blocks of its row, zero-filled past the row's end) and commits
// the copies as one group (an empty group when the warp's rows are done, so the group count stays
// uniform), then moves the ring on.
void fill_slot(Kernel& k, Ring& ring, Reg weights, Reg n, Reg row_bytes32, Reg steps, Reg row_step, Reg lane,
               std::uint32_t slot_bytes, unsigned stages) {
    unsigned const chunks = slot_bytes / 16;
    k.if_then(k.setp(Cmp::lt, ring.row, n), [&] {
        Reg const offset = k.mul(ring.step, slot_bytes);
        Reg const from = k.add(k.add(weights, k.mul_wide(ring.row, row_bytes32)), k.cvt(Type::u64, offset));
        Reg const remaining = k.bitcast(Type::s32, k.sub(row_bytes32, offset));
        Reg const to = k.add(ring.base, k.mul(ring.slot, slot_bytes));
        for (unsigned first = 0; first < chunks; first += 32) {
            Reg const c = k.add(lane, first);
            auto const copy = [&] {
                // Bytes of this 16-byte chunk inside the row: 16, then a partial block's tail, then 0
                // (a chunk with nothing to copy reads from the slot's first byte, which exists).
                Reg const bytes = k.max(k.min(k.sub(remaining, k.shl(k.bitcast(Type::s32, c), 4)), 16), 0);
                Reg const at = k.selp(k.add(from, k.mul_wide(c, 16)), from, k.setp(Cmp::gt, bytes, 0), Type::u64);
                k.cp_async(k.add(to, k.shl(c, 4)), Address(at), 16, k.bitcast(Type::u32, bytes));
            };
            if (first + 32 <= chunks)
                copy();
            else
                k.if_then(k.setp(Cmp::lt, c, chunks), copy);
        }
    });
    k.cp_async_commit();
    k.add(ring.step, ring.step, 1);
    Reg const wrap = k.setp(Cmp::eq, ring.step, steps);
    k.selp(ring.step, 0, ring.step, wrap);
    k.selp(ring.row, k.add(ring.row, row_step), ring.row, wrap);
    k.add(ring.slot, ring.slot, 1);
    k.selp(ring.slot, 0, ring.slot, k.setp(Cmp::eq, ring.slot, stages));
}

// Throws BuildError for a configuration quant_gemv does not make (before anything is emitted).
void validate_quant_gemv(QuantGemvConfig const& config) {
    // q4 is q4_k's lane layout, which q5_k shares.
    bool const q4 = config.weight == DType::q4_k || config.weight == DType::q5_k;
    bool const small = small_block_weights(config.weight);
    if (!q4 && !small && config.weight != DType::q6_k)
        throw BuildError("ptx kernels: quant_gemv takes q4_k, q5_k, q6_k, q8_0 or q4_0 weights, not " +
                         std::string(to_string(config.weight)));
    if (small && config.fused)
        throw BuildError("ptx kernels: quant_gemv takes " + std::string(to_string(config.weight)) +
                         " weights with activation records only (not fused)");
    if (config.rows < 1 || config.rows > 8)
        throw BuildError("ptx kernels: quant_gemv handles 1 to 8 rows of x, not " + std::to_string(config.rows));
    if (config.warps < 1 || config.warps > 32)
        throw BuildError("ptx kernels: quant_gemv needs 1 to 32 warps per block, not " + std::to_string(config.warps));
    if (config.unroll != 1 && config.unroll != 2 && config.unroll != 4)
        throw BuildError("ptx kernels: quant_gemv unrolls by 1, 2 or 4, not " + std::to_string(config.unroll));
    bool const streamed = config.stages != 0;
    if (streamed && (!config.fused || config.stages < 2 || config.stages > 8))
        throw BuildError("ptx kernels: a streamed quant_gemv is fused and has 2 to 8 stages, not " +
                         std::to_string(config.stages) + (config.fused ? "" : " (not fused)"));
}

// The kernel's name: weight type, rows of x, residual, warps, stages or unroll, fused.
std::string quant_gemv_name(QuantGemvConfig const& config) {
    bool const streamed = config.stages != 0;
    return "rayo_quant_gemv_" + std::string(to_string(config.weight)) + "_m" + std::to_string(config.rows) +
           (config.residual ? "_residual" : "") + "_w" + std::to_string(config.warps) +
           (streamed ? "_s" + std::to_string(config.stages) : "_u" + std::to_string(config.unroll)) +
           (config.fused ? "_fused" : "");
}

// Emits one (validated) quant_gemv kernel into `k`, stage by stage (build); the members are what
// more than one stage uses, set by the stage that emits them.
struct QuantGemvBuilder {
    QuantGemvBuilder(Kernel& kernel, QuantGemvConfig const& gemv_config) : k(kernel), config(gemv_config) {}

    Kernel& k;
    QuantGemvConfig const& config;
    // q4 is q4_k's lane layout, which q5_k shares.
    bool const q4 = config.weight == DType::q4_k || config.weight == DType::q5_k;
    bool const small = small_block_weights(config.weight);
    bool const streamed = config.stages != 0;
    std::uint32_t const block_bytes = static_cast<std::uint32_t>(size_of(config.weight));
    std::uint32_t const record_bytes = static_cast<std::uint32_t>(activation_record_bytes(config.weight));
    std::uint32_t const slot_bytes = static_cast<std::uint32_t>(quant_gemv_slot_bytes(config.weight));
    unsigned const lanes_per_block = small ? 1 : q4 ? 8 : 16;
    unsigned const group = 32 / lanes_per_block;  // blocks per warp step

    // Set by read_parameters: the parameters, the thread's lane and warp, the warp's first weight row
    // and its step over the rows, and the label past the row loop.
    Reg weights, records, out, n, blocks;
    Reg tid, lane, warp, first_row, row_step;
    Label done;
    // Set by size_rows: a weight row's bytes (.u64, .u32) and its slot-sized steps.
    Reg row_bytes, row_bytes32, steps;
    // Set by stage_x / skip_idle_warp and lay_out_records: where the records are and how the lane reads them.
    Row row;
    Reg records_base;  // x's first record: global (.u64) or shared (fused, .u32)
    Ring ring;         // streamed: the warp's ring of weight slots
    // Set by lay_out_records: the lane's part of a block, or (small blocks) its slot in a record, and
    // its first block of a warp step.
    Reg j;
    Reg first_block;
    // Set by lay_out_q4_lane / lay_out_q6_lane.
    Q4Lane q4_lane;
    Q6Lane q6_lane;
    // Set by lay_out_output: out's row stride and the lane that writes the sums.
    Reg out_stride;
    Reg lane0;

    // All the stages, in emission order.
    void build() {
        read_parameters();
        size_rows();
        if (config.fused)
            stage_x();
        else
            skip_idle_warp();
        lay_out_records();
        if (q4)
            lay_out_q4_lane();
        else if (!small)
            lay_out_q6_lane();
        lay_out_output();
        if (streamed) {
            streamed_rows();
        } else if (config.fused) {
            // Rows strided over the grid's warps.
            Reg const weight_row = k.reg(Type::u32);
            k.for_range(weight_row, first_row, n, row_step, [&] { one_row(weight_row); });
        } else {
            one_row(first_row);
        }
        k.place(done);
    }

    // The parameters, and this warp's lane, first weight row and step over the rows.
    void read_parameters() {
        k.max_threads(32 * config.warps);
        weights = k.cvta_to_global(k.param(Type::u64, "w"));
        records = k.cvta_to_global(k.param(Type::u64, config.fused ? "x" : "records"));
        out = k.cvta_to_global(k.param(Type::u64, "out"));
        n = k.param(Type::u32, "n");
        blocks = k.param(Type::u32, "blocks_per_row");

        tid = k.special(Special::tid_x);
        lane = k.and_(tid, 31);
        warp = k.shr(tid, 5);
        first_row = k.fma(k.special(Special::ctaid_x), config.warps, warp);
        row_step = k.mul(k.special(Special::nctaid_x), config.warps);
        done = k.label();
    }

    // A weight row's bytes (.u64 and .u32) and its slot-sized steps.
    void size_rows() {
        row_bytes = k.mul_wide(blocks, block_bytes);
        row_bytes32 = k.mul(blocks, block_bytes);
        steps = k.shr(k.add(blocks, quant_gemv_slot_blocks - 1), 3);
    }

    // Fused: starts the ring and the first row's prefetch, then quantizes x into shared memory.
    void stage_x() {
        records_base = k.shared_address(k.dynamic_shared(16));
        if (streamed) start_ring();
        prefetch_first_row();
        quantize_x();
        row.space = Space::shared;
    }

    // The first stages − 1 slots of every warp are requested before x is quantized.
    void start_ring() {
        ring.base =
            k.add(k.add(records_base, k.mul(k.mul(blocks, static_cast<std::int64_t>(config.rows)), record_bytes)),
                  k.mul(warp, config.stages * slot_bytes));
        ring.slot = k.mov(Type::u32, 0);
        ring.row = k.mov(Type::u32, first_row);
        ring.step = k.mov(Type::u32, 0);
        for (unsigned s = 0; s + 1 < config.stages; ++s) fill_next_slot();
    }

    // Requests the ring's next slot.
    void fill_next_slot() {
        fill_slot(k, ring, weights, n, row_bytes32, steps, row_step, lane, slot_bytes, config.stages);
    }

    // Start this warp's first weight row towards L2 while the CTA quantizes x into shared memory.
    void prefetch_first_row() {
        k.if_then(k.setp(Cmp::lt, first_row, n), [&] {
            // (32-bit offsets: x's records fit in shared memory, so a row is at most a few KiB.)
            Reg const start = k.add(weights, k.mul(k.cvt(Type::u64, first_row), row_bytes));
            Reg const line = k.reg(Type::u32);
            k.for_range(line, k.shl(lane, 7), row_bytes32, 4096, [&] {
                k.instruction("prefetch.global.L2", {AddressUse{Address(k.add(start, k.cvt(Type::u64, line)))}});
            });
        });
    }

    // x's rows·blocks_per_row records, one warp each, then every warp reads them.
    void quantize_x() {
        Reg const count = k.mul(blocks, static_cast<std::int64_t>(config.rows));
        Reg const r = k.reg(Type::u32);
        k.for_range(r, warp, count, config.warps, [&] {
            quantize_record(k, config.weight, config.residual, records, r, k.add(records_base, k.mul(r, record_bytes)),
                            lane);
        });
        k.bar_sync();
    }

    // Not fused: a warp past the last row has nothing to do; the records are x's, in global memory.
    void skip_idle_warp() {
        k.bra_if(k.setp(Cmp::ge, first_row, n), done);
        records_base = records;
    }

    // The lane's part of a block and of the records, the offsets of x's rows and the row's block limits.
    void lay_out_records() {
        // The lane's part of a block, or (small blocks) its slot in a record: blocks b ≡ lane (mod 8).
        j = small ? k.and_(lane, 7) : k.and_(lane, lanes_per_block - 1);
        first_block = small ? lane : k.shr(lane, q4 ? 3 : 4);

        if (config.fused) {
            row.records = k.add(records_base, k.shl(j, 4));
            Reg const x_row_stride = k.mul(blocks, record_bytes);
            row.x_row_offset.push_back(Reg{});
            for (unsigned a = 1; a < config.rows; ++a)
                row.x_row_offset.push_back(k.mul(x_row_stride, static_cast<std::int64_t>(a)));
        } else {
            // Small blocks address the record (b/8) and take the lane's slot in multiply_small.
            row.records = small ? records_base : k.add(records_base, k.mul_wide(j, 16));
            // A row of x takes one record per 256 values: blocks (small: ceil(blocks/8)).
            Reg const records_per_row = small ? k.shr(k.add(blocks, 7), 3) : blocks;
            Reg const x_row_stride = k.mul_wide(records_per_row, record_bytes);
            row.x_row_offset.push_back(Reg{});
            for (unsigned a = 1; a < config.rows; ++a)
                row.x_row_offset.push_back(k.mul(x_row_stride, static_cast<std::int64_t>(a)));
        }
        row.valid_limit = blocks;
        row.last_block = k.sub(blocks, 1);
    }

    // q4_k / q5_k: the lane's sub-blocks, scale bytes and offsets within a block.
    void lay_out_q4_lane() {
        Reg const c = k.shr(j, 1);
        q4_lane.j = j;
        q4_lane.upper = k.setp(Cmp::ge, c, 2);
        q4_lane.shift = k.shl(k.and_(c, 1), 4);
        q4_lane.shift_hi = k.add(q4_lane.shift, 8);
        q4_lane.block_bytes = block_bytes;
        q4_lane.q5 = config.weight == DType::q5_k;
        q4_lane.qs_offset32 = k.add(k.shl(j, 4), q4_lane.q5 ? 48 : 16);
        q4_lane.qs_offset = k.cvt(Type::u64, q4_lane.qs_offset32);
        if (q4_lane.q5) {
            q4_lane.qh_offset32 = k.add(k.shl(k.and_(j, 1), 4), 16);
            q4_lane.qh_offset = k.cvt(Type::u64, q4_lane.qh_offset32);
            q4_lane.high_shift = k.shl(c, 1);
        }
    }

    // q6_k: the lane's offsets within a block, for blocks in shared and in global memory.
    void lay_out_q6_lane() {
        Reg const h = k.shr(j, 3);
        Reg const l0 = k.shl(k.and_(j, 7), 2);
        q6_lane.shared = {.ql = k.fma(h, 64, l0),
                          .qh = k.add(k.fma(h, 32, l0), 128),
                          .scale = k.add(k.fma(h, 8, k.shr(k.and_(j, 7), 2)), 192)};
        q6_lane.global = {.ql = k.cvt(Type::u64, q6_lane.shared.ql),
                          .qh = k.cvt(Type::u64, q6_lane.shared.qh),
                          .scale = k.cvt(Type::u64, q6_lane.shared.scale)};
    }

    // The stride between out's rows and the lane that writes them.
    void lay_out_output() {
        out_stride = k.mul_wide(n, 4);
        lane0 = k.setp(Cmp::eq, lane, 0);
    }

    // One f32 accumulator per row of x, zeroed.
    std::vector<Reg> zeroed_accumulators() {
        std::vector<Reg> acc;
        for (unsigned a = 0; a < config.rows; ++a) acc.push_back(k.mov(Type::f32, 0.0f));
        return acc;
    }

    // Sum over the warp's lanes; lane 0 writes out[a, weight_row].
    void write_row(std::vector<Reg> const& acc, Reg weight_row) {
        std::vector<Reg> sums;
        for (Reg a : acc) {
            Reg sum = a;
            for (int delta = 16; delta >= 1; delta /= 2) sum = k.add(sum, k.shfl(ShuffleMode::bfly, sum, delta));
            sums.push_back(sum);
        }
        Reg at = k.add(out, k.mul_wide(weight_row, 4));
        k.predicated(lane0, true, [&] {
            for (std::size_t a = 0; a < sums.size(); ++a) {
                k.st(Space::global, Type::f32, Address(at), sums[a]);
                if (a + 1 < sums.size()) at = k.add(at, out_stride);
            }
        });
    }

    // One weight row from global memory: the warp steps over its blocks, then writes the row.
    void one_row(Reg weight_row) {
        row.weights = k.add(weights, k.mul(k.cvt(Type::u64, weight_row), row_bytes));
        std::vector<Reg> const acc = zeroed_accumulators();
        unsigned const step = group * config.unroll;
        Reg const it = k.reg(Type::u32);
        k.for_range(it, 0, blocks, step, [&] {
            Reg const base = k.add(it, first_block);
            multiply_unrolled(base, acc);
        });
        write_row(acc, weight_row);
    }

    // One warp step of one_row: `unroll` blocks of the lane from `base` on, all loaded, then multiplied.
    void multiply_unrolled(Reg base, std::vector<Reg> const& acc) {
        if (small) {
            std::vector<SmallWeights> ws;
            for (unsigned u = 0; u < config.unroll; ++u)
                ws.push_back(load_small(k, config.weight, row, u == 0 ? base : k.add(base, u * group), record_bytes));
            for (auto const& w : ws) multiply_small(k, config.weight, row, j, w, config.residual, acc);
        } else if (q4) {
            std::vector<Q4Weights> ws;
            for (unsigned u = 0; u < config.unroll; ++u)
                ws.push_back(load_q4_k(k, row, q4_lane, u == 0 ? base : k.add(base, u * group), record_bytes));
            for (auto const& w : ws) multiply_q4_k(k, row, q4_lane, w, config.residual, acc);
        } else {
            std::vector<Q6Raw> raws;
            for (unsigned u = 0; u < config.unroll; ++u)
                raws.push_back(load_q6_k(k, row, q6_lane, u == 0 ? base : k.add(base, u * group), record_bytes));
            for (auto const& raw : raws) multiply_q6_k(k, row, decode_q6_k(k, raw), config.residual, acc);
        }
    }

    // Consume slots in order while the ring fills the one after the last requested; a row's
    // sums are written after its last slot.
    void streamed_rows() {
        std::vector<Reg> const acc = zeroed_accumulators();
        Reg const slot = k.mov(Type::u32, 0);
        Reg const weight_row = k.mov(Type::u32, first_row);
        Reg const step = k.mov(Type::u32, 0);
        Label const top = k.label();
        k.place(top);
        k.bra_if(k.setp(Cmp::ge, weight_row, n), done);
        // This lane's copies of the slot have landed; after the warp barrier, every lane's have, and
        // every lane is done with the slot the ring refills next.
        k.cp_async_wait(static_cast<int>(config.stages) - 2);
        k.bar_warp_sync();
        fill_next_slot();
        Reg const at = k.add(ring.base, k.mul(slot, slot_bytes));
        Reg const first = k.shl(step, 3);  // the slot's first block in the row
        multiply_slot(at, first, acc);
        k.add(step, step, 1);
        k.add(slot, slot, 1);
        k.selp(slot, 0, slot, k.setp(Cmp::eq, slot, config.stages));
        k.if_then(k.setp(Cmp::eq, step, steps), [&] {
            write_row(acc, weight_row);
            for (Reg a : acc) k.mov(a, 0.0f);
            k.mov(step, 0);
            k.add(weight_row, weight_row, row_step);
        });
        k.bra(top);
    }

    // The lane's blocks of the slot at `at` (shared), whose first block is block `first` of the row.
    void multiply_slot(Reg at, Reg first, std::vector<Reg> const& acc) {
        for (unsigned g = 0; g < quant_gemv_slot_blocks; g += group) {
            Reg const local = k.add(first_block, g);
            Reg const block = k.add(first, local);
            Reg const valid = k.setp(Cmp::lt, block, blocks);
            Reg const record = record_at(k, row, k.min(block, row.last_block), record_bytes);
            Reg const block_at = k.add(at, k.mul(local, block_bytes));
            if (q4)
                multiply_q4_k(k, row, q4_lane, read_q4_k(k, Space::shared, block_at, q4_lane, valid, record),
                              config.residual, acc);
            else
                multiply_q6_k(k, row,
                              decode_q6_k(k, read_q6_k(k, Space::shared, block_at, q6_lane.shared, valid, record)),
                              config.residual, acc);
        }
    }
};

}  // namespace

Kernel quant_gemv(QuantGemvConfig const& config) {
    validate_quant_gemv(config);
    Kernel k(quant_gemv_name(config));
    QuantGemvBuilder(k, config).build();
    return k;
}

}  // namespace rayo::ptx::kernels
