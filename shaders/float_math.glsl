// Float math for the element-wise shaders: ports of the CPU kernels in include/rayo/cpu/vector_math.hpp
// (same range reductions, polynomials and constants), so both backends agree to a few ulps.
// GLSL's fma() need not be fused (lavapipe splits it), so nothing relies on its single rounding,
// except rayo_two_prod on devices where the backend states that it is (RAYO_FUSED_FMA).
// Every local is `precise`: the double-float steps (two_prod, two_sum) and the Cody-Waite
// reduction rely on each operation being rounded as written, which shader compilers may
// otherwise contract or reassociate. Constants are the CPU's hex floats written in decimal with
// 9 significant digits (which round to the same float).
//
// Differences from the CPU: every exp result goes through the two-step 2^n scaling (the CPU's
// slow path), which gives the same value. Subnormal inputs and results are kept as on the CPU by
// the DenormPreserve builds (float_controls.glsl), which the backend runs wherever the device has
// shaderDenormPreserveFloat32; elsewhere a device may flush them to zero (rayo logs that once).

#define RAYO_INF uintBitsToFloat(0x7f800000u)
#define RAYO_NAN uintBitsToFloat(0x7fc00000u)
const float RAYO_LOG2E = 1.442695022e+00;
const float RAYO_LN2_HI = 6.933593750e-01;
const float RAYO_LN2_LO = -2.121944417e-04;
const float RAYO_ROUND_MAGIC = 12582912.0;  // 1.5 * 2^23: x + magic rounds x to an integer in the low bits

// Veltkamp split: a = hi + lo, each with at most 12 significant bits.
void rayo_split(float a, out float hi, out float lo) {
    precise float c = a * 4097.0;
    precise float h = c - (c - a);
    precise float l = a - h;
    hi = h;
    lo = l;
}

// Specialization constant 31, set by the backend for every pipeline (PipelineCache): fma() is one
// fused operation on this device (PhysicalDevice::fused_fma).
layout(constant_id = 31) const bool RAYO_FUSED_FMA = false;

// p + e = a·b exactly (barring underflow). The fma residual where fma is fused, else Dekker's
// product: GLSL's fma need not be fused (lavapipe splits it into a multiply and an add), and then
// the residual would be 0.
void rayo_two_prod(float a, float b, out float p, out float e) {
    if (RAYO_FUSED_FMA) {
        precise float pp = a * b;
        precise float ee = fma(a, b, -pp);
        p = pp;
        e = ee;
        return;
    }
    float ah, al, bh, bl;
    rayo_split(a, ah, al);
    rayo_split(b, bh, bl);
    precise float pp = a * b;
    precise float ee = ((ah * bh - pp) + ah * bl + al * bh) + al * bl;
    p = pp;
    e = ee;
}

// s + e = a + b exactly (Knuth).
void rayo_two_sum(float a, float b, out float s, out float e) {
    precise float ss = a + b;
    precise float bb = ss - a;
    precise float ee = (a - (ss - bb)) + (b - bb);
    s = ss;
    e = ee;
}

// r with x = n·ln2 + r; t's low mantissa bits hold n (t = n + magic).
float rayo_exp_reduce(float x, out float t) {
    precise float tt = fma(x, RAYO_LOG2E, RAYO_ROUND_MAGIC);
    precise float n = tt - RAYO_ROUND_MAGIC;
    // Separate products and differences, not fma: n·ln2_hi is exact anyway, and some compilers
    // (lavapipe's) lower the fma pair here to something that loses the low part of ln2.
    precise float p_hi = n * RAYO_LN2_HI;
    precise float r = x - p_hi;
    precise float p_lo = n * RAYO_LN2_LO;
    precise float r2 = r - p_lo;
    t = tt;
    return r2;
}

// e^r - 1 for |r| <= ~0.35 (Cephes expf), Estrin form as on the CPU.
float rayo_expm1_poly(float r) {
    precise float r2 = r * r;
    precise float p01 = fma(1.6666665459e-1, r, 5.0000001201e-1);
    precise float p23 = fma(8.3334519073e-3, r, 4.1665795894e-2);
    precise float p45 = fma(1.9875691500e-4, r, 1.3981999507e-3);
    precise float p = fma(fma(p45, r2, p23), r2, p01);
    precise float result = fma(p, r2, r);
    return result;
}

