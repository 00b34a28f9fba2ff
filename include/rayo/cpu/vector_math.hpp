// Vectorised float math over xsimd batches: exp, log, tanh, sigmoid, silu, elu, gelu_tanh, gelu_erf.
//
// This header is compiled in TUs with different ISA flags (see src/cpu/kernel_table.hpp), so every
// function is a template on the xsimd arch A and every constant is constexpr; nothing instantiates
// out-of-line standard-library code and nothing calls libm per element.
//
// Accuracy: max error against a float64 reference, in ulps of the float nearest the reference (an
// ulp is 2^-149 in the subnormal range). Each bound holds over ALL floats, subnormal results and
// the far tails included, on every instruction set (docs/backends/cpu.md says how the bounds are
// measured); each function's comment repeats its own:
//   exp 1.02, log 0.85, tanh 3.41 (3.04 with FMA), sigmoid 3.27 (3.17 with FMA), silu 2.40, elu 0.98
//   (alpha = 1; 1.94 for alpha = 1.67 or 0.1), gelu_tanh 2.33, gelu_erf 0.5002. tanh and sigmoid
//   spend more of the 4-ulp budget for speed: per thread they must at least match Eigen 3.4's tanh
//   and logistic.
// Special values: NaN -> NaN for all; exp(-inf) = 0, exp(inf) = inf; log(±0) = -inf, log(x<0) = NaN,
// log(inf) = inf; tanh(±inf) = ±1, tanh(-0) = -0; sigmoid(±inf) = 1 / 0; silu, gelu(inf) = inf,
// silu, gelu(-inf) = -0, gelu(-0) = -0, elu(±0) = ±0, elu(-inf) = -alpha.
//
// Speed: these kernels are latency-bound (long dependency chains, a limited out-of-order window),
// so most polynomials are in Estrin form (tanh and sigmoid: Horner, which runs those two faster;
// docs/backends/cpu.md) and the common case is one straight block. Lanes in a far tail (exp:
// |x| > 87; silu: x < -87; gelu_tanh: x < -9.98) or NaN send the batch through a slower path that
// scales by 2^n in two steps, so subnormal results are rounded once; every lane gets the same
// result either way (sigmoid has no such path). gelu_erf works in double. The functions are
// always_inline, but GCC may still keep a lambda wrapping one out of line: mark the calling loop
// [[gnu::flatten]].
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <xsimd/xsimd.hpp>

