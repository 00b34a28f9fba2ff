// Element-wise kernels: the grid-stride loop (16-byte vector body, scalar head and tail) and the
// per-element math. exp, log, tanh, sigmoid, silu, elu and gelu_tanh repeat the FMA path of
// rayo/cpu/vector_math.hpp operation by operation (fma.rn is the CPU's fused multiply-add, and
// add/mul/div are .rn), so the GPU gives the CPU's bits and inherits its measured bounds. Where the
// CPU relies on x86 min/max returning the second operand for NaN, the kernels use min.NaN/max.NaN,
// which return NaN, or plain min/max where the CPU's result is the non-NaN one.
#include "rayo/ptx/kernels/elementwise.hpp"
#include "ptx/kernels/element_access.hpp"
#include "ptx/kernels/strided_layout.hpp"
#include "ptx/kernels/strided_loop.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace rayo::ptx::kernels {

namespace {

constexpr float infinity = std::numeric_limits<float>::infinity();
constexpr float quiet_nan = std::numeric_limits<float>::quiet_NaN();
constexpr float log2e = 0x1.715476p+0f;
// ln2 = ln2_hi + ln2_lo (Cody-Waite); n·ln2_hi is exact for |n| < 2^15.
constexpr float ln2_hi = 0x1.63p-1f;
constexpr float ln2_lo = -0x1.bd0106p-13f;
// x + 1.5·2^23 rounds x to an integer held in the low mantissa bits.
constexpr float round_magic = 0x1.8p+23f;
constexpr std::int64_t round_magic_bits = 0x4B400000;
constexpr std::int64_t one_bits = 0x3F800000;

// ---- bit-level helpers

// The bits of an f32 register as .s32 (and back): mov.b32 between registers of any 32-bit type.
Reg float_bits(Kernel& k, Reg f) { return k.bitcast(Type::s32, f); }
Reg bits_float(Kernel& k, Reg i) { return k.bitcast(Type::f32, i); }
Reg constant(Kernel& k, float v) { return k.mov(Type::f32, v); }

// min/max that return NaN when either operand is NaN (the builder's min/max return the other one).
Reg min_nan(Kernel& k, Reg a, float b) {
    Reg r = k.reg(Type::f32);
    k.instruction("min.NaN.f32", {RegUse{r, Type::f32, Access::write}, RegUse{a, Type::f32}, ImmUse{b, Type::f32}},
                  {.compute_capability = 80});
    return r;
}
Reg max_nan(Kernel& k, Reg a, float b) {
    Reg r = k.reg(Type::f32);
    k.instruction("max.NaN.f32", {RegUse{r, Type::f32, Access::write}, RegUse{a, Type::f32}, ImmUse{b, Type::f32}},
                  {.compute_capability = 80});
    return r;
}
Reg select(Kernel& k, Reg predicate, Operand if_true, Operand if_false) {
    return k.selp(if_true, if_false, predicate, Type::f32);
}
// x < lo ? lo : x and x > hi ? hi : x, keeping NaN (the CPU's clamp_below / clamp_above).
Reg clamp_below(Kernel& k, Reg x, float lo) { return select(k, k.setp(Cmp::lt, x, lo), lo, x); }

// ---- the CPU's exp building blocks (vector_math.hpp, detail::)

struct Reduced {
    Reg r;  // x - n·ln2
    Reg t;  // n + round_magic (n in the low mantissa bits)
};

Reduced exp_reduce(Kernel& k, Reg x) {
    Reg t = k.fma(x, log2e, round_magic);
    Reg n = k.sub(t, round_magic);
    Reg r = k.fma(n, -ln2_hi, x);
    return {k.fma(n, -ln2_lo, r), t};
}

// e^r - 1 for |r| <= ~0.35 (Cephes expf), Estrin form as on the CPU.
Reg expm1_poly(Kernel& k, Reg r) {
    Reg r2 = k.mul(r, r);
    Reg p01 = k.fma(r, 1.6666665459e-1f, 5.0000001201e-1f);
    Reg p23 = k.fma(r, 8.3334519073e-3f, 4.1665795894e-2f);
    Reg p45 = k.fma(r, 1.9875691500e-4f, 1.3981999507e-3f);
    Reg p = k.fma(k.fma(p45, r2, p23), r2, p01);
    return k.fma(p, r2, r);
}

// p·2^n by adding n to the exponent field; valid when the result is normal.
Reg scale_fast(Kernel& k, Reg p, Reg t) { return bits_float(k, k.add(float_bits(k, p), k.shl(float_bits(k, t), 23))); }

// 2^n as two power-of-two factors, so p·s1·s2 rounds a subnormal result once; n in [-252, 254].
struct ScaleFactors {
    Reg s1, s2;
};
ScaleFactors scale_factors(Kernel& k, Reg t) {
    Reg n = k.sub(float_bits(k, t), round_magic_bits);
    Reg n1 = k.shr(n, 1);  // arithmetic: n is .s32
    Reg n2 = k.sub(n, n1);
    return {bits_float(k, k.shl(k.add(n1, 127), 23)), bits_float(k, k.shl(k.add(n2, 127), 23))};
}
Reg scale(Kernel& k, Reg p, ScaleFactors const& s) { return k.mul(k.mul(p, s.s1), s.s2); }
Reg scale_slow(Kernel& k, Reg p, Reg t) { return scale(k, p, scale_factors(k, t)); }

// e^-x for x >= -87 (silu, gelu_tanh): the negation folded into the reduction and the odd terms.
Reg exp_neg(Kernel& k, Reg x, Reg const* x_lo = nullptr) {
    Reg xc = min_nan(k, x, 87.0f);
    Reg t = k.fma(xc, -log2e, round_magic);
    Reg n = k.sub(t, round_magic);
    Reg rn = k.fma(n, ln2_lo, k.fma(n, ln2_hi, xc));  // -r
    if (x_lo) rn = k.add(rn, *x_lo);
    Reg r2 = k.mul(rn, rn);
    Reg p01 = k.fma(rn, -1.6666665459e-1f, 5.0000001201e-1f);
    Reg p23 = k.fma(rn, -8.3334519073e-3f, 4.1665795894e-2f);
    Reg p45 = k.fma(rn, -1.9875691500e-4f, 1.3981999507e-3f);
    Reg p = k.fma(k.fma(p45, r2, p23), r2, p01);
    return scale_fast(k, k.add(k.fma(p, r2, k.neg(rn)), 1.0f), t);
}

// ---- the ops

Reg exp_value(Kernel& k, Reg x) {
    // Clamping to [-104, 89] changes nothing the CPU's fast path computes, and there scale_slow
    // equals scale_fast exactly; outside, it is the CPU's slow path. exp(-104) < 2^-150.
    Reg xc = max_nan(k, min_nan(k, x, 89.0f), -104.0f);
    Reduced const rd = exp_reduce(k, xc);
    return scale_slow(k, k.add(expm1_poly(k, rd.r), 1.0f), rd.t);
}

Reg log_value(Kernel& k, Reg x) {
    // Subnormals: scale into the normal range so the exponent field means something.
    Reg sub = k.setp(Cmp::lt, x, 0x1p-126f);
    Reg xs = select(k, sub, k.mul(x, 0x1p+23f), x);
    Reg kbias = select(k, sub, -23.0f, 0.0f);
    // x = 2^k·m with m in [sqrt(1/2), sqrt(2)).
    Reg ix = k.add(float_bits(k, xs), std::int64_t{0x3f800000 - 0x3f3504f3});
    Reg ke = k.sub(k.shr(ix, 23), 127);
    Reg f = k.sub(bits_float(k, k.add(k.and_(ix, 0x007fffff), 0x3f3504f3)), 1.0f);
    Reg kf = k.add(k.cvt(Type::f32, ke, Rounding::rn), kbias);
    Reg z = k.mul(f, f);
    Reg z2 = k.mul(z, z);
    Reg p01 = k.fma(f, -2.4999993993e-1f, 3.3333331174e-1f);
    Reg p23 = k.fma(f, -1.6668057665e-1f, 2.0000714765e-1f);
    Reg p45 = k.fma(f, -1.2420140846e-1f, 1.4249322787e-1f);
    Reg p67 = k.fma(f, -1.1514610310e-1f, 1.1676998740e-1f);
    Reg p48 = k.fma(k.fma(z, 7.0376836292e-2f, p67), z, p45);
    Reg p = k.fma(p48, z2, k.fma(p23, z, p01));
    Reg y = k.mul(k.mul(p, f), z);
    y = k.fma(kf, ln2_lo, y);
    y = k.fma(z, -0.5f, y);
    Reg r = k.fma(kf, ln2_hi, k.add(f, y));
    r = select(k, k.setp(Cmp::eq, x, infinity), infinity, r);
    r = select(k, k.setp(Cmp::eq, x, 0.0f), -infinity, r);
    return select(k, k.setp(Cmp::ge, x, 0.0f), r, quiet_nan);  // x < 0 or NaN
}

Reg tanh_value(Kernel& k, Reg x) {
    // 2u/(1 + u²) with u = tanh(x/2) as a (2,3) rational (see the CPU's comment); ±1 from 9.125.
    Reg a = max_nan(k, min_nan(k, x, 0x1.24p+3f), -0x1.24p+3f);
    Reg z = k.mul(a, a);
    Reg p = k.fma(z, 0x1.bd30a2p-14f, 0x1.c69614p-6f);
    p = k.fma(p, z, 0x1.dd70a4p-1f);
    Reg q = k.fma(z, 0x1.315924p-19f, 0x1.266f8p-9f);
    q = k.fma(q, z, 0x1.aff094p-3f);
    q = k.fma(q, z, 0x1.dd70a4p+0f);
    Reg n = k.mul(a, p);
    return k.div(k.mul(n, k.add(q, q)), k.fma(q, q, k.mul(n, n)));
}

Reg sigmoid_value(Kernel& k, Reg x) {
    // sigmoid x = v/(v + 2^64·e^-r), v = 2^(64+m), x = m·ln2 + r: one division, no slow path.
    Reg xc = max_nan(k, min_nan(k, x, 40.0f), -120.0f);
    float const magic = round_magic + 191.0f;
    Reg t = k.fma(xc, log2e, magic);
    Reg v = bits_float(k, k.shl(float_bits(k, t), 23));
    Reg m = k.sub(t, magic);
    Reg r = k.fma(m, -ln2_lo, k.fma(m, -ln2_hi, xc));
    Reg p = k.fma(r, -0x1.10890ep+57f, 0x1.573b18p+59f);
    p = k.fma(p, r, -0x1.5557b6p+61f);
    p = k.fma(p, r, 0x1.fffdc4p+62f);
    p = k.fma(p, r, -0x1.fffffep+63f);
    return k.div(v, k.fma(p, r, k.add(v, 0x1p+64f)));
}

// Runs `tail` in place of the value of `result` where `predicate` holds (a branch: the tails are
// rare, and a warp with no lane in them skips the code).
void override_where(Kernel& k, Reg predicate, Reg result, std::function<Reg()> const& tail) {
    k.if_then(predicate, [&] { k.mov(result, tail()); });
}

Reg silu_value(Kernel& k, Reg x) {
    Reg r = k.div(x, k.add(exp_neg(k, x), 1.0f));
    // x < -87 or NaN: x·e^x with the 2^n scaling after the product (one rounding when subnormal).
    override_where(k, k.not_pred(k.setp(Cmp::ge, x, -87.0f)), r, [&] {
        Reg xc = clamp_below(k, x, -115.0f);
        Reduced const rd = exp_reduce(k, xc);
        return scale_slow(k, k.mul(xc, k.add(expm1_poly(k, rd.r), 1.0f)), rd.t);
    });
    return r;
}

Reg elu_value(Kernel& k, Reg x, Reg alpha) {
    // expm1 on [-30, 0]: e^x - 1 = 2^n·(e^r - 1) + (2^n - 1).
    Reg xc = max_nan(k, min_nan(k, x, 0.0f), -30.0f);
    Reduced const rd = exp_reduce(k, xc);
    Reg q = expm1_poly(k, rd.r);
    Reg s = bits_float(k, k.add(k.shl(float_bits(k, rd.t), 23), one_bits));  // 2^n
    Reg em1 = k.fma(s, q, k.sub(s, 1.0f));
    return select(k, k.setp(Cmp::ge, x, 0.0f), x, k.mul(em1, alpha));
}

// z = 2·sqrt(2/π)·(x + 0.044715·x³) as zh + zl (double-float), as the CPU's gelu_tanh_arg.
struct DoubleFloat {
    Reg hi, lo;
};
DoubleFloat gelu_tanh_arg(Kernel& k, Reg x) {
    constexpr float c1_hi = 0x1.988454p+0f, c1_lo = -0x1.857936p-25f;
    constexpr float c3_hi = 0x1.2444f2p-4f, c3_lo = 0x1.49b16ap-29f;
    Reg sh = k.mul(x, x);
    Reg sl = k.fma(x, x, k.neg(sh));
    Reg ph = k.mul(sh, c3_hi);
    Reg pl = k.fma(sh, c3_hi, k.neg(ph));
    pl = k.fma(sl, c3_hi, pl);
    pl = k.fma(sh, c3_lo, pl);
    // two_sum(c1_hi, ph)
    Reg c1 = constant(k, c1_hi);
    Reg wh = k.add(c1, ph);
    Reg bb = k.sub(wh, c1);
    Reg wl = k.add(k.sub(c1, k.sub(wh, bb)), k.sub(ph, bb));
    wl = k.add(wl, k.add(pl, c1_lo));
    Reg zh = k.mul(x, wh);
    Reg zl = k.fma(x, wh, k.neg(zh));
    zl = k.fma(x, wl, zl);
    return {zh, zl};
}

Reg gelu_tanh_value(Kernel& k, Reg x) {
    // x·sigmoid(z); above 12 gelu = x. A NaN x gives a finite z (plain min returns 12, as the
    // CPU's minps does) and reaches the result through x.
    Reg xc = k.min(x, 12.0f);
    DoubleFloat const z = gelu_tanh_arg(k, xc);
    Reg r = k.div(x, k.add(exp_neg(k, z.hi, &z.lo), 1.0f));
    // z < -87 (x < -9.98) or NaN: x·e^z, scaled after the product; below -12 the result is 0.
    override_where(k, k.not_pred(k.setp(Cmp::ge, z.hi, -87.0f)), r, [&] {
        Reg xt = clamp_below(k, x, -12.0f);
        DoubleFloat const zt = gelu_tanh_arg(k, xt);
        Reduced const rd = exp_reduce(k, zt.hi);
        Reg rr = k.add(rd.r, zt.lo);
        return scale_slow(k, k.mul(xt, k.add(expm1_poly(k, rr), 1.0f)), rd.t);
    });
    return r;
}

// x·Φ(x) in f32 as max(x, 0) - t·Φ(-t), t = |x|, by one final fma(F1, F2, max(x, 0)): the product
// F1·F2 ≈ -t·Φ(-t) is not rounded before the sum, so the result (a subnormal one too) rounds once.
// Φ(-t) = e^{-t²/2}·P(z)·v, v = 1/(t + c), z = (t - a)·v = 1 - 8v (a + c = 8), P a degree-10 fit
// over t in [0, 15] (relative error 2^-28.3 with its f32 coefficients) of Φ(-t)·e^{t²/2}·(t + c).
// c = 4 + 263·2^-19: a multiple of 2^-19 keeps d - c exact below, and this one makes P(0) a float
// with a 23-bit significand, so c0 - P is exact for every value P takes (0.503 to 2.0003).
// - e^{-t²/2} = 2^n·(1 + q): -t²/2 = yh + yl exactly, Cody-Waite, q = e^r - 1 of degree 6.
// - v + vl = 1/(t + c) to ~2^-46: rcp.approx (its error does not matter) refined with the exact
//   residual of d = t + c (dl); z = 1 - 8v - 8vl (1 - 8v is exact up to t ≈ 12).
// - F1 = t·2^(n+64)·(v + vl), one rounding. F2 = -2^-64·P·(1 + q), with the rounding error of
//   the last Horner step added back: F2 = P + (P·q + err·(1 + q)), err = (c0 - P) + z·p1.
// Max error 3.04 ulp over every float with |x| < 20 (2.64 for x >= 0, 1.42 where the result is
// subnormal), whether rcp.approx rounds correctly or is one ulp off; docs/backends/cuda.md,
// "Element-wise", says how that is measured.
Reg gelu_erf_value(Kernel& k, Reg x) {
    constexpr float c = 0x1.000838p+2f;
    constexpr float fit[] = {-0x1.b99438p-15f, -0x1.ef8ec2p-13f, 0x1.61915cp-13f, 0x1.b11af4p-10f,
                             -0x1.c92a14p-9f,  -0x1.f015p-8f,    0x1.ef744p-5f,   -0x1.7e57d2p-3f,
                             0x1.8caac4p-2f,   -0x1.3759ccp-1f,  0x1.82bffp-1f};  // highest degree first
    constexpr float expm1_fit[] = {0x1.6a4f88p-10f, 0x1.123988p-7f, 0x1.5558aep-5f, 0x1.555492p-3f,
                                   0x1.fffffcp-2f};  // (e^r - 1 - r)/r², |r| <= 0.3467
    // P is evaluated scaled by -2^-64 (exact), which undoes F1's 2^64 and gives the product's sign.
    constexpr float scale = -0x1p-64f;
    // max.NaN with -0 < +0: NaN stays NaN, -0 stays -0 (F1·F2 is -0 there), x < 0 gives -0.
    Reg base = max_nan(k, x, -0.0f);
    // t = 15 also serves x >= 15 (the result is x), x <= -15 (-0) and NaN (through base).
    Reg t = k.min(k.abs(x), 15.0f);
    Reg m = k.mul(t, -0.5f);
    Reg yh = k.mul(t, m);
    Reg yl = k.fma(t, m, k.neg(yh));
    // n + 191 in t1's low bits: n + 64 + 127, the biased exponent of 2^(n+64) (n in [-163, 0]).
    float const magic = round_magic + 191.0f;
    Reg t1 = k.fma(yh, log2e, magic);
    Reg n = k.sub(t1, magic);
    Reg r1 = k.fma(n, -ln2_hi, yh);  // exact
    Reg r = k.add(r1, k.fma(n, -ln2_lo, yl));
    Reg p = k.fma(r, expm1_fit[0], expm1_fit[1]);
    for (std::size_t i = 2; i < 5; ++i) p = k.fma(p, r, expm1_fit[i]);
    Reg q = k.fma(p, k.mul(r, r), r);
    Reg s = bits_float(k, k.shl(float_bits(k, t1), 23));  // 2^(n+64)
    // 1/(t + c) = v + vl: d + dl = t + c exactly (d - c is exact: c is a multiple of 2^-19).
    Reg d = k.add(t, c);
    Reg dl = k.sub(t, k.sub(d, c));
    Reg v = k.reg(Type::f32);
    k.instruction("rcp.approx.ftz.f32", {RegUse{v, Type::f32, Access::write}, RegUse{d, Type::f32}});
    Reg e = k.fma(v, k.neg(dl), k.fma(v, k.neg(d), 1.0f));
    Reg vl = k.mul(v, e);
    Reg z = k.fma(vl, -8.0f, k.fma(v, -8.0f, 1.0f));
    Reg p1 = k.fma(z, fit[0] * scale, fit[1] * scale);
    for (std::size_t i = 2; i < 10; ++i) p1 = k.fma(p1, z, fit[i] * scale);
    Reg c0 = constant(k, fit[10] * scale);
    Reg pz = k.fma(p1, z, c0);
    Reg err = k.fma(z, p1, k.sub(c0, pz));
    Reg f2 = k.add(pz, k.fma(pz, q, k.fma(err, q, err)));
    Reg ts = k.mul(t, s);
    Reg f1 = k.fma(ts, v, k.mul(ts, vl));
    return k.fma(f1, f2, base);
}

Reg require_parameter(Reg r, Op op, char const* which) {
    if (!r.valid())
        throw BuildError("ptx: emit_unary(" + std::string(to_string(op)) + ") needs parameter register '" + which +
                         "'");
    return r;
}

}  // namespace