// p·2^n as two exact power-of-two factors, so a subnormal or overflowing result is rounded once.
float rayo_scale(float p, float t) {
    int n = floatBitsToInt(t) - floatBitsToInt(RAYO_ROUND_MAGIC);
    int n1 = n >> 1;
    int n2 = n - n1;
    precise float s1 = intBitsToFloat((n1 + 127) << 23);
    precise float s2 = intBitsToFloat((n2 + 127) << 23);
    precise float result = (p * s1) * s2;
    return result;
}

// e^(x_hi + x_lo) for a double-float argument (x_lo = 0 for a plain float); NaN is the caller's.
float rayo_exp2f(float x_hi, float x_lo) {
    // e^-104 < 2^-150 rounds to 0 and e^89 overflows; the clamp keeps n in rayo_scale's range.
    precise float xc = clamp(x_hi, -104.0, 89.0);
    float t;
    precise float r = rayo_exp_reduce(xc, t) + x_lo;
    precise float result = rayo_scale(rayo_expm1_poly(r) + 1.0, t);
    return result;
}

float rayo_exp(float x) {
    if (isnan(x)) return x;
    return rayo_exp2f(x, 0.0);
}

// rayo_exp for x <= 0 or -inf (not NaN): the same value without the NaN test and the upper clamp
// (softmax's x - max, where the max is finite).
float rayo_exp_nonpositive(float x) {
    precise float xc = max(x, -104.0);
    float t;
    precise float r = rayo_exp_reduce(xc, t);
    precise float result = rayo_scale(rayo_expm1_poly(r) + 1.0, t);
    return result;
}

// Natural log (Cephes logf reduction with the exponent carried at sqrt(2)).
float rayo_log(float x) {
    if (isnan(x) || x < 0.0) return RAYO_NAN;
    if (x == 0.0) return -RAYO_INF;
    if (isinf(x)) return RAYO_INF;
    bool sub = x < 1.17549435e-38;
    precise float xs = sub ? x * 8388608.0 : x;
    float kbias = sub ? -23.0 : 0.0;
    int ix = floatBitsToInt(xs) + (0x3f800000 - 0x3f3504f3);
    int k = (ix >> 23) - 127;
    precise float f = intBitsToFloat((ix & 0x007fffff) + 0x3f3504f3) - 1.0;
    precise float kf = float(k) + kbias;
    precise float z = f * f;
    precise float z2 = z * z;
    precise float p01 = fma(-2.4999993993e-1, f, 3.3333331174e-1);
    precise float p23 = fma(-1.6668057665e-1, f, 2.0000714765e-1);
    precise float p45 = fma(-1.2420140846e-1, f, 1.4249322787e-1);
    precise float p67 = fma(-1.1514610310e-1, f, 1.1676998740e-1);
    precise float p48 = fma(fma(7.0376836292e-2, z, p67), z, p45);
    precise float p = fma(p48, z2, fma(p23, z, p01));
    precise float y = (p * f) * z;
    y = fma(kf, RAYO_LN2_LO, y);
    y = fma(-0.5, z, y);
    precise float result = fma(kf, RAYO_LN2_HI, f + y);
    return result;
}

// tanh x = 2u/(1 + u²), u = tanh(x/2) as a rational; see the CPU kernel for the derivation.
float rayo_tanh(float x) {
    if (isnan(x)) return x;
    // Below 2^-12, x itself is tanh(x) rounded (x³/3 is under half an ulp of x); the rational's
    // intermediates would be subnormal near FLT_MIN, where a device may flush them.
    if (abs(x) < 2.44140625e-4) return x;
    precise float a = clamp(x, -9.125, 9.125);
    precise float z = a * a;
    precise float p = fma(1.061415605e-04, z, 2.774574235e-02);
    p = fma(p, z, 9.325000048e-01);
    precise float q = fma(2.275021416e-06, z, 2.246364951e-03);
    q = fma(q, z, 2.109080851e-01);
    q = fma(q, z, 1.865000010e+00);
    precise float n = a * p;
    precise float result = (n * (q + q)) / fma(q, q, n * n);
    return result;
}