namespace rayo::cpu::math {
namespace detail {

template <class A>
using fbatch = xsimd::batch<float, A>;
template <class A>
using ibatch = xsimd::batch<std::int32_t, A>;
template <class A>
using dbatch = xsimd::batch<double, A>;
template <class A>
using lbatch = xsimd::batch<std::int64_t, A>;

template <class A>
inline constexpr bool is_avx512 = std::is_base_of_v<xsimd::avx512f, A>;
template <class A>
inline constexpr bool is_avx = std::is_base_of_v<xsimd::avx, A>;  // avx, avx2, fma3<avx*>
template <class A>
inline constexpr bool is_sse2 = std::is_base_of_v<xsimd::sse2, A>;
// Whether fmadd below is fused (one rounding). xsimd::fma is a*b+c, two roundings, on archs without
// a fused kernel; xsimd 8.1 has none for AVX-512, so fmadd calls the intrinsic there.
template <class A>
inline constexpr bool has_fma =
    is_avx512<A> || std::is_base_of_v<xsimd::fma3<xsimd::sse4_2>, A> || std::is_base_of_v<xsimd::fma3<xsimd::avx>, A> ||
    std::is_base_of_v<xsimd::fma3<xsimd::avx2>, A> || std::is_base_of_v<xsimd::fma4, A>;

template <class A, class T>
[[gnu::always_inline]] inline xsimd::batch<T, A> fmadd(xsimd::batch<T, A> const& a, xsimd::batch<T, A> const& b,
                                                       xsimd::batch<T, A> const& c) noexcept {
    if constexpr (is_avx512<A>) {
        if constexpr (std::is_same_v<T, float>)
            return _mm512_fmadd_ps(a, b, c);
        else
            return _mm512_fmadd_pd(a, b, c);
    } else if constexpr (has_fma<A>) {
        return xsimd::fma(a, b, c);
    } else {
        return a * b + c;
    }
}

// a*b - c; fused on the FMA archs (nothing relies on it being fused).
template <class A>
[[gnu::always_inline]] inline fbatch<A> fmsub(fbatch<A> const& a, fbatch<A> const& b, fbatch<A> const& c) noexcept {
    if constexpr (is_avx512<A>)
        return _mm512_fmsub_ps(a, b, c);
    else if constexpr (has_fma<A>)
        return xsimd::fms(a, b, c);
    else
        return a * b - c;
}

template <class A>
[[gnu::always_inline]] inline ibatch<A> as_int(fbatch<A> const& x) noexcept {
    return xsimd::bitwise_cast<ibatch<A>>(x);
}
template <class A>
[[gnu::always_inline]] inline fbatch<A> as_float(ibatch<A> const& x) noexcept {
    return xsimd::bitwise_cast<fbatch<A>>(x);
}
// Clamps that keep NaN (minps/maxps return one operand for NaN, depending on operand order).
template <class A, class T>
[[gnu::always_inline]] inline xsimd::batch<T, A> clamp_below(xsimd::batch<T, A> const& x, T lo) noexcept {
    return xsimd::select(x < xsimd::batch<T, A>(lo), xsimd::batch<T, A>(lo), x);
}
template <class A, class T>
[[gnu::always_inline]] inline xsimd::batch<T, A> clamp_above(xsimd::batch<T, A> const& x, T hi) noexcept {
    return xsimd::select(x > xsimd::batch<T, A>(hi), xsimd::batch<T, A>(hi), x);
}

// ---- double-float arithmetic (for arguments whose absolute error exp would amplify) ----

// Returns v, hidden from the optimiser. The error-free transformations below need their products
// rounded, but GCC contracts a*b + c into an FMA by default in C++ (-ffp-contract=fast, even with
// -std=c++20) when every use of a*b is an add, and code including this header need not pass
// -ffp-contract=off as the kernel TUs do; with xsimd's AVX-512 negation (0 - x) a contraction
// reaches two_sum's input and breaks gelu_tanh's argument. The empty asm costs no instruction.
template <class A>
[[gnu::always_inline]] inline fbatch<A> rounded(fbatch<A> const& v) noexcept {
    typename fbatch<A>::register_type reg = v;
    asm("" : "+v"(reg));
    return reg;
}

// Veltkamp split: a = hi + lo, each with at most 12 significant bits, so products of halves are exact.
template <class A>
[[gnu::always_inline]] inline void split(fbatch<A> const& a, fbatch<A>& hi, fbatch<A>& lo) noexcept {
    fbatch<A> const c = rounded<A>(a * fbatch<A>(4097.0f));
    hi = c - (c - a);
    lo = a - hi;
}
// p + e = a·b exactly (barring underflow): FMA residual, else Dekker's product.
template <class A>
[[gnu::always_inline]] inline void two_prod(fbatch<A> const& a, fbatch<A> const& b, fbatch<A>& p,
                                            fbatch<A>& e) noexcept {
    p = rounded<A>(a * b);
    if constexpr (has_fma<A>) {
        e = fmadd<A>(a, b, -p);
    } else {
        fbatch<A> ah, al, bh, bl;
        split<A>(a, ah, al);
        split<A>(b, bh, bl);
        e = ((rounded<A>(ah * bh) - p) + rounded<A>(ah * bl) + rounded<A>(al * bh)) + al * bl;
    }
}
// s + e = a + b exactly, any magnitudes (Knuth).
template <class A>
[[gnu::always_inline]] inline void two_sum(fbatch<A> const& a, fbatch<A> const& b, fbatch<A>& s,
                                           fbatch<A>& e) noexcept {
    s = a + b;
    fbatch<A> const bb = s - a;
    e = (a - (s - bb)) + (b - bb);
}

// ---- exp core ----

// Constant-initialised here so no TU calls numeric_limits at run time (an out-of-line copy
// compiled with higher ISA flags could be the one the linker keeps).
inline constexpr float infinity = std::numeric_limits<float>::infinity();
inline constexpr float quiet_nan = std::numeric_limits<float>::quiet_NaN();
inline constexpr float log2e = 0x1.715476p+0f;
// ln2 = ln2_hi + ln2_lo (Cody-Waite); ln2_hi has 9 significant bits, so n·ln2_hi and x - n·ln2_hi
// are exact even without FMA.
inline constexpr float ln2_hi = 0x1.63p-1f;  // 0.693359375
inline constexpr float ln2_lo = -0x1.bd0106p-13f;
// x + 1.5·2^23 rounds x (|x| < 2^22) to an integer held in the low mantissa bits.
inline constexpr float round_magic = 0x1.8p+23f;

// Returns r with x = n·ln2 + r, |r| <= ~ln2/2; t's low bits hold n (t = n + round_magic).
template <class A>
[[gnu::always_inline]] inline fbatch<A> exp_reduce(fbatch<A> const& x, fbatch<A>& t) noexcept {
    using B = fbatch<A>;
    t = fmadd<A>(x, B(log2e), B(round_magic));
    B const n = t - B(round_magic);
    B const r = fmadd<A>(n, B(-ln2_hi), x);
    return fmadd<A>(n, B(-ln2_lo), r);
}
// Same for the double-float argument x_hi + x_lo.
template <class A>
[[gnu::always_inline]] inline fbatch<A> exp_reduce(fbatch<A> const& x_hi, fbatch<A> const& x_lo,
                                                   fbatch<A>& t) noexcept {
    return exp_reduce<A>(x_hi, t) + x_lo;
}

// e^r - 1 for |r| <= ~0.35 (Cephes expf: e^r = 1 + r + r²·P(r)); accurate relative to e^r - 1 itself.
// P in Estrin form: these kernels are latency-bound (long chains, limited out-of-order window),
// and Estrin shortens the chain from 5 to 3 dependent FMAs at no extra cost (r² is needed anyway).
template <class A>
[[gnu::always_inline]] inline fbatch<A> expm1_poly(fbatch<A> const& r) noexcept {
    using B = fbatch<A>;
    B const r2 = r * r;
    B const p01 = fmadd<A>(B(1.6666665459e-1f), r, B(5.0000001201e-1f));
    B const p23 = fmadd<A>(B(8.3334519073e-3f), r, B(4.1665795894e-2f));
    B const p45 = fmadd<A>(B(1.9875691500e-4f), r, B(1.3981999507e-3f));
    B const p = fmadd<A>(fmadd<A>(p45, r2, p23), r2, p01);
    return fmadd<A>(p, r2, r);
}

// p·2^n by adding n to the exponent field; valid when the result is normal.
template <class A>
[[gnu::always_inline]] inline fbatch<A> scale_fast(fbatch<A> const& p, fbatch<A> const& t) noexcept {
    // (t's bits) << 23 leaves exactly n << 23: the magic's bits shift out.
    return as_float<A>(as_int<A>(p) + (as_int<A>(t) << 23));
}
// p·2^n as two exact power-of-two factors, so a subnormal or overflowing result is rounded once.
// n in [-252, 254] (p·2^(n/2) must stay normal).
template <class A>
[[gnu::always_inline]] inline fbatch<A> scale_slow(fbatch<A> const& p, fbatch<A> const& t) noexcept {
    using I = ibatch<A>;
    I const n = as_int<A>(t) - as_int<A>(fbatch<A>(round_magic));
    I const n1 = n >> 1;
    I const n2 = n - n1;
    fbatch<A> const s1 = as_float<A>((n1 + I(127)) << 23);
    fbatch<A> const s2 = as_float<A>((n2 + I(127)) << 23);
    return (p * s1) * s2;
}

// exp for batches with a lane outside [-87, 87] or NaN.
template <class A>
[[gnu::noinline]] fbatch<A> exp_slow(fbatch<A> x) noexcept {
    using B = fbatch<A>;
    // exp(-104) < 2^-150 rounds to 0 and exp(89) overflows; the clamps keep n in scale_slow's range.
    B const xc = clamp_above<A>(clamp_below<A>(x, -104.0f), 89.0f);
    B t;
    B const r = exp_reduce<A>(xc, t);
    return scale_slow<A>(expm1_poly<A>(r) + B(1.0f), t);
}

// e^-x for the fast paths of silu and gelu_tanh, which compute v/(1 + e^-x) for x >= -87.
// x is capped at 87: there e^-x only enters 1 + e^-x, where e^-87 is already negligible. The
// negation is folded into the reduction (r' = -r = x + n·ln2) and into the odd coefficients, which
// saves an instruction on these latency-bound paths. x_lo: low part of a double-float x.
template <class A>
[[gnu::always_inline]] inline fbatch<A> exp_neg(fbatch<A> const& x, fbatch<A> const* x_lo = nullptr) noexcept {
    using B = fbatch<A>;
    B const xc = xsimd::min(B(87.0f), x);
    B const t = fmadd<A>(xc, B(-log2e), B(round_magic));
    B const n = t - B(round_magic);
    B rn = fmadd<A>(n, B(ln2_lo), fmadd<A>(n, B(ln2_hi), xc));  // -r
    if (x_lo) rn = rn + *x_lo;
    // e^r - 1 = r + r²·P(r) at r = -rn (expm1_poly with the odd terms negated).
    B const r2 = rn * rn;
    B const p01 = fmadd<A>(B(-1.6666665459e-1f), rn, B(5.0000001201e-1f));
    B const p23 = fmadd<A>(B(-8.3334519073e-3f), rn, B(4.1665795894e-2f));
    B const p45 = fmadd<A>(B(-1.9875691500e-4f), rn, B(1.3981999507e-3f));
    B const p = fmadd<A>(fmadd<A>(p45, r2, p23), r2, p01);
    return scale_fast<A>(fmsub<A>(p, r2, rn) + B(1.0f), t);
}

// ---- float <-> double halves (gelu_erf) ----

template <class A>
[[gnu::always_inline]] inline void widen(fbatch<A> const& x, dbatch<A>& lo, dbatch<A>& hi) noexcept {
    if constexpr (is_avx512<A>) {
        __m512 const v = x;
        lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
        hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    } else if constexpr (is_avx<A>) {
        __m256 const v = x;
        lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
        hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    } else if constexpr (is_sse2<A>) {
        __m128 const v = x;
        lo = _mm_cvtps_pd(v);
        hi = _mm_cvtps_pd(_mm_movehl_ps(v, v));
    } else {
        constexpr std::size_t n = fbatch<A>::size;
        alignas(A::alignment()) float f[n];
        alignas(A::alignment()) double d[n];
        x.store_aligned(f);
        for (std::size_t i = 0; i < n; ++i) d[i] = f[i];
        lo = dbatch<A>::load_aligned(d);
        hi = dbatch<A>::load_aligned(d + n / 2);
    }
}
// Rounds each double to float (once, subnormals included).
template <class A>
[[gnu::always_inline]] inline fbatch<A> narrow(dbatch<A> const& lo, dbatch<A> const& hi) noexcept {
    if constexpr (is_avx512<A>) {
        __m256 const l = _mm512_cvtpd_ps(lo), h = _mm512_cvtpd_ps(hi);
        return _mm512_castpd_ps(
            _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(l)), _mm256_castps_pd(h), 1));
    } else if constexpr (is_avx<A>) {
        return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), _mm256_cvtpd_ps(hi), 1);
    } else if constexpr (is_sse2<A>) {
        return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi));
    } else {
        constexpr std::size_t n = fbatch<A>::size;
        alignas(A::alignment()) float f[n];
        alignas(A::alignment()) double d[n];
        lo.store_aligned(d);
        hi.store_aligned(d + n / 2);
        for (std::size_t i = 0; i < n; ++i) f[i] = static_cast<float>(d[i]);
        return fbatch<A>::load_aligned(f);
    }
}

