// q8_k quantization of one 256-value block by one workgroup of 256 invocations (invocation i
// holds value i), byte for byte the CPU reference (shared/QUANT.md): max = the first value of the
// largest magnitude (NaNs skipped), iscale = −127/max, q = min(127, nearest_int(iscale·x)) kept
// to its low byte, d = 1/iscale. Every invocation of the workgroup must call q8_quantize.

shared float q8_amax[256];
shared uint q8_first[256];
shared int q8_codes[256];

// Dekker's exact product: a·b = p + e.
void two_product(float a, float b, out float p, out float e) {
    precise float ca = 4097.0 * a;
    precise float ah = ca - (ca - a);
    precise float al = a - ah;
    precise float cb = 4097.0 * b;
    precise float bh = cb - (cb - b);
    precise float bl = b - bh;
    precise float pp = a * b;
    precise float ee = ((ah * bh - pp) + ah * bl + al * bh) + al * bl;
    p = pp;
    e = ee;
}

// |a − q·b|, exactly enough to rank candidate quotients q near a/b.
float division_residual(float a, float b, float q) {
    float p, e;
    two_product(q, b, p, e);
    precise float r = (a - p) - e;
    return abs(r);
}

// a / b correctly rounded (GLSL's division may be off by 2.5 ulp, and drivers use that room): the
// candidate of the seven floats within 3 ulps of the device's quotient that leaves the smallest
// exact residual.
float divide_rounded(float a, float b) {
    precise float q = a / b;
    if (isinf(q) || isnan(q) || q == 0.0 || isinf(b)) return q;
    float best = q;
    float best_r = division_residual(a, b, q);
    int bits = floatBitsToInt(q);
    for (int s = -3; s <= 3; ++s) {
        if (s == 0) continue;
        float c = intBitsToFloat(bits + s);
        float r = division_residual(a, b, c);
        if (r < best_r) {
            best = c;
            best_r = r;
        }
    }
    return best;
}

// Quantizes the workgroup's block; returns this invocation's code (−128..127) and sets d. The
// block's codes stay in q8_codes until the next call.
int q8_quantize(float x, uint i, out float d) {
    float ax = abs(x);
    q8_amax[i] = ax > 0.0 ? ax : 0.0;  // NaN never wins, as in the reference's `ax > amax`
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
        if (i < s) q8_amax[i] = max(q8_amax[i], q8_amax[i + s]);
        barrier();
    }
    float amax = q8_amax[0];
    q8_first[i] = ax == amax ? i : 256u;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
        if (i < s) q8_first[i] = min(q8_first[i], q8_first[i + s]);
        barrier();
    }
    int code = 0;
    d = 0.0;
    if (amax != 0.0) {  // uniform over the workgroup: the barriers inside are reached by all
        // Every invocation reads the maximum's value through the shared codes' slot of its index.
        q8_codes[i] = floatBitsToInt(x);
        barrier();
        float mx = intBitsToFloat(q8_codes[q8_first[0]]);
        barrier();
        float iscale = divide_rounded(-127.0, mx);
        precise float v = iscale * x;
        precise float t = v + 12582912.0;  // 1.5·2^23: the low mantissa bits are nearest_int(v)
        int n = (floatBitsToInt(t) & 0x007FFFFF) - 0x00400000;
        // NaNs, as the reference's x86 arithmetic makes them (a device may give its own NaN bits):
        // a NaN x keeps its payload, quieted; ±inf·0 (a block whose maximum is infinite) is the
        // default NaN, payload 0.
        uint xb = floatBitsToUint(x);
        if ((xb & 0x7FFFFFFFu) > 0x7F800000u) n = int((xb | 0x00400000u) & 0x007FFFFFu) - 0x00400000;
        else if ((floatBitsToUint(v) & 0x7FFFFFFFu) > 0x7F800000u) n = 0;
        n = min(n, 127);
        code = (n << 24) >> 24;
        d = divide_rounded(1.0, iscale);
    }
    q8_codes[i] = code;
    barrier();
    return code;
}

// Sum of the 16 codes of group g (0..15) of the last quantized block.
int q8_group_sum(uint g) {
    int s = 0;
    for (uint l = 0u; l < 16u; ++l) s += q8_codes[16u * g + l];
    return s;
}

// The 4 codes at 4w..4w+3 as one little-endian word of int8s.
uint q8_packed_word(uint w) {
    uint r = 0u;
    for (uint b = 0u; b < 4u; ++b) r |= (uint(q8_codes[4u * w + b]) & 0xFFu) << (8u * b);
    return r;
}