// 1/(1 + e^-x) = v/(v + 2^64·e^-r) with x = m·ln2 + r, v = 2^(64+m): one division, no tail path.
float rayo_sigmoid(float x) {
    if (isnan(x)) return x;
    precise float xc = clamp(x, -120.0, 40.0);
    const float magic = RAYO_ROUND_MAGIC + 191.0;
    precise float t = fma(xc, RAYO_LOG2E, magic);
    float v = uintBitsToFloat(floatBitsToUint(t) << 23u);  // t's low bits hold m + 191
    precise float m = t - magic;
    precise float p_hi = m * RAYO_LN2_HI;
    precise float r_hi = xc - p_hi;
    precise float p_lo = m * RAYO_LN2_LO;
    precise float r = r_hi - p_lo;  // as in rayo_exp_reduce: no fma pair
    precise float p = fma(-1.534237738e+17, r, 7.728871302e+17);
    p = fma(p, r, -3.074541000e+18);
    p = fma(p, r, 9.223214807e+18);
    p = fma(p, r, -1.844674297e+19);
    precise float result = v / fma(p, r, v + 1.844674407e+19);
    return result;
}

// x·sigmoid(x) as x/(1 + e^-x); below -87 as x·e^x with the 2^n scaling applied last.
float rayo_silu(float x) {
    if (isnan(x)) return x;
    if (x >= -87.0) {
        precise float result = x / (1.0 + rayo_exp2f(-x, 0.0));
        return result;
    }
    precise float xc = max(x, -115.0);
    float t;
    precise float r = rayo_exp_reduce(xc, t);
    precise float result = rayo_scale(xc * (rayo_expm1_poly(r) + 1.0), t);
    return result;
}

// x > 0 ? x : alpha·(e^x - 1), with e^x - 1 = 2^n·(e^r - 1) + (2^n - 1).
float rayo_elu(float x, float alpha) {
    if (isnan(x)) return x;
    if (x >= 0.0) return x;  // ±0 returns x itself
    precise float xc = max(x, -30.0);
    float t;
    precise float r = rayo_exp_reduce(xc, t);
    precise float q = rayo_expm1_poly(r);
    float s = uintBitsToFloat((floatBitsToUint(t) << 23u) + floatBitsToUint(1.0));  // 2^n
    precise float em1 = fma(s, q, s - 1.0);
    precise float result = alpha * em1;
    return result;
}

// 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))) = x·sigmoid(z), z = x·(c1 + c3·x²) carried as a
// double-float, because e^z turns z's absolute error into a relative one and |z| reaches ~140.
float rayo_gelu_tanh(float x) {
    if (isnan(x)) return x;
    precise float xc = clamp(x, -12.0, 12.0);  // above 12 gelu = x; below -12 it is 0 in float
    float sh, sl, ph, pl, wh, wl, zh, zl;
    rayo_two_prod(xc, xc, sh, sl);
    rayo_two_prod(7.135481387e-02, sh, ph, pl);
    precise float pl2 = fma(7.135481387e-02, sl, pl);
    pl2 = fma(2.398832466e-09, sh, pl2);
    rayo_two_sum(1.595769167e+00, ph, wh, wl);
    precise float wl2 = wl + (pl2 + -4.534068054e-08);
    rayo_two_prod(xc, wh, zh, zl);
    precise float zl2 = fma(xc, wl2, zl);
    if (zh >= -87.0) {
        precise float result = x / (1.0 + rayo_exp2f(-zh, -zl2));
        return result;
    }
    // Far negative tail: 1 + e^z = 1 in float, so gelu = x·e^z, scaled by 2^n last.
    float t;
    precise float r = rayo_exp_reduce(zh, t) + zl2;
    precise float result = rayo_scale(xc * (rayo_expm1_poly(r) + 1.0), t);
    return result;
}

// sqrt and division: Vulkan allows a few ulps for both; one Newton step on the residual (exact
// with fma) brings them to within an ulp, correctly rounded in practice.
float rayo_sqrt(float x) {
    precise float y = sqrt(x);
    if (!(y > 0.0) || isinf(y)) return y;
    precise float e = fma(-y, y, x);
    precise float result = fma(e, 0.5 / y, y);
    return result;
}