// e^y for y in [-708, 0] in double, relative error ~1e-13 (far below a float ulp).
template <class A>
[[gnu::always_inline]] inline dbatch<A> exp_d(dbatch<A> const& y) noexcept {
    using D = dbatch<A>;
    using L = lbatch<A>;
    D const t = fmadd<A>(y, D(0x1.71547652b82fep+0), D(0x1.8p+52));
    D const n = t - D(0x1.8p+52);
    // fdlibm's split of ln2: ln2_hi has 32 significant bits, so n·ln2_hi is exact.
    D r = fmadd<A>(n, D(-0x1.62e42feep-1), y);
    r = fmadd<A>(n, D(-0x1.a39ef35793c76p-33), r);
    // Taylor to degree 10: truncation < 3e-13 on |r| <= ln2/2.
    D p = fmadd<A>(D(0x1.27e4fb7789f5cp-22), r, D(0x1.71de3a556c734p-19));
    p = fmadd<A>(p, r, D(0x1.a01a01a01a01ap-16));
    p = fmadd<A>(p, r, D(0x1.a01a01a01a01ap-13));
    p = fmadd<A>(p, r, D(0x1.6c16c16c16c17p-10));
    p = fmadd<A>(p, r, D(0x1.1111111111111p-7));
    p = fmadd<A>(p, r, D(0x1.5555555555555p-5));
    p = fmadd<A>(p, r, D(0x1.5555555555555p-3));
    p = fmadd<A>(p, r, D(0.5));
    p = fmadd<A>(p, r, D(1.0));
    p = fmadd<A>(p, r, D(1.0));
    // n >= -1022: the result is a normal double.
    return xsimd::bitwise_cast<D>(xsimd::bitwise_cast<L>(p) + (xsimd::bitwise_cast<L>(t) << 52));
}

