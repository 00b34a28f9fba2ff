// What the row-wise kernel generators (softmax.cpp, normalization.cpp) share: where a thread's row
// and elements are, loads and stores of the elements a thread holds, group and block reductions,
// and the float math (e^(x - m), log) they need. Not part of the API.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "rayo/ptx/kernel.hpp"
#include "ptx/kernels/element_access.hpp"
#include "rayo/ptx/kernels/row_layout.hpp"

namespace rayo::ptx::kernels::row_detail {

inline constexpr float infinity = std::numeric_limits<float>::infinity();
inline constexpr float log2e = 0x1.715476p+0f;
// log2(e) - log2e, so x·log2(e) = x·log2e + x·log2e_lo to about 2^-48 relative.
inline constexpr float log2e_lo = 0x1.4ae0cp-26f;
inline constexpr float ln2 = 0x1.62e43p-1f;
// ln2 = ln2_hi + ln2_lo (Cody-Waite, as in cpu/vector_math.hpp): k·ln2_hi is exact for |k| < 2^15.
inline constexpr float ln2_hi = 0x1.63p-1f;
inline constexpr float ln2_lo = -0x1.bd0106p-13f;

// max.NaN.f32 (sm_80): a NaN operand gives NaN, so a NaN in a row reaches every output of the row
// (plain max.f32 returns the other operand and would drop it). The builder has no emitter for it.
inline Reg max_nan(Kernel& k, Reg a, Operand b) {
    Reg r = k.reg(Type::f32);
    OperandUse second = b.is_reg() ? OperandUse{RegUse{b.reg(), Type::f32}} : OperandUse{ImmUse{b.imm(), Type::f32}};
    k.instruction("max.NaN.f32", {RegUse{r, Type::f32, Access::write}, RegUse{a, Type::f32}, second},
                  {.compute_capability = 80});
    return r;
}

// Combines a list of registers pairwise (a balanced tree: short dependency chains, and sums
// rounded over log2(n) levels instead of n).
inline Reg tree(std::vector<Reg> values, std::function<Reg(Reg, Reg)> const& combine) {
    while (values.size() > 1) {
        std::vector<Reg> next;
        for (std::size_t i = 0; i + 1 < values.size(); i += 2) next.push_back(combine(values[i], values[i + 1]));
        if (values.size() % 2) next.push_back(values.back());
        values = std::move(next);
    }
    return values.front();
}
inline Reg tree_sum(Kernel& k, std::vector<Reg> values) {
    return tree(std::move(values), [&](Reg a, Reg b) { return k.add(a, b); });
}
inline Reg tree_max(Kernel& k, std::vector<Reg> values) {
    return tree(std::move(values), [&](Reg a, Reg b) { return max_nan(k, a, b); });
}

// s + e = a + b exactly (Knuth's two-sum, any magnitudes; finite a, b).
struct TwoSum {
    Reg s, e;
};
inline TwoSum two_sum(Kernel& k, Reg a, Reg b) {
    Reg const s = k.add(a, b);
    Reg const bb = k.sub(s, a);
    Reg const e = k.add(k.sub(a, k.sub(s, bb)), k.sub(b, bb));
    return {s, e};
}

// e^(x - m) for x <= m (m a row maximum; neg_m = -m). ex2.approx (about 2 ulp) on an argument
// carried in two parts: the rounding of x - m (two-sum) and of (x - m)·log2(e) (fma) would
// otherwise cost up to |x - m|·2^-24 relative each (5e-6 at x - m = -87). Result: about 3 ulp.
// x = -inf gives 0, a NaN x or m gives NaN; below x - m = -104 the result is 0 in float.
inline Reg exp_difference(Kernel& k, Reg x, Reg m, Reg neg_m) {
    Reg const d = k.sub(x, m);
    // Two-sum with b = -m: err = (x - m) - d exactly.
    Reg const bb = k.sub(d, x);
    Reg const err = k.add(k.sub(x, k.sub(d, bb)), k.sub(neg_m, bb));
    // x = -inf makes err NaN (inf - inf) and d·log2e would lose its low part: clamp where e^d is
    // 0 anyway. max.NaN keeps a NaN d (a NaN row stays NaN).
    Reg const in_range = k.setp(Cmp::ge, d, -128.0f);
    Reg const err_used = k.selp(err, 0.0f, in_range, Type::f32);
    Reg const dc = max_nan(k, d, -128.0f);
    Reg const hi = k.mul(dc, log2e);
    Reg lo = k.fma(dc, log2e, k.neg(hi));  // the product's rounding error, exactly
    lo = k.fma(dc, log2e_lo, lo);
    lo = k.fma(err_used, log2e, lo);
    // 2^(hi + lo) = 2^hi·(1 + lo·ln2) to 2^-35: |lo| <= 2^-17 here.
    Reg const e = k.ex2_approx(hi);
    return k.fma(e, k.mul(lo, ln2), e);
}

// Natural log of a positive normal float (the row sums here are >= 1), NaN for NaN: Cephes logf
// as in cpu/vector_math.hpp (0.85 ulp there).
inline Reg log_positive(Kernel& k, Reg x) {
    // x = 2^e·m with m in [sqrt(1/2), sqrt(2)): offset the bits so the exponent carries at sqrt(2).
    Reg const bits = k.mov(Type::b32, x);
    Reg const ix = k.add(bits, 0x3f800000 - 0x3f3504f3);
    Reg const exponent = k.mov(Type::s32, k.sub(k.shr(ix, 23), 127));
    Reg const f = k.sub(k.mov(Type::f32, k.add(k.and_(ix, 0x007fffff), 0x3f3504f3)), 1.0f);  // exact
    Reg const kf = k.cvt(Type::f32, exponent);
    // log(1+f) = f - f²/2 + f³·P(f), P in Estrin form; then + e·ln2 in two parts.
    Reg const z = k.mul(f, f);
    Reg const z2 = k.mul(z, z);
    Reg const p01 = k.fma(f, -2.4999993993e-1f, 3.3333331174e-1f);
    Reg const p23 = k.fma(f, -1.6668057665e-1f, 2.0000714765e-1f);
    Reg const p45 = k.fma(f, -1.2420140846e-1f, 1.4249322787e-1f);
    Reg const p67 = k.fma(f, -1.1514610310e-1f, 1.1676998740e-1f);
    Reg const p48 = k.fma(k.fma(z, 7.0376836292e-2f, p67), z, p45);
    Reg const p = k.fma(p48, z2, k.fma(p23, z, p01));
    Reg y = k.mul(k.mul(p, f), z);
    y = k.fma(kf, ln2_lo, y);
    y = k.fma(z, -0.5f, y);
    Reg const r = k.fma(kf, ln2_hi, k.add(f, y));
    return k.selp(r, x, k.setp(Cmp::eq, x, x), Type::f32);  // NaN in, NaN out
}

// Where a thread is: its row and its place within the row.
struct RowFrame {
    Reg tid;                     // %tid.x
    Reg row;                     // .u32
    Reg row_valid;               // .pred (group layout: the last block's groups may lie past the last row)
    Reg position;                // the thread's index among the row's threads (lane in group, or tid)
    Reg warp, warp_lane;         // block layouts: for the reduction through shared memory
    Reg cols;                    // .u32
    DType element = DType::f32;  // of the row's tensors: f32, f16 or bf16 (values are .f32 in registers)
    unsigned shift = 2;          // log2 of the element's bytes
    Reg row_offset;              // .u64 bytes from a tensor's start to the row
    Reg thread_offset;           // .u64 bytes from the row start to the thread's first element
    Reg remaining;  // .s32 register layouts: elements of the row from the thread's first on (0 past the last row)
    unsigned row_threads = 1;   // threads sharing a row (group or block)
    unsigned stride_bytes = 0;  // between a thread's consecutive vectors (register layouts)
};

inline unsigned log2_exact(unsigned v) { return static_cast<unsigned>(std::countr_zero(v)); }

inline RowFrame row_frame(Kernel& k, RowConfig const& c, DType element, Reg rows, Reg cols) {
    element_detail::check_floating("row kernel", element);
    RowFrame f;
    f.cols = cols;
    f.element = element;
    f.shift = element_detail::size_shift(element);
    f.tid = k.special(Special::tid_x);
    Reg const block = k.special(Special::ctaid_x);
    if (c.layout == RowLayout::group) {
        f.row_threads = c.group;
        f.position = c.group == 1 ? k.mov(Type::u32, 0) : k.and_(f.tid, c.group - 1);
        Reg const group_index = c.group == 1 ? f.tid : k.shr(f.tid, log2_exact(c.group));
        f.row = k.fma(block, rows_per_block(c), group_index);
        f.row_valid = k.setp(Cmp::lt, f.row, rows);
    } else {
        f.row_threads = c.block;
        f.position = f.tid;
        f.row = block;
        f.warp = k.shr(f.tid, 5);
        f.warp_lane = k.and_(f.tid, 31);
    }
    f.row_offset = k.shl(k.mul_wide(f.row, cols), f.shift);  // rows·cols may pass 2^32 elements
    f.thread_offset = k.mul_wide(f.position, c.vector << f.shift);
    f.stride_bytes = f.row_threads * (c.vector << f.shift);
    if (c.layout != RowLayout::block_loop) {
        Reg remaining = k.mov(Type::s32, k.sub(cols, k.mul(f.position, c.vector)));
        if (c.layout == RowLayout::group) remaining = k.selp(remaining, 0, f.row_valid, Type::s32);
        f.remaining = remaining;
    }
    return f;
}

// The values a thread holds of a row: items × vector registers and, per item, whether it lies in
// the row.
struct Held {
    std::vector<std::vector<Reg>> x;  // [item][element]
    std::vector<Reg> ok;              // .pred per item
};

// One vector of `vector` elements of `element` at `at` into fresh .f32 registers (16-bit elements
// widened: 1, 2 or 4 of them as one .b16, .b32 or .v2.b32 access); with a (valid) predicate that
// is false, nothing is read and the registers keep `fill`.
inline std::vector<Reg> load_vector(Kernel& k, DType element, unsigned vector, Address const& at, Reg ok, float fill,
                                    Cache cache = Cache::none) {
    std::vector<Reg> x;
    for (unsigned e = 0; e < vector; ++e) x.push_back(k.mov(Type::f32, fill));
    auto load = [&] {
        if (element == DType::f32) {
            if (vector == 1)
                k.ld(x[0], Space::global, Type::f32, at, cache);
            else
                k.ld_vector(x, Space::global, Type::f32, at, cache);
            return;
        }
        std::vector<Reg> raw;
        if (vector == 1)
            raw.push_back(k.ld(Space::global, Type::b16, at, cache));
        else
            for (Reg word : vector == 2 ? std::vector<Reg>{k.ld(Space::global, Type::b32, at, cache)}
                                        : k.ld_vector(Space::global, Type::b32, 2, at, cache))
                for (Reg half : k.split(word, Type::b16)) raw.push_back(half);
        for (unsigned e = 0; e < vector; ++e) k.mov(x[e], element_detail::widen(k, element, raw[e]));
    };
    if (ok.valid())
        k.predicated(ok, true, load);
    else
        load();
    return x;
}

// `y` (.f32) as `y.size()` elements of `element` at `at` (16-bit ones rounded to nearest even).
inline void store_vector(Kernel& k, DType element, Address const& at, std::vector<Reg> const& y, Reg ok) {
    auto store = [&] {
        if (element == DType::f32) {
            if (y.size() == 1)
                k.st(Space::global, Type::f32, at, y[0]);
            else
                k.st_vector(Space::global, Type::f32, at, y);
            return;
        }
        std::vector<Reg> raw;
        for (Reg v : y) raw.push_back(element_detail::narrow(k, element, v));
        if (raw.size() == 1) return k.st(Space::global, Type::b16, at, raw[0]);
        std::vector<Reg> words;
        for (std::size_t e = 0; e < raw.size(); e += 2) words.push_back(k.join(Type::b32, raw[e], raw[e + 1]));
        if (words.size() == 1)
            k.st(Space::global, Type::b32, at, words[0]);
        else
            k.st_vector(Space::global, Type::b32, at, words);
    };
    if (ok.valid())
        k.predicated(ok, true, store);
    else
        store();
}

// `count` vectors at address + i·stride_bytes (i < count), predicated by ok[i].
inline std::vector<std::vector<Reg>> load_vectors(Kernel& k, DType element, unsigned vector, Reg address,
                                                  unsigned count, std::int64_t stride_bytes, std::vector<Reg> const& ok,
                                                  float fill, Cache cache = Cache::none) {
    std::vector<std::vector<Reg>> x;
    for (unsigned i = 0; i < count; ++i)
        x.push_back(load_vector(k, element, vector, Address(address, static_cast<std::int64_t>(i) * stride_bytes),
                                ok[i], fill, cache));
    return x;
}

inline void store_vectors(Kernel& k, DType element, Reg address, std::int64_t stride_bytes,
                          std::vector<std::vector<Reg>> const& y, std::vector<Reg> const& ok) {
    for (std::size_t i = 0; i < y.size(); ++i)
        store_vector(k, element, Address(address, static_cast<std::int64_t>(i) * stride_bytes), y[i], ok[i]);
}

// The bytes of one vector of the row's elements (a step of the loop layout's index j).
inline unsigned vector_bytes(RowConfig const& c, RowFrame const& f) { return c.vector << f.shift; }

// The thread's first element of a tensor laid out like the rows (with_row) or like one row (gamma,
// beta).
inline Reg thread_address(Kernel& k, RowFrame const& f, Reg base, bool with_row = true) {
    Reg const at = with_row ? k.add(base, f.row_offset) : base;
    return k.add(at, f.thread_offset);
}

// Register layouts: the predicates of the thread's items.
inline std::vector<Reg> item_predicates(Kernel& k, RowConfig const& c, RowFrame const& f) {
    std::vector<Reg> ok;
    for (unsigned i = 0; i < c.items; ++i)
        ok.push_back(k.setp(Cmp::gt, f.remaining, static_cast<std::int64_t>(i) * f.row_threads * c.vector));
    return ok;
}

inline Held load_held(Kernel& k, RowConfig const& c, RowFrame const& f, Reg thread_in, float fill) {
    Held h;
    h.ok = item_predicates(k, c, f);
    h.x = load_vectors(k, f.element, c.vector, thread_in, c.items, f.stride_bytes, h.ok, fill);
    return h;
}

// Combines lists of values (one register per reduced quantity) elementwise.
using Combine = std::function<std::vector<Reg>(std::vector<Reg> const&, std::vector<Reg> const&)>;

// Butterfly over `width` lanes (a power of two <= 32): afterwards every lane of each aligned group
// of `width` lanes holds the group's combination.
inline std::vector<Reg> butterfly(Kernel& k, std::vector<Reg> values, unsigned width, Combine const& combine) {
    for (unsigned offset = width / 2; offset >= 1; offset /= 2) {
        std::vector<Reg> other;
        for (Reg v : values) other.push_back(k.shfl(ShuffleMode::bfly, v, offset));
        values = combine(values, other);
    }
    return values;
}

// Combines `values` over the threads of a row; every thread of the row gets the result. Block
// layouts go through `shared_name` (a fresh shared array per reduction, so no barrier is needed
// before the next one); `identity` fills the lanes past the last warp.
inline std::vector<Reg> reduce_row(Kernel& k, RowConfig const& c, RowFrame const& f, std::vector<Reg> values,
                                   std::vector<float> const& identity, Combine const& combine,
                                   std::string const& shared_name) {
    if (c.layout == RowLayout::group) return butterfly(k, std::move(values), c.group, combine);
    values = butterfly(k, std::move(values), 32, combine);
    unsigned const warps = c.block / 32;
    auto const n = static_cast<std::int64_t>(values.size());
    Symbol const partials = k.shared_array(shared_name, Type::f32, static_cast<std::size_t>(warps * n), 16);
    Reg const base = k.shared_address(partials);
    Reg const mine = k.add(base, k.mul(f.warp, 4));
    k.predicated(k.setp(Cmp::eq, f.warp_lane, 0), true, [&] {
        for (std::int64_t i = 0; i < n; ++i)
            k.st(Space::shared, Type::f32, Address(mine, i * warps * 4), values[static_cast<std::size_t>(i)]);
    });
    k.bar_sync();
    Reg const lane_at = k.add(base, k.mul(f.warp_lane, 4));
    std::vector<Reg> partial;
    for (std::int64_t i = 0; i < n; ++i) partial.push_back(k.mov(Type::f32, identity[static_cast<std::size_t>(i)]));
    k.predicated(k.setp(Cmp::lt, f.warp_lane, warps), true, [&] {
        for (std::int64_t i = 0; i < n; ++i)
            k.ld(partial[static_cast<std::size_t>(i)], Space::shared, Type::f32, Address(lane_at, i * warps * 4));
    });
    partial = butterfly(k, std::move(partial), warps, combine);
    std::vector<Reg> result;
    for (Reg v : partial) result.push_back(k.shfl(ShuffleMode::idx, v, 0));
    return result;
}

inline Combine sum_combine(Kernel& k) {
    return [&k](std::vector<Reg> const& a, std::vector<Reg> const& b) {
        std::vector<Reg> r;
        for (std::size_t i = 0; i < a.size(); ++i) r.push_back(k.add(a[i], b[i]));
        return r;
    };
}
inline Combine max_combine(Kernel& k) {
    return [&k](std::vector<Reg> const& a, std::vector<Reg> const& b) {
        std::vector<Reg> r;
        for (std::size_t i = 0; i < a.size(); ++i) r.push_back(max_nan(k, a[i], b[i]));
        return r;
    };
}

// block_loop: for (j = tid; j < vectors; j += items·block) body(j, ok), j .s32; body handles the
// vectors j + i·block (i < items), ok[i] saying which lie in the row (ok[0] is always true and
// left invalid: no predicate needed).
inline void loop_row(Kernel& k, RowConfig const& c, RowFrame const& f, Reg vectors,
                     std::function<void(Reg, std::vector<Reg> const&)> const& body) {
    // Bounds per item, hoisted: j + i·block < vectors  <=>  j < vectors - i·block.
    std::vector<Reg> bound(c.items);
    for (unsigned i = 1; i < c.items; ++i) bound[i] = k.sub(vectors, static_cast<std::int64_t>(i * c.block));
    Reg const j = k.reg(Type::s32);
    k.for_range(j, f.tid, vectors, static_cast<std::int64_t>(c.items * c.block), [&] {
        std::vector<Reg> ok(c.items);
        for (unsigned i = 1; i < c.items; ++i) ok[i] = k.setp(Cmp::lt, j, bound[i]);
        body(j, ok);
    });
}

}  // namespace rayo::ptx::kernels::row_detail
