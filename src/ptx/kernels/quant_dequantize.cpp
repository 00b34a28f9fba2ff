// Block-quant format conversions on the GPU: dequantize (q4_k, q5_k, q6_k, q8_k, q8_0, q4_0 -> f32),
// q8_k quantization, and the GEMV's activation records. The last two share one emitter for a q8_k block, which
// reproduces the reference quantizer's integer arithmetic (src/quant/reference_quantizer.cpp), so
// a record's main quants are the CPU's q8_k bytes.
//
// Exactness: PTX mul/add/sub with an explicit .rn (what the builder emits) are never contracted
// into fma, so the decoded floats are the CPU's: d·sc then ·q then − dmin·m, in that order (q5_k
// too; q8_0 and q4_0: one product q·d, with q4_0's q − 8 in the integers).
#include <array>
#include <span>
#include <string>

#include "rayo/ptx/kernels/quant.hpp"
#include "ptx/kernels/quant_words.hpp"

namespace rayo::ptx::kernels {

namespace {

using quant_detail::halves_as_float;
using quant_detail::pack_bytes;

constexpr std::uint32_t values_per_block = 256;

void check_threads(unsigned threads, char const* kernel) {
    if (threads == 0 || threads % 32 != 0 || threads > 1024)
        throw BuildError(std::string("ptx kernels: ") + kernel +
                         ": threads per block must be a multiple of 32 up to 1024, got " + std::to_string(threads));
}

// The block this warp works on, its lane, and the branch target that ends the kernel when the
// warp's block is past `count` (whole warps leave together, so later shuffles see full warps).
struct WarpPerBlock {
    Reg lane;
    Reg block;
    Label done;
};

WarpPerBlock warp_per_block(Kernel& k, unsigned threads, Reg count) {
    Reg const tid = k.special(Special::tid_x);
    Reg const cta = k.special(Special::ctaid_x);
    WarpPerBlock w{.lane = k.and_(tid, 31), .block = k.fma(cta, threads / 32, k.shr(tid, 5)), .done = k.label()};
    k.bra_if(k.setp(Cmp::ge, w.block, count), w.done);
    return w;
}

// For q8_0 / q4_0 (32 values a block): a warp decodes eight consecutive blocks, four lanes a block
// (each lane 8 values); a lane whose block is past `count` branches to `done` (dequantize has no
// shuffles, so lanes may leave alone).
struct LanePerPart {
    Reg part;  // lane % 4: which 8 (q8_0) or 4 + 4 (q4_0) values of the block
    Reg block;
    Label done;
};

LanePerPart lane_per_part(Kernel& k, unsigned threads, Reg count) {
    Reg const tid = k.special(Special::tid_x);
    Reg const cta = k.special(Special::ctaid_x);
    Reg const first = k.fma(cta, threads / 4, k.shr(tid, 2));  // 8 blocks a warp = a block per 4 threads
    LanePerPart p{.part = k.and_(tid, 3), .block = first, .done = k.label()};
    k.bra_if(k.setp(Cmp::ge, p.block, count), p.done);
    return p;
}

// f32 of the f16 at [address] (cvt.f32.f16 is exact, like the CPU's conversion).
Reg load_half_as_float(Kernel& k, Address const& address) {
    Reg h = k.reg(Type::f16);
    k.ld(h, Space::global, Type::b16, address, Cache::nc);
    return k.cvt(Type::f32, h);
}

Reg to_float(Kernel& k, Reg integer) { return k.cvt(Type::f32, integer); }

// A 16-bit field zero-extended into a .u32 register (PTX has no bfe on 16-bit registers).
Reg load_u16(Kernel& k, Address const& address) {
    Reg r = k.reg(Type::u32);
    k.ld(r, Space::global, Type::u16, address, Cache::nc);
    return r;
}

// A signed copy of an integer register (for arithmetic that may go below zero).
Reg as_signed(Kernel& k, Reg r) {
    Reg s = k.reg(Type::s32);
    k.mov(s, r);
    return s;
}

// Stores `values` (f32) at value `index` (+ `offset`) of `out`: as f32, or rounded to f16 (pairs
// packed into words) for the GEMM that reads the weights as f16.
void store_values(Kernel& k, Type output, Reg out, Reg index, unsigned offset, std::span<Reg const> values) {
    unsigned const bytes = output == Type::f16 ? 2 : 4;
    Reg const at = k.add(out, k.mul_wide(index, bytes));
    if (output == Type::f32) {
        k.st_vector(Space::global, Type::f32, Address(at, offset * bytes), values);
        return;
    }
    std::vector<Reg> words;
    for (std::size_t i = 0; i + 1 < values.size(); i += 2)
        words.push_back(k.join(Type::b32, k.cvt(Type::f16, values[i]), k.cvt(Type::f16, values[i + 1])));
    if (words.size() == 1)
        k.st(Space::global, Type::b32, Address(at, offset * bytes), words[0]);
    else
        k.st_vector(Space::global, Type::b32, Address(at, offset * bytes), words);
}

// ---- dequantize -------------------------------------------------------------------------------

// d·sc and dmin·m of sub-blocks 2c and 2c + 1 of a q4_k / q5_k block whose first 16 bytes are
// `header` (four words: d and dmin, then the 12 bytes of packed 6-bit scales and mins):
// get_scale_min_k4 for all eight sub-blocks as four words of bytes (see rayo/cpu/quant_dot.hpp).
struct SubBlockFactors {
    Reg d1, m1, d2, m2;
};
SubBlockFactors k4_sub_block_factors(Kernel& k, std::vector<Reg> const& header, Reg d, Reg dmin, Reg c) {
    Reg const sc_low = k.and_(header[1], 0x3f3f3f3f);
    Reg const m_low = k.and_(header[2], 0x3f3f3f3f);
    Reg const sc_high = k.or_(k.and_(header[3], 0x0f0f0f0f), k.and_(k.shr(header[1], 2), 0x30303030));
    Reg const m_high = k.or_(k.and_(k.shr(header[3], 4), 0x0f0f0f0f), k.and_(k.shr(header[2], 2), 0x30303030));
    Reg const upper = k.setp(Cmp::ge, c, 2);
    Reg const scw = k.selp(sc_high, sc_low, upper, Type::u32);
    Reg const mw = k.selp(m_high, m_low, upper, Type::u32);
    Reg const shift = k.shl(k.and_(c, 1), 4);  // sub-block 2c sits in byte 2·(c%2) of its word
    Reg const shift_hi = k.add(shift, 8);
    Reg const d1 = k.mul(d, to_float(k, k.bfe(scw, shift, 8)));
    Reg const m1 = k.mul(dmin, to_float(k, k.bfe(mw, shift, 8)));
    Reg const d2 = k.mul(d, to_float(k, k.bfe(scw, shift_hi, 8)));
    Reg const m2 = k.mul(dmin, to_float(k, k.bfe(mw, shift_hi, 8)));
    return {d1, m1, d2, m2};
}

// q4_k, lane L: qs word L = bytes [4L, 4L+4) of chunk c = L/8 -> values 64c + l0 + t (low nibbles,
// sub-block 2c) and 64c + 32 + l0 + t (high, sub-block 2c+1), l0 = 4·(L%8).
void dequantize_q4_k_lane(Kernel& k, Type output, Reg lane, Reg in, Reg out) {
    std::vector<Reg> const header = k.ld_vector(Space::global, Type::u32, 4, Address(in), Cache::nc);
    Reg const qs = k.ld(Space::global, Type::u32, Address(k.add(in, k.mul_wide(lane, 4)), 16), Cache::nc);
    auto const [d, dmin] = halves_as_float(k, header[0]);
    Reg const c = k.shr(lane, 3);
    auto const [d1, m1, d2, m2] = k4_sub_block_factors(k, header, d, dmin, c);
    std::array<Reg, 4> lo{}, hi{};
    for (int b = 0; b < 4; ++b) {
        lo[b] = k.sub(k.mul(d1, to_float(k, k.bfe(qs, 8 * b, 4))), m1);
        hi[b] = k.sub(k.mul(d2, to_float(k, k.bfe(qs, 8 * b + 4, 4))), m2);
    }
    // value 64c + l0 = 4L + 32c; the high nibbles 32 values later.
    Reg const index = k.shl(k.fma(c, 8, lane), 2);
    store_values(k, output, out, index, 0, lo);
    store_values(k, output, out, index, 32, hi);
}

// q6_k, lane L: half h = L/16, l = 2·(L%16): values 128h + 32i + l + e (i = 0..3, e = 0, 1) from
// ql[64h + l + e] (i = 0, 2), ql[64h + 32 + l + e] (i = 1, 3) and qh[32h + l + e]. Loads are 16-bit:
// q6_k blocks are 210 bytes, so only 2-byte aligned.
void dequantize_q6_k_lane(Kernel& k, Type output, Reg lane, Reg in, Reg out) {
    Reg const h = k.shr(lane, 4);
    Reg const l = k.shl(k.and_(lane, 15), 1);
    Reg const ql_at = k.add(in, k.mul_wide(k.fma(h, 64, l), 1));
    Reg const qh_at = k.add(in, k.mul_wide(k.fma(h, 32, l), 1));
    Reg const ql0 = load_u16(k, Address(ql_at));
    Reg const ql1 = load_u16(k, Address(ql_at, 32));
    Reg const qh = load_u16(k, Address(qh_at, 128));
    // scales[8h + l/16 + 2i]
    Reg const sc_at = k.add(in, k.mul_wide(k.fma(h, 8, k.shr(l, 4)), 1));
    Reg const d = load_half_as_float(k, Address(in, 208));
    std::array<Reg, 4> ds{};
    for (int i = 0; i < 4; ++i) {
        Reg const sc = k.ld(Space::global, Type::s8, Address(sc_at, 192 + 2 * i), Cache::nc);
        ds[i] = k.mul(d, to_float(k, sc));
    }
    // value 128h + l + 32i.
    Reg const index = k.fma(h, 128, l);
    for (int i = 0; i < 4; ++i) {
        Reg const low_bits = i % 2 == 0 ? ql0 : ql1;
        int const nibble = i < 2 ? 0 : 4;
        std::array<Reg, 2> y{};
        for (int e = 0; e < 2; ++e) {
            Reg const q = k.or_(k.bfe(low_bits, 8 * e + nibble, 4), k.shl(k.bfe(qh, 8 * e + 2 * i, 2), 4));
            y[e] = k.mul(ds[i], to_float(k, k.sub(as_signed(k, q), 32)));
        }
        store_values(k, output, out, index, 32 * i, y);
    }
}

// q5_k, lane L: as q4_k (qs word L of chunk c = L/8 at byte 48 + 4L), each code's fifth bit from
// qh[l0 + t] (the word at 16 + l0, l0 = 4·(L%8)): bit 2c for the low nibble's value, 2c + 1 for the
// high one's. Values d1·q − m1 as the reference forms them. Blocks are 176 bytes, 16-byte aligned.
void dequantize_q5_k_lane(Kernel& k, Type output, Reg lane, Reg in, Reg out) {
    std::vector<Reg> const header = k.ld_vector(Space::global, Type::u32, 4, Address(in), Cache::nc);
    Reg const qs = k.ld(Space::global, Type::u32, Address(k.add(in, k.mul_wide(lane, 4)), 48), Cache::nc);
    Reg const l0 = k.shl(k.and_(lane, 7), 2);
    Reg const qh = k.ld(Space::global, Type::u32, Address(k.add(in, k.mul_wide(l0, 1)), 16), Cache::nc);
    auto const [d, dmin] = halves_as_float(k, header[0]);
    Reg const c = k.shr(lane, 3);
    auto const [d1, m1, d2, m2] = k4_sub_block_factors(k, header, d, dmin, c);
    // The fifth bits of sub-blocks 2c (bit 2c of each qh byte) and 2c + 1, moved to bit 4 of each byte.
    Reg const high_lo = k.shl(k.and_(k.shr(qh, k.shl(c, 1)), 0x01010101), 4);
    Reg const high_hi = k.shl(k.and_(k.shr(qh, k.add(k.shl(c, 1), 1)), 0x01010101), 4);
    Reg const codes_lo = k.or_(k.and_(qs, 0x0f0f0f0f), high_lo);
    Reg const codes_hi = k.or_(k.and_(k.shr(qs, 4), 0x0f0f0f0f), high_hi);
    std::array<Reg, 4> lo{}, hi{};
    for (int b = 0; b < 4; ++b) {
        lo[b] = k.sub(k.mul(d1, to_float(k, k.bfe(codes_lo, 8 * b, 8))), m1);
        hi[b] = k.sub(k.mul(d2, to_float(k, k.bfe(codes_hi, 8 * b, 8))), m2);
    }
    Reg const index = k.shl(k.fma(c, 8, lane), 2);
    store_values(k, output, out, index, 0, lo);
    store_values(k, output, out, index, 32, hi);
}

// q8_0, lane part p: values [8p, 8p+8) from qs at byte 2 + 8p (34-byte blocks: 2-byte aligned, so
// four sign-extended 16-bit loads), each q·d.
void dequantize_q8_0_part(Kernel& k, Type output, Reg part, Reg in, Reg block, Reg out) {
    Reg const d = load_half_as_float(k, Address(in));
    Reg const qs_at = k.add(in, k.mul_wide(part, 8));
    std::array<Reg, 8> y{};
    for (int h = 0; h < 4; ++h) {
        Reg const pair = k.reg(Type::s32);
        k.ld(pair, Space::global, Type::s16, Address(qs_at, 2 + 2 * h), Cache::nc);
        y[2 * h] = k.mul(to_float(k, k.bfe(pair, 0, 8)), d);
        y[2 * h + 1] = k.mul(to_float(k, k.bfe(pair, 8, 8)), d);
    }
    Reg const index = k.fma(block, 32, k.shl(part, 3));
    store_values(k, output, out, index, 0, std::span(y).first(4));
    store_values(k, output, out, index, 4, std::span(y).last(4));
}

// q4_0, lane part p: qs bytes [4p, 4p+4) (two 16-bit loads, 18-byte blocks) -> values 4p + t (low
// nibbles) and 16 + 4p + t (high), each (q − 8)·d.
void dequantize_q4_0_part(Kernel& k, Type output, Reg part, Reg in, Reg block, Reg out) {
    Reg const d = load_half_as_float(k, Address(in));
    Reg const qs_at = k.add(in, k.mul_wide(part, 4));
    Reg const word = k.prmt(load_u16(k, Address(qs_at, 2)), load_u16(k, Address(qs_at, 4)), 0x5410);
    std::array<Reg, 4> lo{}, hi{};
    for (int t = 0; t < 4; ++t) {
        lo[t] = k.mul(to_float(k, k.sub(as_signed(k, k.bfe(word, 8 * t, 4)), 8)), d);
        hi[t] = k.mul(to_float(k, k.sub(as_signed(k, k.bfe(word, 8 * t + 4, 4)), 8)), d);
    }
    Reg const index = k.fma(block, 32, k.shl(part, 2));
    store_values(k, output, out, index, 0, lo);
    store_values(k, output, out, index, 16, hi);
}

// q8_k, lane L: quants [8L, 8L+8) at byte 4 + 8L (4-byte aligned: blocks are 292 bytes).
void dequantize_q8_k_lane(Kernel& k, Type output, Reg lane, Reg in, Reg out) {
    Reg const d = k.ld(Space::global, Type::f32, Address(in), Cache::nc);
    Reg const qs_at = k.add(in, k.mul_wide(lane, 8));
    Reg const index = k.shl(lane, 3);
    for (int w = 0; w < 2; ++w) {
        Reg const word = k.ld(Space::global, Type::s32, Address(qs_at, 4 + 4 * w), Cache::nc);
        std::array<Reg, 4> y{};
        for (int b = 0; b < 4; ++b) y[b] = k.mul(d, to_float(k, k.bfe(word, 8 * b, 8)));
        store_values(k, output, out, index, 4 * w, y);
    }
}

// ---- one q8_k block per warp --------------------------------------------------------------------

// A warp's 256 values quantized as the reference quantize_q8_k does: lane L holds values 8L..8L+7.
struct Q8Block {
    std::array<Reg, 8> q;  // .s32: the int8 quants
    Reg d;                 // .f32
    Reg sum;               // .s32: Σ of this lane's eight quants
};

Reg warp_reduce(Kernel& k, Reg value, bool is_max) {
    for (int delta = 16; delta >= 1; delta /= 2) {
        Reg const other = k.shfl(ShuffleMode::bfly, value, delta);
        value = is_max ? k.max(value, other) : k.min(value, other);
    }
    return value;
}

// x86's result bits of iscale·x when that is NaN: x's NaN quieted when x is one, else the default
// NaN 0xFFC00000 (0·inf and the like). NVIDIA GPUs return 0x7FFFFFFF instead, and the reference
// reads these bits as an integer, so they are reproduced.
Reg x86_product_bits(Kernel& k, Reg product, Reg x) {
    Reg const bits = k.mov(Type::b32, product);
    Reg const product_nan = k.not_pred(k.setp(Cmp::eq, product, product));
    Reg const x_nan = k.not_pred(k.setp(Cmp::eq, x, x));
    Reg const nan_bits = k.selp(k.or_(k.mov(Type::b32, x), 0x00400000), 0xFFC00000u, x_nan, Type::b32);
    return k.selp(nan_bits, bits, product_nan, Type::b32);
}

Q8Block quantize_q8_block(Kernel& k, Reg lane, std::array<Reg, 8> const& x) {
    // amax: max.f32 returns the non-NaN operand, so NaNs are skipped like the reference's `ax > amax`.
    std::array<Reg, 8> ax{};
    Reg lane_max = k.mov(Type::f32, 0.0f);
    for (int i = 0; i < 8; ++i) {
        ax[i] = k.abs(x[i]);
        lane_max = k.max(lane_max, ax[i]);
    }
    Reg const amax = warp_reduce(k, lane_max, true);
    // max: the first value (in index order) whose magnitude is amax; its sign matters.
    Reg local = k.mov(Type::u32, 8);
    Reg candidate = k.mov(Type::f32, 0.0f);
    for (int i = 7; i >= 0; --i) {
        Reg const hit = k.setp(Cmp::eq, ax[i], amax);
        local = k.selp(i, local, hit, Type::u32);
        candidate = k.selp(x[i], candidate, hit, Type::f32);
    }
    Reg const index = k.selp(values_per_block, k.fma(lane, 8, local), k.setp(Cmp::eq, local, 8), Type::u32);
    Reg const first = warp_reduce(k, index, false);
    Reg const max = k.shfl(ShuffleMode::idx, candidate, k.shr(first, 3));
    Reg const zero_block = k.setp(Cmp::eq, amax, 0.0f);

    Reg const iscale = k.div(k.mov(Type::f32, -127.0f), max);
    Q8Block out{};
    out.sum = k.mov(Type::s32, 0);
    for (int i = 0; i < 8; ++i) {
        Reg const product = k.mul(iscale, x[i]);
        Reg const shifted = k.add(product, 12582912.0f);  // 1.5·2^23: the integer lands in the low mantissa bits
        Reg const bits = x86_product_bits(k, shifted, x[i]);
        Reg const raw = k.reg(Type::s32);
        k.sub(raw, k.and_(bits, 0x007fffff), 0x00400000);
        Reg const capped = k.min(raw, 127);
        out.q[i] = k.selp(0, k.bfe(capped, 0, 8), zero_block, Type::s32);  // the int8 store keeps the low byte
        out.sum = k.add(out.sum, out.q[i]);
    }
    out.d = k.selp(0.0f, k.div(k.mov(Type::f32, 1.0f), iscale), zero_block, Type::f32);
    return out;
}

std::array<Reg, 8> load_values(Kernel& k, Reg x, Reg lane) {
    Reg const at = k.add(x, k.mul_wide(lane, 32));
    std::vector<Reg> const v0 = k.ld_vector(Space::global, Type::f32, 4, Address(at), Cache::nc);
    std::vector<Reg> const v1 = k.ld_vector(Space::global, Type::f32, 4, Address(at, 16), Cache::nc);
    return {v0[0], v0[1], v0[2], v0[3], v1[0], v1[1], v1[2], v1[3]};
}

// x − d·q, as the CPU forms the residual (a product, then a difference).
std::array<Reg, 8> residual_of(Kernel& k, std::array<Reg, 8> const& x, Q8Block const& main) {
    std::array<Reg, 8> r{};
    for (int i = 0; i < 8; ++i) r[i] = k.sub(x[i], k.mul(main.d, to_float(k, main.q[i])));
    return r;
}

std::string type_name(DType t) { return std::string(to_string(t)); }

// q8_0 / q4_0 layouts: lane L's 8 values of record `record` of rows of k values (ceil(k/256)
// records a row), zero past the row's end (k is a multiple of 32, so 8 values are in or out whole).
std::array<Reg, 8> load_row_values(Kernel& k, Reg x, Reg record, Reg values_per_row, Reg lane) {
    Reg const records_per_row = k.shr(k.add(values_per_row, values_per_block - 1), 8);
    Reg const row = k.div(record, records_per_row);
    Reg const value = k.fma(k.sub(record, k.mul(row, records_per_row)), values_per_block, k.shl(lane, 3));
    std::array<Reg, 8> v{};
    for (Reg& r : v) r = k.mov(Type::f32, 0.0f);
    Reg const at = k.add(x, k.mul_wide(k.fma(row, values_per_row, value), 4));
    k.predicated(k.setp(Cmp::lt, value, values_per_row), true, [&] {
        k.ld_vector(std::span(v).first(4), Space::global, Type::f32, Address(at), Cache::nc);
        k.ld_vector(std::span(v).last(4), Space::global, Type::f32, Address(at, 16), Cache::nc);
    });
    return v;
}

// The q8_0 / q4_0 record layout (quant.hpp): lane L's quants at byte 8L (value order), and the slot
// of consumer lane j = L/4 (its four producers' sums) written by lane 4j.
void store_small_record(Kernel& k, Reg record, Reg lane, Q8Block const& main, Q8Block const& residual,
                        std::array<Reg, 2> const& main_words, std::array<Reg, 2> const& residual_words,
                        bool has_residual) {
    Reg const quant_at = k.add(record, k.mul_wide(lane, 8));
    k.st_vector(Space::global, Type::b32, Address(quant_at), main_words);
    if (has_residual) k.st_vector(Space::global, Type::b32, Address(quant_at, 256), residual_words);
    auto const sum32 = [&](Reg sum) {
        Reg const pair = k.add(sum, k.shfl(ShuffleMode::bfly, sum, 1));
        return k.add(pair, k.shfl(ShuffleMode::bfly, pair, 2));
    };
    std::array<Reg, 4> const slot{k.mov(Type::b32, sum32(main.sum)), k.mov(Type::b32, sum32(residual.sum)),
                                  k.mov(Type::b32, main.d), k.mov(Type::b32, residual.d)};
    Reg const slot_at = k.add(record, k.mul_wide(k.shl(k.shr(lane, 2), 4), 1));
    k.predicated(k.setp(Cmp::eq, k.and_(lane, 3), 0), true,
                 [&] { k.st_vector(Space::global, Type::b32, Address(slot_at, 512), slot); });
}

}  // namespace

Kernel dequantize(DequantizeConfig const& config) {
    check_threads(config.threads, "dequantize");
    DType const type = config.type;
    if (type != DType::q4_k && type != DType::q6_k && type != DType::q8_k && type != DType::q5_k &&
        type != DType::q8_0 && type != DType::q4_0)
        throw BuildError("ptx kernels: dequantize takes q4_k, q5_k, q6_k, q8_k, q8_0 or q4_0 blocks, not " +
                         type_name(type));
    if (config.output != Type::f32 && config.output != Type::f16)
        throw BuildError("ptx kernels: dequantize writes f32 or f16, not ." + std::string(name_of(config.output)));
    Kernel k("rayo_dequantize_" + type_name(type) + (config.output == Type::f16 ? "_f16" : ""));
    k.max_threads(config.threads);
    Reg const blocks = k.cvta_to_global(k.param(Type::u64, "blocks"));
    Reg const values = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const count = k.param(Type::u32, "count");
    if (type == DType::q8_0 || type == DType::q4_0) {
        LanePerPart const p = lane_per_part(k, config.threads, count);
        Reg const in = k.add(blocks, k.mul_wide(p.block, static_cast<std::uint32_t>(size_of(type))));
        if (type == DType::q8_0)
            dequantize_q8_0_part(k, config.output, p.part, in, p.block, values);
        else
            dequantize_q4_0_part(k, config.output, p.part, in, p.block, values);
        k.place(p.done);
        return k;
    }
    WarpPerBlock const w = warp_per_block(k, config.threads, count);
    Reg const in = k.add(blocks, k.mul_wide(w.block, static_cast<std::uint32_t>(size_of(config.type))));
    Reg const out = k.add(values, k.mul_wide(w.block, values_per_block * (config.output == Type::f16 ? 2 : 4)));
    switch (config.type) {
        case DType::q4_k: dequantize_q4_k_lane(k, config.output, w.lane, in, out); break;
        case DType::q5_k: dequantize_q5_k_lane(k, config.output, w.lane, in, out); break;
        case DType::q6_k: dequantize_q6_k_lane(k, config.output, w.lane, in, out); break;
        default: dequantize_q8_k_lane(k, config.output, w.lane, in, out); break;
    }
    k.place(w.done);
    return k;
}

Kernel quantize_q8(QuantizeQ8Config const& config) {
    check_threads(config.threads, "quantize_q8");
    Kernel k("rayo_quantize_q8_k");
    k.max_threads(config.threads);
    Reg const x = k.cvta_to_global(k.param(Type::u64, "x"));
    Reg const blocks = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const count = k.param(Type::u32, "count");
    WarpPerBlock const w = warp_per_block(k, config.threads, count);
    std::array<Reg, 8> const v = load_values(k, k.add(x, k.mul_wide(w.block, values_per_block * 4)), w.lane);
    Q8Block const q = quantize_q8_block(k, w.lane, v);
    Reg const out = k.add(blocks, k.mul_wide(w.block, static_cast<std::uint32_t>(size_of(DType::q8_k))));
    // qs[8L, 8L+8) at byte 4 + 8L: two words (blocks are 292 bytes, 4-byte aligned).
    Reg const qs_at = k.add(out, k.mul_wide(w.lane, 8));
    k.st(Space::global, Type::b32, Address(qs_at, 4), pack_bytes(k, q.q[0], q.q[1], q.q[2], q.q[3]));
    k.st(Space::global, Type::b32, Address(qs_at, 8), pack_bytes(k, q.q[4], q.q[5], q.q[6], q.q[7]));
    // bsums[g] covers lanes 2g and 2g+1; the even lane writes it, at byte 260 + 2g = 260 + L.
    Reg const sum16 = k.add(q.sum, k.shfl(ShuffleMode::bfly, q.sum, 1));
    Reg const even = k.setp(Cmp::eq, k.and_(w.lane, 1), 0);
    Reg const sum_at = k.add(out, k.mul_wide(w.lane, 1));
    k.predicated(even, true, [&] { k.st(Space::global, Type::u16, Address(sum_at, 260), sum16); });
    k.predicated(k.setp(Cmp::eq, w.lane, 0), true, [&] { k.st(Space::global, Type::f32, Address(out), q.d); });
    k.place(w.done);
    return k;
}

Kernel quantize_activations(QuantActivationsConfig const& config) {
    check_threads(config.threads, "quantize_activations");
    bool const small = small_block_weights(config.weight);
    if (config.weight != DType::q4_k && config.weight != DType::q5_k && config.weight != DType::q6_k && !small)
        throw BuildError(
            "ptx kernels: quantize_activations lays records out for q4_k, q5_k, q6_k, q8_0 or q4_0 "
            "weights, not " +
            type_name(config.weight));
    Kernel k("rayo_quant_activations_" + type_name(config.weight) + (config.residual ? "_residual" : ""));
    k.max_threads(config.threads);
    Reg const x = k.cvta_to_global(k.param(Type::u64, "x"));
    Reg const records = k.cvta_to_global(k.param(Type::u64, "records"));
    Reg const count = k.param(Type::u32, "count");
    Reg const values_per_row = small ? k.param(Type::u32, "k") : Reg{};
    WarpPerBlock const w = warp_per_block(k, config.threads, count);
    Reg const lane = w.lane;
    std::array<Reg, 8> const v = small ? load_row_values(k, x, w.block, values_per_row, lane)
                                       : load_values(k, k.add(x, k.mul_wide(w.block, values_per_block * 4)), lane);
    Q8Block main = quantize_q8_block(k, lane, v);
    Reg const poison = quant_detail::warp_non_finite_sum(k, v);
    Q8Block residual{};
    if (config.residual) {
        residual = quantize_q8_block(k, lane, residual_of(k, v, main));
        residual.d = k.add(residual.d, poison);
    }
    main.d = k.add(main.d, poison);
    if (!config.residual) {
        residual.d = k.mov(Type::f32, 0.0f);
        residual.sum = k.mov(Type::s32, 0);
    }
    auto const words = [&](Q8Block const& b) {
        return std::array<Reg, 2>{pack_bytes(k, b.q[0], b.q[1], b.q[2], b.q[3]),
                                  pack_bytes(k, b.q[4], b.q[5], b.q[6], b.q[7])};
    };
    std::array<Reg, 2> const main_words = words(main);
    std::array<Reg, 2> residual_words{};
    if (config.residual) residual_words = words(residual);
    auto const record_bytes = static_cast<std::uint32_t>(activation_record_bytes(config.weight));
    Reg const record = k.add(records, k.mul_wide(w.block, record_bytes));
    std::array<Reg, 2> const d_pair{main.d, residual.d};

    if (small) {
        store_small_record(k, record, lane, main, residual, main_words, residual_words, config.residual);
    } else if (config.weight != DType::q6_k) {
        // q4_k (and q5_k): producer lane L holds values 8L..8L+7: consumer lane j = 2c + s with c = L/8, s = (L/2)%2,
        // in its low (hi = 0) or high (hi = 1) piece, at byte 8·(L%2).
        Reg const c = k.shr(lane, 3);
        Reg const hi = k.and_(k.shr(lane, 2), 1);
        Reg const s = k.and_(k.shr(lane, 1), 1);
        Reg const j = k.fma(c, 2, s);
        Reg const quant_offset = k.add(k.fma(hi, 128, k.shl(j, 4)), k.shl(k.and_(lane, 1), 3));
        Reg const quant_at = k.add(record, k.mul_wide(quant_offset, 1));
        k.st_vector(Space::global, Type::b32, Address(quant_at), main_words);
        if (config.residual) k.st_vector(Space::global, Type::b32, Address(quant_at, 256), residual_words);
        // Sums of 16 (lanes 2g, 2g+1) go to slot j as int16: main at 2·hi, residual at 4 + 2·hi;
        // the slot's d pair after them (written by both producers of a slot, the same values).
        Reg const main16 = k.add(main.sum, k.shfl(ShuffleMode::bfly, main.sum, 1));
        Reg const residual16 = k.add(residual.sum, k.shfl(ShuffleMode::bfly, residual.sum, 1));
        Reg const slot_at = k.add(record, k.mul_wide(k.fma(j, 16, k.shl(hi, 1)), 1));
        Reg const pair_at = k.add(record, k.mul_wide(j, 16));
        Reg const even = k.setp(Cmp::eq, k.and_(lane, 1), 0);
        k.predicated(even, true, [&] {
            k.st(Space::global, Type::u16, Address(slot_at, 512), main16);
            k.st(Space::global, Type::u16, Address(slot_at, 516), residual16);
            k.st_vector(Space::global, Type::f32, Address(pair_at, 520), d_pair);
        });
    } else {
        // Producer lane L: half h = L/16, i = (L/4)%4; its first word goes to consumer lane
        // j = 8h + 2·(L%4) at byte 4i, its second to lane j + 1.
        Reg const h = k.shr(lane, 4);
        Reg const i = k.and_(k.shr(lane, 2), 3);
        Reg const j = k.fma(h, 8, k.shl(k.and_(lane, 3), 1));
        Reg const quant_at = k.add(record, k.mul_wide(k.fma(j, 16, k.shl(i, 2)), 1));
        k.st(Space::global, Type::b32, Address(quant_at), main_words[0]);
        k.st(Space::global, Type::b32, Address(quant_at, 16), main_words[1]);
        if (config.residual) {
            k.st(Space::global, Type::b32, Address(quant_at, 256), residual_words[0]);
            k.st(Space::global, Type::b32, Address(quant_at, 272), residual_words[1]);
        }
        Reg const slot_at = k.add(record, k.mul_wide(j, 16));
        k.st_vector(Space::global, Type::f32, Address(slot_at, 512), d_pair);
        k.st_vector(Space::global, Type::f32, Address(slot_at, 528), d_pair);
    }
    k.place(w.done);
    return k;
}

}  // namespace rayo::ptx::kernels