Reg emit_unary(Kernel& k, Op op, Reg x, Reg a, Reg b) {
    static_assert(op_count(OpFamily::unary) == 14, "a case for every unary op");
    switch (op) {
        // NaN < 0 is false, so NaN passes through relu, leaky_relu and clip unchanged.
        case Op::relu: return select(k, k.setp(Cmp::lt, x, 0.0f), 0.0f, x);
        case Op::leaky_relu: return select(k, k.setp(Cmp::lt, x, 0.0f), k.mul(x, require_parameter(a, op, "a")), x);
        case Op::elu: return elu_value(k, x, require_parameter(a, op, "a"));
        case Op::sigmoid: return sigmoid_value(k, x);
        case Op::tanh: return tanh_value(k, x);
        case Op::silu: return silu_value(k, x);
        case Op::gelu_tanh: return gelu_tanh_value(k, x);
        case Op::gelu: return gelu_erf_value(k, x);
        case Op::clip: {
            Reg lo = require_parameter(a, op, "a"), hi = require_parameter(b, op, "b");
            Reg t = select(k, k.setp(Cmp::lt, x, lo), lo, x);
            return select(k, k.setp(Cmp::gt, t, hi), hi, t);
        }
        case Op::exp: return exp_value(k, x);
        case Op::log: return log_value(k, x);
        case Op::sqrt: return k.sqrt(x);
        // Sign-bit operations: exact for every input, NaN included, and no flush of subnormals.
        case Op::abs: return k.and_(x, 0x7fffffff);
        case Op::neg: return k.xor_(x, std::int64_t{0x80000000});
        default: break;
    }
    throw BuildError("ptx: emit_unary: " + std::string(to_string(op)) + " is not a unary op");
}

