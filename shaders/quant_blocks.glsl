// Decoding of GGUF K-quant blocks (shared/QUANT.md) read byte-wise from a buffer of uint words.
// The including shader defines QUANT_WORDS as the name of that uint array. Values are computed
// with the CPU kernels' operations in their order (one product, one difference), `precise` so
// that no fma contraction changes a bit: dequantization is bit-exact with the CPU.

uint quant_byte(uint addr) { return (QUANT_WORDS[addr >> 2] >> ((addr & 3u) * 8u)) & 0xFFu; }
uint quant_u16(uint addr) { return quant_byte(addr) | (quant_byte(addr + 1u) << 8); }
int quant_i8(uint addr) { return int(quant_byte(addr) << 24) >> 24; }

// IEEE binary16 bits -> f32, exact for every input (subnormals included, whatever the device's
// denormal mode: the result of a subnormal half is a normal float).
float half_bits_to_float(uint h) {
    uint sign = (h & 0x8000u) << 16;
    uint e = (h >> 10) & 0x1Fu;
    uint mant = h & 0x3FFu;
    if (e == 0u) {
        float v = float(mant) * (1.0 / 16777216.0);  // mant·2^-24, exact
        return sign != 0u ? -v : v;
    }
    if (e == 31u) return uintBitsToFloat(sign | 0x7F800000u | (mant << 13));
    return uintBitsToFloat(sign | ((e + 112u) << 23) | (mant << 13));
}

// q4_k: 144-byte block at byte `blk`; 6-bit scale and min of sub-block j (0..7).
void q4_k_scale_min(uint blk, uint j, out uint sc, out uint m) {
    uint s = blk + 4u;
    if (j < 4u) {
        sc = quant_byte(s + j) & 63u;
        m = quant_byte(s + j + 4u) & 63u;
    } else {
        sc = (quant_byte(s + j + 4u) & 0x0Fu) | ((quant_byte(s + j - 4u) >> 6) << 4);
        m = (quant_byte(s + j + 4u) >> 4) | ((quant_byte(s + j) >> 6) << 4);
    }
}

// Value i (0..255) of the q4_k block at byte `blk`: (d·sc)·q − dmin·m.
float q4_k_value(uint blk, uint i) {
    float d = half_bits_to_float(quant_u16(blk));
    float dmin = half_bits_to_float(quant_u16(blk + 2u));
    uint j = i >> 5, l = i & 31u;
    uint sc, m;
    q4_k_scale_min(blk, j, sc, m);
    uint qb = quant_byte(blk + 16u + 32u * (j >> 1) + l);
    uint q = (j & 1u) != 0u ? qb >> 4 : qb & 15u;
    precise float scale = d * float(sc);
    precise float offset = dmin * float(m);
    precise float v = scale * float(q) - offset;
    return v;
}

// The signed code (q − 32, in −32..31) and scale index of value i of the q6_k block at `blk`.
int q6_k_code(uint blk, uint i, out uint scale_index) {
    uint h = i >> 7, r = i & 127u;
    uint quarter = r >> 5, l = r & 31u;
    uint ql = quant_byte(blk + 64u * h + l + (quarter & 1u) * 32u);
    uint low = quarter >= 2u ? ql >> 4 : ql & 15u;
    uint high = (quant_byte(blk + 128u + 32u * h + l) >> (2u * quarter)) & 3u;
    scale_index = 8u * h + 2u * quarter + (l >> 4);
    return int(low | (high << 4)) - 32;
}

// Value i of the q6_k block at `blk`: (d·scale)·(q − 32).
float q6_k_value(uint blk, uint i) {
    uint s;
    int q = q6_k_code(blk, i, s);
    float d = half_bits_to_float(quant_u16(blk + 208u));
    precise float scale = d * float(quant_i8(blk + 192u + s));
    precise float v = scale * float(q);
    return v;
}

// Value i of the q8_k block at `blk` (4-byte aligned): d·q.
float q8_k_value(uint blk, uint i) {
    precise float v = uintBitsToFloat(QUANT_WORDS[blk >> 2]) * float(quant_i8(blk + 4u + i));
    return v;
}