// x·Φ(x) in double. Φ(-t) = e^{-t²/2}·h(t), h smooth: h(t)·(t+4) is a degree-13 polynomial in
// z = (t-4)/(t+4) on t in [0, 15] (Chebyshev fit, relative error 1.2e-11).
template <class A>
[[gnu::always_inline]] inline dbatch<A> gelu_erf_d(dbatch<A> const& x) noexcept {
    using D = dbatch<A>;
    // Below -15, x·Φ(x) < 2^-150 (rounds to 0); above 15, Φ = 1 in double. NaN stays NaN.
    D const xm = clamp_below<A>(x, -15.0);
    D const t = clamp_above<A>(xsimd::abs(xm), 15.0);
    D const e = exp_d<A>(D(-0.5) * (t * t));  // t² is exact: 24-bit t
    D const inv = D(1.0) / (t + D(4.0));
    D const z = (t - D(4.0)) * inv;
    D p = fmadd<A>(D(-0x1.634df1d7d0514p-20), z, D(0x1.16a19adf36e20p-18));
    p = fmadd<A>(p, z, D(0x1.0ef35c430b47dp-15));
    p = fmadd<A>(p, z, D(-0x1.8279db34288b8p-18));
    p = fmadd<A>(p, z, D(-0x1.e4076893c2af7p-13));
    p = fmadd<A>(p, z, D(0x1.1adfe9266ea00p-13));
    p = fmadd<A>(p, z, D(0x1.ab8da1935c3b4p-10));
    p = fmadd<A>(p, z, D(-0x1.c820c2c9fb196p-9));
    p = fmadd<A>(p, z, D(-0x1.ee28257ab1091p-8));
    p = fmadd<A>(p, z, D(0x1.eec4d9c862edcp-5));
    p = fmadd<A>(p, z, D(-0x1.7dff2b850162fp-3));
    p = fmadd<A>(p, z, D(0x1.8c6dbf1e53114p-2));
    p = fmadd<A>(p, z, D(-0x1.373e3a89d2288p-1));
    p = fmadd<A>(p, z, D(0x1.82b4bb8c9fd35p-1));
    D const q = e * (p * inv);  // Φ(-t)
    // Φ(x) = q for x < 0, else 1 - q (q <= 1/2: no cancellation).
    return xm * xsimd::select(xm < D(0.0), q, D(1.0) - q);
}