namespace {

struct LoopShape {
    bool vectorized;
    unsigned unroll;
    DType element;  // of every operand: f32, f16 or bf16
};

void check_shape(std::string const& name, LoopShape s, unsigned block_threads) {
    if (s.unroll != 1 && s.unroll != 2 && s.unroll != 4)
        throw BuildError("ptx kernel '" + name + "': unroll must be 1, 2 or 4, not " + std::to_string(s.unroll));
    if (block_threads == 0 || block_threads > 1024 || block_threads % 32 != 0)
        throw BuildError("ptx kernel '" + name + "': block_threads must be a multiple of 32 in [32, 1024], not " +
                         std::to_string(block_threads));
    element_detail::check_floating(name, s.element);
}

Reg element_offset(Kernel& k, Reg base, Reg index, unsigned shift) { return k.add(base, k.shl(index, shift)); }

// The element-wise loop shared by unary and binary kernels: `inputs` array parameters already
// converted to global addresses, `out`, the element count `n`, and `compute` mapping one element's
// input registers (.f32, widened from the stored type) to its result (rounded to it when stored).
void elementwise_loop(Kernel& k, LoopShape shape, Reg out, std::vector<Reg> const& inputs, Reg n,
                      std::function<Reg(std::vector<Reg> const&)> const& compute) {
    DType const type = shape.element;
    unsigned const shift = element_detail::size_shift(type);
    // Global thread index and grid size, 64-bit: element counts may pass 2^32.
    Reg tid = k.special(Special::tid_x), ntid = k.special(Special::ntid_x);
    Reg ctaid = k.special(Special::ctaid_x), nctaid = k.special(Special::nctaid_x);
    Reg i = k.add(k.mul_wide(ctaid, ntid), k.cvt(Type::u64, tid));
    Reg stride = k.mul_wide(nctaid, ntid);

    auto load_inputs = [&](Reg index) {
        std::vector<Reg> values;
        for (Reg in : inputs) values.push_back(element_detail::load(k, type, element_offset(k, in, index, shift)));
        return values;
    };
    auto store = [&](Reg index, Reg value) {
        element_detail::store(k, type, element_offset(k, out, index, shift), value);
    };
    // Grid-stride over `count` from this thread's index, `shape.unroll` at a time while in range.
    auto strided_loop = [&](Reg count, std::function<void(std::vector<Reg> const&)> const& group) {
        loop_detail::strided_loop(k, i, count, stride, shape.unroll, group);
    };

    if (!shape.vectorized) {
        strided_loop(n, [&](std::vector<Reg> const& indices) {
            std::vector<std::vector<Reg>> loaded;
            for (Reg index : indices) loaded.push_back(load_inputs(index));
            for (std::size_t g = 0; g < indices.size(); ++g) store(indices[g], compute(loaded[g]));
        });
        return;
    }

    // Head: the elements before `out` reaches a group boundary (16 bytes for f32, 8 for 16-bit
    // elements; the inputs share its alignment).
    std::int64_t const group_bytes = std::int64_t{4} << shift;
    Reg head = k.min(k.shr(k.and_(k.neg(out), group_bytes - 1), shift), n);
    k.if_then(k.setp(Cmp::lt, i, head), [&] { store(i, compute(load_inputs(i))); });
    Reg rest = k.sub(n, head);
    Reg vectors = k.shr(rest, 2);
    Reg vector_out = element_offset(k, out, head, shift);
    std::vector<Reg> vector_in;
    for (Reg in : inputs) vector_in.push_back(element_offset(k, in, head, shift));
    strided_loop(vectors, [&](std::vector<Reg> const& indices) {
        // loaded[g][input] holds 4 registers.
        std::vector<std::vector<std::vector<Reg>>> loaded;
        for (Reg index : indices) {
            std::vector<std::vector<Reg>> per_input;
            for (Reg in : vector_in)
                per_input.push_back(element_detail::load_four(k, type, element_offset(k, in, index, shift + 2)));
            loaded.push_back(std::move(per_input));
        }
        for (std::size_t g = 0; g < indices.size(); ++g) {
            std::vector<Reg> results;
            for (int lane = 0; lane < 4; ++lane) {
                std::vector<Reg> values;
                for (auto const& v : loaded[g]) values.push_back(v[static_cast<std::size_t>(lane)]);
                results.push_back(compute(values));
            }
            element_detail::store_four(k, type, element_offset(k, vector_out, indices[g], shift + 2), results);
        }
    });
    // Tail: the last (n - head) % 4 elements, one per thread.
    Reg tail = k.and_(rest, 3);
    k.if_then(k.setp(Cmp::lt, i, tail), [&] {
        Reg const index = k.add(k.add(head, k.shl(vectors, 2)), i);
        store(index, compute(load_inputs(index)));
    });
}

using element_detail::element_suffix;

std::string loop_suffix(bool vectorized, unsigned unroll) {
    return std::string(vectorized ? "_v4" : "_scalar") + "_u" + std::to_string(unroll);
}

// The binary op on two .f32 registers, one IEEE operation (div.rn).
Reg emit_binary(Kernel& k, std::string const& name, Op op, Reg x, Reg y) {
    static_assert(op_count(OpFamily::binary) == 7, "a case for every binary op");
    switch (op) {
        case Op::add: return k.add(x, y);
        case Op::sub: return k.sub(x, y);
        case Op::mul: return k.mul(x, y);
        case Op::div: return k.div(x, y);
        case Op::maximum:
        case Op::minimum: {
            // A NaN operand gives NaN; equal values give x & y (+0 over -0) or x | y (-0 under +0).
            bool const up = op == Op::maximum;
            Reg const bx = k.bitcast(Type::b32, x), by = k.bitcast(Type::b32, y);
            Reg r = k.bitcast(Type::f32, up ? k.and_(bx, by) : k.or_(bx, by));
            r = k.selp(y, r, k.setp(up ? Cmp::lt : Cmp::gt, x, y), Type::f32);
            r = k.selp(x, r, k.setp(up ? Cmp::gt : Cmp::lt, x, y), Type::f32);
            r = k.selp(y, r, k.not_pred(k.setp(Cmp::eq, y, y)), Type::f32);
            return k.selp(x, r, k.not_pred(k.setp(Cmp::eq, x, x)), Type::f32);
        }
        case Op::swiglu: return k.mul(silu_value(k, x), y);
        default: throw BuildError("ptx kernel '" + name + "': " + std::string(to_string(op)) + " is not a binary op");
    }
}

}  // namespace