// a / b refined by one Newton step. An operand past 2^125 is scaled by 1/4 (exactly) first: a
// numerator's residual a − q·b would overflow, and a device that divides as a·(1/b) would get a
// subnormal 1/b, which it may flush. A device that flushes subnormals divides by one as by zero,
// with IEEE's signs (a·(1/b) gives NaN there).
float rayo_div(float a, float b) {
#ifndef RAYO_DENORM_PRESERVE
    uint bb = floatBitsToUint(b);
    if ((bb & 0x7fffffffu) < 0x00800000u) {
        uint aa = floatBitsToUint(a);
        bool undefined = (aa & 0x7fffffffu) < 0x00800000u || (aa & 0x7fffffffu) > 0x7f800000u;  // 0/0, NaN/0
        return undefined ? RAYO_NAN : uintBitsToFloat(((aa ^ bb) & 0x80000000u) | 0x7f800000u);
    }
#endif
    precise float sa = abs(a) > 4.2535296e37 ? 0.25 : 1.0;  // 2^125
    precise float sb = abs(b) > 4.2535296e37 ? 0.25 : 1.0;
    precise float as = a * sa;
    precise float bs = b * sb;
    precise float scale = sb / sa;  // a / b = (as / bs) · scale
    precise float q = as / bs;
    if (isinf(q) || isnan(q) || q == 0.0 || isinf(b)) return q * scale;
    precise float r = fma(-q, bs, as);
    precise float result = fma(r, 1.0 / bs, q) * scale;
    return result;
}

// rayo_gelu_erf where fma() is one fused operation (RAYO_FUSED_FMA): the PTX kernel's steps as
// they are, each exact residual one fma instead of a Dekker product or a two-sum, and the result
// F1·F2 + base rounded once by the last fma (its sign then is base's where it rounds to zero).
// gelu is bound by its arithmetic on such devices, so the ~15 operations saved are its speed.
float rayo_gelu_erf_fused(float t, float base) {
    const float c = 4.0005016e+00;
    const float magic = 12583103.0;
    precise float m = t * -0.5;
    precise float yh = t * m;
    precise float yl = fma(t, m, -yh);
    precise float t1 = fma(yh, RAYO_LOG2E, magic);
    precise float n = t1 - magic;
    precise float r = fma(-n, RAYO_LN2_HI, yh) + fma(-n, RAYO_LN2_LO, yl);
    precise float pe = fma(r, 1.3821055e-03, 8.368675e-03);
    pe = fma(pe, r, 4.1668262e-02);
    pe = fma(pe, r, 1.6666521e-01);
    pe = fma(pe, r, 4.9999994e-01);
    precise float q = fma(pe, r * r, r);
    float s = uintBitsToFloat(floatBitsToUint(t1) << 23);
    precise float d = t + c;
    precise float dl = t - (d - c);
    precise float v = 1.0 / d;
    precise float e = fma(-v, dl, fma(-v, d, 1.0));
    precise float vl = v * e;
    precise float z = fma(-8.0, vl, fma(-8.0, v, 1.0));
    precise float p1 = fma(z, 2.8536373e-24, 1.2809865e-23);
    p1 = fma(p1, z, -9.139514e-24);
    p1 = fma(p1, z, -8.9564074e-23);
    p1 = fma(p1, z, 1.8907875e-22);
    p1 = fma(p1, z, 4.1034944e-22);
    p1 = fma(p1, z, -3.2786402e-21);
    p1 = fma(p1, z, 1.0120536e-20);
    p1 = fma(p1, z, -2.0999379e-20);
    p1 = fma(p1, z, 3.2965545e-20);
    const float c0 = -4.0948723e-20;
    precise float pz = fma(p1, z, c0);
    precise float err = fma(z, p1, c0 - pz);
    precise float f2 = pz + fma(pz, q, fma(err, q, err));
    precise float ts = t * s;
    precise float f1 = fma(ts, v, ts * vl);
    precise float result = fma(f1, f2, base);
    return result;
}