// ---- gelu_tanh argument ----

// z = 2·sqrt(2/π)·(x + 0.044715·x³) = x·(c1 + c3·x²) as zh + zl, relative error ~2^-44.
inline constexpr float gelu_c1_hi = 0x1.988454p+0f, gelu_c1_lo = -0x1.857936p-25f;  // 2·sqrt(2/π)
inline constexpr float gelu_c3_hi = 0x1.2444f2p-4f, gelu_c3_lo = 0x1.49b16ap-29f;   // c1·0.044715
template <class A>
[[gnu::always_inline]] inline void gelu_tanh_arg(fbatch<A> const& x, fbatch<A>& zh, fbatch<A>& zl) noexcept {
    using B = fbatch<A>;
    B sh, sl, ph, pl, wh, wl;
    two_prod<A>(x, x, sh, sl);
    two_prod<A>(B(gelu_c3_hi), sh, ph, pl);
    pl = fmadd<A>(B(gelu_c3_hi), sl, pl);
    pl = fmadd<A>(B(gelu_c3_lo), sh, pl);
    two_sum<A>(B(gelu_c1_hi), ph, wh, wl);
    wl = wl + (pl + B(gelu_c1_lo));
    two_prod<A>(x, wh, zh, zl);
    zl = fmadd<A>(x, wl, zl);
}

// The far negative tails: there e^z < e^-87 ~ 1.6e-38, so 1 + e^z = 1 in float and gelu, silu
// = x·e^z. x·p is formed before the 2^n scaling so a subnormal result is rounded
// once. The callers take these only for the tail lanes (and NaN), so a lane's result does not
// depend on its neighbours.