Kernel unary(UnaryKernelConfig const& config) {
    std::string const name = "rayo_unary_" + std::string(to_string(config.op)) +
                             loop_suffix(config.vectorized, config.unroll) + element_suffix(config.element);
    LoopShape const shape{config.vectorized, config.unroll, config.element};
    check_shape(name, shape, config.block_threads);
    Kernel k(name);
    k.max_threads(config.block_threads);
    Reg out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg in = k.cvta_to_global(k.param(Type::u64, "in"));
    Reg n = k.param(Type::u64, "n");
    Reg a = k.param(Type::f32, "a");
    Reg b = k.param(Type::f32, "b");
    elementwise_loop(k, shape, out, {in}, n,
                     [&](std::vector<Reg> const& v) { return emit_unary(k, config.op, v[0], a, b); });
    return k;
}

Kernel binary(BinaryKernelConfig const& config) {
    std::string const name = "rayo_binary_" + std::string(to_string(config.op)) +
                             (config.scalar_operand ? "_scalar" : "") + loop_suffix(config.vectorized, config.unroll) +
                             element_suffix(config.element);
    LoopShape const shape{config.vectorized, config.unroll, config.element};
    check_shape(name, shape, config.block_threads);
    Kernel k(name);
    k.max_threads(config.block_threads);
    Reg out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg a = k.cvta_to_global(k.param(Type::u64, "a"));
    Reg b = k.param(Type::u64, "b");
    Reg n = k.param(Type::u64, "n");
    Reg s = k.param(Type::f32, "s");
    std::vector<Reg> inputs{a};
    if (!config.scalar_operand) inputs.push_back(k.cvta_to_global(b));
    elementwise_loop(k, shape, out, inputs, n, [&](std::vector<Reg> const& v) {
        return emit_binary(k, name, config.op, v[0], config.scalar_operand ? s : v[1]);
    });
    return k;
}