// gelu (erf form): x·Φ(x) = max(x, 0) - t·Φ(-t), t = |x|. The PTX kernel's algorithm
// (src/ptx/kernels/elementwise.cpp, gelu_erf_value, which states its derivation), with its fused
// multiply-adds that must be exact replaced by Dekker products (GLSL's fma need not be fused):
// Φ(-t) = e^{-t²/2}·P(z)·v, v = 1/(t + c), z = 1 - 8v, P of degree 10; e^{-t²/2} = 2^n·(1 + q)
// from -t²/2 = yh + yl exactly; v + vl refined from the exact residual 1 - v·(t + c) (c a multiple
// of 2^-19, so t + c = d + dl exactly), so the division's own error does not matter; F1 =
// t·2^(n+64)·(v + vl); F2 = -2^-64·P·(1 + q) with the last Horner step's rounding error added back
// (the -2^-64 is folded into P's coefficients); the result is F1·F2 + max(x, 0) from F1·F2 as a
// double-float, so a result below x's scale (x < 0, subnormal ones too) rounds once. Products that
// are only added on are written as fma: one instruction where fma is fused (the sum then rounds
// once, no worse), the same rounding as a product and a sum where it is not.
float rayo_gelu_erf(float x) {
    const float c = 4.0005016e+00;
    const float magic = 12583103.0;  // RAYO_ROUND_MAGIC + 191: n + 64 + 127 lands in the low bits
    // max(x, 0) with -0 for -0 and negatives, NaN kept; t = 15 also serves x >= 15 (the result is
    // x), x <= -15 (-0) and infinities.
    precise float base = (x >= 0.0 || isnan(x)) ? x : -0.0;
    precise float t = min(abs(x), 15.0);
    if (RAYO_FUSED_FMA) return rayo_gelu_erf_fused(t, base);
    float yh, yl;
    rayo_two_prod(t, t * -0.5, yh, yl);
    precise float t1 = fma(yh, RAYO_LOG2E, magic);
    precise float n = t1 - magic;
    precise float r1 = fma(-n, RAYO_LN2_HI, yh);  // exact, fused or not (n·ln2_hi is exact)
    precise float r = r1 + fma(-n, RAYO_LN2_LO, yl);
    precise float pe = fma(r, 1.3821055e-03, 8.368675e-03);  // (e^r - 1 - r)/r², |r| <= 0.3467
    pe = fma(pe, r, 4.1668262e-02);
    pe = fma(pe, r, 1.6666521e-01);
    pe = fma(pe, r, 4.9999994e-01);
    precise float q = fma(pe, r * r, r);
    float s = uintBitsToFloat(floatBitsToUint(t1) << 23);  // 2^(n+64)
    precise float d = t + c;
    precise float dl = t - (d - c);
    precise float v = 1.0 / d;
    float vd, vd_lo;
    rayo_two_prod(v, d, vd, vd_lo);
    precise float e = fma(-v, dl, (1.0 - vd) - vd_lo);
    precise float vl = v * e;
    precise float z = fma(-8.0, vl, fma(-8.0, v, 1.0));  // 8v and 8vl are exact: fused or not the same
    precise float p1 = fma(z, 2.8536373e-24, 1.2809865e-23);  // -2^-64·P, highest degree first
    p1 = fma(p1, z, -9.139514e-24);
    p1 = fma(p1, z, -8.9564074e-23);
    p1 = fma(p1, z, 1.8907875e-22);
    p1 = fma(p1, z, 4.1034944e-22);
    p1 = fma(p1, z, -3.2786402e-21);
    p1 = fma(p1, z, 1.0120536e-20);
    p1 = fma(p1, z, -2.0999379e-20);
    p1 = fma(p1, z, 3.2965545e-20);
    float ph, pl, pz, ps;
    rayo_two_prod(p1, z, ph, pl);
    rayo_two_sum(-4.0948723e-20, ph, pz, ps);
    precise float err = pl + ps;
    precise float f2 = pz + fma(pz, q, fma(err, q, err));
    precise float ts = t * s;
    precise float f1 = fma(ts, v, ts * vl);
    float fh, fl;
    rayo_two_prod(f1, f2, fh, fl);
    precise float result = (fh + base) + fl;
    // A zero result takes base's sign: -0 + +0 would make -0 (x = -0, or x < 0 underflowing) +0.
    return result == 0.0 ? base : result;
}