// silu for x < -87 (or NaN). Below -115, x·e^x < 2^-150; the clamp keeps n >= -166, which
// scale_slow needs, and sends -inf to -0.
template <class A>
[[gnu::noinline]] fbatch<A> silu_tail(fbatch<A> x) noexcept {
    using B = fbatch<A>;
    B const xc = clamp_below<A>(x, -115.0f);
    B t;
    B const r = exp_reduce<A>(xc, t);
    return scale_slow<A>(xc * (expm1_poly<A>(r) + B(1.0f)), t);
}

// gelu_tanh for z < -87, i.e. x < -9.98 (or NaN). Below -12 the result is 0 in float; the clamp
// keeps z >= -142.4 (n >= -206) and sends -inf to -0.
template <class A>
[[gnu::noinline]] fbatch<A> gelu_tanh_tail(fbatch<A> x) noexcept {
    using B = fbatch<A>;
    B const xc = clamp_below<A>(x, -12.0f);
    B zh, zl;
    gelu_tanh_arg<A>(xc, zh, zl);
    B t;
    B const r = exp_reduce<A>(zh, zl, t);
    return scale_slow<A>(xc * (expm1_poly<A>(r) + B(1.0f)), t);
}

}  // namespace detail

// e^x. Max error 1.02 ulp over all floats (subnormal results included).
template <class A>
[[gnu::always_inline]] inline xsimd::batch<float, A> exp(xsimd::batch<float, A> x) noexcept {
    using B = xsimd::batch<float, A>;
    B t;
    B const r = detail::exp_reduce<A>(x, t);
    B const e = detail::scale_fast<A>(detail::expm1_poly<A>(r) + B(1.0f), t);
    // The check comes after the math so the common case is one straight block (no call clobbering
    // the constants' registers); the branch is off the dependency chain.
    if (xsimd::all(xsimd::abs(x) <= B(87.0f))) [[likely]]
        return e;
    return detail::exp_slow<A>(x);  // same result on the lanes within range
}

// Natural log. Max error 0.85 ulp over all positive floats (subnormals included).
template <class A>
[[gnu::always_inline]] inline xsimd::batch<float, A> log(xsimd::batch<float, A> x) noexcept {
    using B = xsimd::batch<float, A>;
    using I = xsimd::batch<std::int32_t, A>;
    // Subnormals: scale into the normal range so the exponent field means something.
    auto const sub = x < B(0x1p-126f);
    B const xs = xsimd::select(sub, x * B(0x1p+23f), x);
    B const kbias = xsimd::select(sub, B(-23.0f), B(0.0f));
    // x = 2^k·m with m in [sqrt(1/2), sqrt(2)): offset the bits so the exponent carries at sqrt(2).
    I const ix = detail::as_int<A>(xs) + I(0x3f800000 - 0x3f3504f3);
    I const k = (ix >> 23) - I(127);
    B const f = detail::as_float<A>((ix & I(0x007fffff)) + I(0x3f3504f3)) - B(1.0f);  // exact
    B const kf = xsimd::to_float(k) + kbias;
    // log(1+f) = f - f²/2 + f³·P(f) (Cephes logf), then + k·ln2 in two parts.
    B const z = f * f;
    // P in Estrin form (shorter dependency chain than Horner; these kernels are latency-bound).
    B const z2 = z * z;
    B const p01 = detail::fmadd<A>(B(-2.4999993993e-1f), f, B(3.3333331174e-1f));
    B const p23 = detail::fmadd<A>(B(-1.6668057665e-1f), f, B(2.0000714765e-1f));
    B const p45 = detail::fmadd<A>(B(-1.2420140846e-1f), f, B(1.4249322787e-1f));
    B const p67 = detail::fmadd<A>(B(-1.1514610310e-1f), f, B(1.1676998740e-1f));
    B const p48 = detail::fmadd<A>(detail::fmadd<A>(B(7.0376836292e-2f), z, p67), z, p45);
    B const p = detail::fmadd<A>(p48, z2, detail::fmadd<A>(p23, z, p01));
    B y = (p * f) * z;
    y = detail::fmadd<A>(kf, B(detail::ln2_lo), y);
    y = detail::fmadd<A>(B(-0.5f), z, y);
    B r = detail::fmadd<A>(kf, B(detail::ln2_hi), f + y);
    B const inf(detail::infinity);
    r = xsimd::select(x == inf, inf, r);
    r = xsimd::select(x == B(0.0f), -inf, r);
    return xsimd::select(x >= B(0.0f), r, B(detail::quiet_nan));  // x < 0 or NaN
}

