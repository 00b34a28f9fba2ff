// f16 and bf16 <-> float32 on the bits: integer arithmetic only, so no driver's float conversion
// (or flushing of subnormals) enters. Rounding is to nearest even; NaN stays NaN (quiet, payload
// kept where it fits), overflow gives ±Inf. Shared by cast.comp and element16.glsl.

// The float bits of a half (exact: a subnormal half is a normal float).
uint half_to_float_bits(uint h) {
    uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) return sign | 0x7f800000u | (m << 13);  // Inf, NaN (payload kept)
    if (e != 0u) return sign | ((e + 112u) << 23) | (m << 13);
    if (m == 0u) return sign;
    int top = findMSB(m);  // normalise the subnormal: value m·2^-24
    return sign | (uint(top + 103) << 23) | ((m << (23 - top)) & 0x7fffffu);
}

// Round-to-nearest-even of the magnitude `m` (shifted right by `shift`, 1..31) to an integer.
uint shift_rte(uint m, uint shift) {
    uint kept = m >> shift, rest = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    return kept + ((rest > halfway || (rest == halfway && (kept & 1u) != 0u)) ? 1u : 0u);
}

uint float_bits_to_half(uint f) {
    uint sign = (f >> 16) & 0x8000u, a = f & 0x7fffffffu;
    if (a >= 0x7f800000u) return sign | 0x7c00u | (a > 0x7f800000u ? 0x200u | ((a >> 13) & 0x3ffu) : 0u);
    if (a >= 0x477ff000u) return sign | 0x7c00u;  // rounds to 65520 or more
    if (a < 0x38800000u) {                         // a subnormal half (or zero)
        if (a < 0x33000000u) return sign;          // below 2^-25
        return sign | shift_rte((a & 0x7fffffu) | 0x800000u, 126u - (a >> 23));
    }
    return sign | shift_rte(a - 0x38000000u, 13u);  // the carry may roll into the exponent: still right
}

uint float_bits_to_bf16(uint f) {
    if ((f & 0x7fffffffu) > 0x7f800000u) return (f >> 16) | 0x40u;  // quiet NaN
    return (f + 0x7fffu + ((f >> 16) & 1u)) >> 16;
}
