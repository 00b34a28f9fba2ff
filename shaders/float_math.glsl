// Float math for the element-wise shaders: ports of the CPU kernels in include/rayo/cpu/vector_math.hpp
// (same range reductions, polynomials and constants), so both backends agree to a few ulps.
// GLSL's fma() need not be fused (lavapipe splits it), so nothing relies on its single rounding.
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

// p + e = a·b exactly (barring underflow). Dekker's product, not the fma residual: GLSL's fma
// need not be fused (lavapipe splits it into a multiply and an add), and then the residual is 0.
void rayo_two_prod(float a, float b, out float p, out float e) {
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
    // (lavapipe's) lowered the fma pair here to something that lost the low part of ln2.
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

float rayo_div(float a, float b) {
    precise float q = a / b;
    if (isinf(q) || isnan(q) || q == 0.0 || isinf(b)) return q;
    precise float r = fma(-q, b, a);
    precise float result = fma(r, 1.0 / b, q);
    return result;
}

// gelu (erf form): x·Φ(x), Φ the normal CDF. The CPU works in double; here in float with the
// same decomposition: Φ(-t) = e^(-t²/2)·p(z)/(t + 4), z = (t - 4)/(t + 4), p the CPU's degree-13
// fit (coefficients rounded to float). -t²/2 is carried as a double-float (t² exactly, by
// Dekker), since e^y turns y's absolute error into a relative one; 2^n is applied last, so tiny
// results are rounded once. Φ(x) = 1 - Φ(-x) for x >= 0 (Φ(-x) <= 1/2: no cancellation).
// One compensated Horner step: (p + pe)·z + (c_hi + c_lo), the result's error carried in pe.
void rayo_gelu_erf_step(inout float p, inout float pe, float z, float c_hi, float c_lo) {
    float ph, pl, s, sl;
    rayo_two_prod(p, z, ph, pl);
    rayo_two_sum(ph, c_hi, s, sl);
    precise float e = ((pl + sl) + pe * z) + c_lo;
    p = s;
    pe = e;
}

float rayo_gelu_erf(float x) {
    if (isnan(x) || x >= 15.0) return x;  // above 15, Φ = 1 in float
    precise float xm = max(x, -15.0);      // below -15, x·Φ(x) rounds to -0
    precise float t = abs(xm);
    float sh, sl;
    rayo_two_prod(t, t, sh, sl);
    precise float yh = -0.5 * sh;
    precise float yl = -0.5 * sl;
    // yh + yl = n·ln2 + r as in rayo_exp_reduce, with yl folded into the small term so that r is
    // rounded once.
    precise float tt = fma(yh, RAYO_LOG2E, RAYO_ROUND_MAGIC);
    precise float n = tt - RAYO_ROUND_MAGIC;
    precise float p_hi = n * RAYO_LN2_HI;
    precise float r0 = yh - p_hi;
    precise float p_lo = n * RAYO_LN2_LO - yl;
    precise float r = r0 - p_lo;
    precise float q = rayo_expm1_poly(r);  // e^(-t²/2) = (1 + q)·2^n
    // t ± 4 as exact double-floats: rounding t + 4 alone would cost h a whole ulp.
    float den, den_lo, num, num_lo;
    rayo_two_sum(t, 4.0, den, den_lo);
    rayo_two_sum(t, -4.0, num, num_lo);
    precise float z0 = rayo_div(num, den);
    precise float z = z0 + (num_lo - z0 * den_lo) / den;
    float p = fma(-1.323612310e-06, z, 4.151929261e-06);
    p = fma(p, z, 3.229983122e-05);
    p = fma(p, z, -5.758941370e-06);
    p = fma(p, z, -2.308029798e-04);
    p = fma(p, z, 1.348851511e-04);
    p = fma(p, z, 1.630986226e-03);
    p = fma(p, z, -3.479980165e-03);
    p = fma(p, z, -7.540234830e-03);
    p = fma(p, z, 6.039660051e-02);
    // The last four steps carry their rounding errors (and the coefficients' float rounding):
    // near z = 0.5 they cancel partly, and plain float Horner there cost ~3 ulp.
    float pe = 0.0;
    rayo_gelu_erf_step(p, pe, z, -1.865218580e-01, 3.579613495e-09);
    rayo_gelu_erf_step(p, pe, z, 3.871374130e-01, -1.313604425e-08);
    rayo_gelu_erf_step(p, pe, z, -6.078966260e-01, -1.604446709e-08);
    rayo_gelu_erf_step(p, pe, z, 7.552851439e-01, -1.343149680e-08);
    precise float pp = p + pe;
    precise float h = rayo_div(pp, den);
    // (1 + q)·h·(1 - den_lo/den) without rounding 1 + q or the correction first.
    precise float qc = q - den_lo / den;
    precise float eh = h * qc + h;
    if (xm < 0.0) {
        precise float v = xm * eh;
        return rayo_scale(v, tt);
    }
    precise float phi = rayo_scale(eh, tt);  // Φ(-x)
    precise float result = x * (1.0 - phi);
    return result;
}