// tanh. Max error 3.41 ulp over all floats (3.04 with FMA); ±1 from |x| = 9.125 on, tanh(-0) = -0.
// Tiny x gives x within 1.33 ulp, not always exactly (P(0) is not a power of two, see below).
// avx512bw gives the same bits as fma3<avx2> for every float.
template <class A>
[[gnu::always_inline]] inline xsimd::batch<float, A> tanh(xsimd::batch<float, A> x) noexcept {
    using B = xsimd::batch<float, A>;
    // tanh x = 2u/(1 + u²) with u = tanh(x/2) ≈ x·P(x²)/Q(x²), a rational minimax fit on [0, 9.6];
    // with n = x·P: tanh x = 2nQ/(n² + Q²), one division. The doubling makes the result stationary
    // where it nears 1: the errors of n and Q are damped by sech x, so only the last few roundings
    // count there (a plain rational x·P/Q for tanh itself carries ~5 ulp of rounding error near 1).
    // The fit weights u's relative error by sech x, the factor that reaches tanh x, so the rational
    // is only (2,3) (error 0.15 ulp). P(0) = 0x1.dd70a4p-1 ~ 0.93 and Q(0) = 2·P(0) rather than 1
    // and 2: for small x that puts the mantissas of P, Q and Q² at 1.87, 1.87 and 1.74 instead of
    // 1.0, and a rounding there then costs about half as much relative to the result's ulp, which
    // keeps the bound under 4 ulp (docs/backends/cpu.md).
    // The clamp keeps NaN (minps/maxps return the second operand when one is NaN) and keeps -0;
    // at x = ±9.125 the evaluation gives exactly ±1 on FMA and non-FMA archs alike (checked).
    B const a = xsimd::max(B(-0x1.24p+3f), xsimd::min(B(0x1.24p+3f), x));
    B const z = a * a;
    B p = detail::fmadd<A>(B(0x1.bd30a2p-14f), z, B(0x1.c69614p-6f));
    p = detail::fmadd<A>(p, z, B(0x1.dd70a4p-1f));
    B q = detail::fmadd<A>(B(0x1.315924p-19f), z, B(0x1.266f8p-9f));
    q = detail::fmadd<A>(q, z, B(0x1.aff094p-3f));
    q = detail::fmadd<A>(q, z, B(0x1.dd70a4p+0f));
    B const n = a * p;
    // n² enters only with weight u²/(1 + u²): rounded apart, it costs little; Q² is fused.
    return (n * (q + q)) / detail::fmadd<A>(q, q, n * n);
}

// 1/(1+e^-x). Max error 3.27 ulp over all floats (3.17 with FMA), subnormal results (x < -87.3)
// included, with no slow path. avx512bw gives the same bits as fma3<avx2> for every float.
template <class A>
[[gnu::always_inline]] inline xsimd::batch<float, A> sigmoid(xsimd::batch<float, A> x) noexcept {
    using B = xsimd::batch<float, A>;
    // x = m·ln2 + r, |r| <= ln2/2: sigmoid x = 2^m/(2^m + e^-r) = v/(v + 2^64·e^-r), v = 2^(64+m).
    // v is normal for every m in [-173, 58] (the clamp's range), and the one division rounds a
    // subnormal result once, so the far tail needs no second path: below -120 the result is 0 in
    // float, above 40 it is 1. The clamp keeps NaN (minps/maxps return the second operand).
    B const xc = xsimd::max(B(-120.0f), xsimd::min(B(40.0f), x));
    // t's low bits hold m + 191, so t << 23 is v's bit pattern (the magic's bits shift out).
    // magic is hidden from the optimiser, so t - magic reuses its register: GCC would otherwise
    // keep -magic as one more live constant, and under the 4x unrolled loop that costs spills.
    B const magic = detail::rounded<A>(B(detail::round_magic + 191.0f));
    B const t = detail::fmadd<A>(xc, B(detail::log2e), magic);
    B const v = detail::as_float<A>(detail::as_int<A>(t) << 23);
    B const m = t - magic;
    B const r = detail::fmadd<A>(m, B(-detail::ln2_lo), detail::fmadd<A>(m, B(-detail::ln2_hi), xc));
    // 2^64·(e^-r - 1) = r·p(r), p of degree 4: a minimax fit of e^-r weighted by the mantissa of
    // the result (relative error 1.14e-7; where x << 0 the result carries it whole, elsewhere it is
    // damped by e/(1 + e)). The last step adds v + 2^64 (exact for |m| <= 23, and where it rounds
    // one term is negligible), so with FMA the denominator is rounded once.
    B p = detail::fmadd<A>(B(-0x1.10890ep+57f), r, B(0x1.573b18p+59f));
    p = detail::fmadd<A>(p, r, B(-0x1.5557b6p+61f));
    p = detail::fmadd<A>(p, r, B(0x1.fffdc4p+62f));
    p = detail::fmadd<A>(p, r, B(-0x1.fffffep+63f));
    return v / detail::fmadd<A>(p, r, v + B(0x1p+64f));
}