Kernel binary_broadcast(BinaryBroadcastKernelConfig const& config) {
    std::string const name = "rayo_binary_" + std::string(to_string(config.op)) + "_broadcast_r" +
                             std::to_string(config.rank) + (config.vectorized ? "_v4" : "") +
                             (config.a_repeats_along_rows ? "_ra" : "") + (config.b_repeats_along_rows ? "_rb" : "") +
                             element_suffix(config.element);
    check_shape(name, {config.vectorized, 1, config.element}, config.block_threads);
    if (config.rank < 1 || config.rank > max_broadcast_rank)
        throw BuildError("ptx kernel '" + name + "': rank " + std::to_string(config.rank) + " is not 1 to " +
                         std::to_string(max_broadcast_rank));
    if (!config.vectorized && (config.a_repeats_along_rows || config.b_repeats_along_rows))
        throw BuildError("ptx kernel '" + name + "': operands repeated along rows are a vectorized variant");
    Kernel k(name);
    k.max_threads(config.block_threads);
    Reg out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg a = k.cvta_to_global(k.param(Type::u64, "a"));
    Reg b = k.cvta_to_global(k.param(Type::u64, "b"));
    Reg n = k.param(Type::u32, "n");
    layout_detail::StridedParams const layout = layout_detail::strided_params(k, "a_stride", "b_stride");
    unsigned const width = config.vectorized ? 4 : 1;
    // One output element (or vec4 of a row) per thread and step of a grid-stride loop.
    layout_detail::grid_loop_u32(k, config.vectorized ? k.shr(n, 2) : n, [&](Reg q) {
        Reg const i = config.vectorized ? k.shl(q, 2) : q;
        auto const [ia, ib] = layout_detail::strided_offsets(k, layout, config.rank, i);
        auto load = [&](Reg base, Reg index, bool repeated) {
            Address const at = k.element_address(base, index, 1u << element_detail::size_shift(config.element));
            if (width == 1 || repeated) return std::vector<Reg>(width, element_detail::load(k, config.element, at));
            return element_detail::load_four(k, config.element, at);
        };
        std::vector<Reg> const x = load(a, ia, config.a_repeats_along_rows),
                               y = load(b, ib, config.b_repeats_along_rows);
        std::vector<Reg> r;
        for (unsigned e = 0; e < width; ++e) r.push_back(emit_binary(k, name, config.op, x[e], y[e]));
        Address const to = k.element_address(out, i, 1u << element_detail::size_shift(config.element));
        if (width == 1)
            element_detail::store(k, config.element, to, r[0]);
        else
            element_detail::store_four(k, config.element, to, r);
    });
    return k;
}

}  // namespace rayo::ptx::kernels