// x·sigmoid(x). Max error 2.40 ulp over all floats (subnormal results for x < -87 included).
template <class A>
[[gnu::always_inline]] inline xsimd::batch<float, A> silu(xsimd::batch<float, A> x) noexcept {
    using B = xsimd::batch<float, A>;
    B const r = x / (B(1.0f) + detail::exp_neg<A>(x));
    auto const body = x >= B(-87.0f);
    if (xsimd::all(body)) [[likely]]
        return r;
    return xsimd::select(body, r, detail::silu_tail<A>(x));
}

// x > 0 ? x : alpha·(e^x - 1). Max error 0.98 ulp over all floats for alpha = 1, 1.94 for alpha =
// 1.67 or 0.1 (the product's rounding).
template <class A>
[[gnu::always_inline]] inline xsimd::batch<float, A> elu(xsimd::batch<float, A> x, float alpha) noexcept {
    using B = xsimd::batch<float, A>;
    // expm1 on [-30, 0] (below -30, e^x - 1 = -1 in float): x = n·ln2 + r,
    // e^x - 1 = 2^n·(e^r - 1) + (2^n - 1); both terms exact for n = 0, so tiny x gives x.
    // max(c, min(c', x)) keeps NaN: minps/maxps return the second operand when one is NaN.
    B const xc = xsimd::max(B(-30.0f), xsimd::min(B(0.0f), x));
    B t;
    B const r = detail::exp_reduce<A>(xc, t);
    B const q = detail::expm1_poly<A>(r);
    B const s = detail::as_float<A>((detail::as_int<A>(t) << 23) + detail::as_int<A>(B(1.0f)));  // 2^n
    B const em1 = detail::fmadd<A>(s, q, s - B(1.0f));
    return xsimd::select(x >= B(0.0f), x, B(alpha) * em1);  // x = ±0 returns x itself
}

// 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))) = x·sigmoid(z), z = 2·sqrt(2/π)·(x + 0.044715·x³).
// The sigmoid form has no cancellation for x < 0; z is carried as a double-float because
// e^z turns its absolute error into a relative one and |z| reaches ~140.
// Max error 2.33 ulp over all floats (subnormal results for x < -9.9 included).
template <class A>
[[gnu::always_inline]] inline xsimd::batch<float, A> gelu_tanh(xsimd::batch<float, A> x) noexcept {
    using B = xsimd::batch<float, A>;
    // Above 12, gelu = x in float. A NaN lane gives a finite z here but reaches the result through x.
    B const xc = xsimd::min(x, B(12.0f));
    B zh, zl;
    detail::gelu_tanh_arg<A>(xc, zh, zl);
    // z >= -87: gelu = x/(1 + e^-z) with e^-z finite.
    B const r = x / (B(1.0f) + detail::exp_neg<A>(zh, &zl));
    auto const body = zh >= B(-87.0f);
    if (xsimd::all(body)) [[likely]]
        return r;
    return xsimd::select(body, r, detail::gelu_tanh_tail<A>(x));
}

// 0.5·x·(1 + erf(x/sqrt(2))) = x·Φ(x), computed in double and rounded once.
// Max error 0.5002 ulp over all floats, subnormal results included.
template <class A>
[[gnu::always_inline]] inline xsimd::batch<float, A> gelu_erf(xsimd::batch<float, A> x) noexcept {
    detail::dbatch<A> lo, hi;
    detail::widen<A>(x, lo, hi);
    return detail::narrow<A>(detail::gelu_erf_d<A>(lo), detail::gelu_erf_d<A>(hi));
}

}  // namespace rayo::cpu::math
