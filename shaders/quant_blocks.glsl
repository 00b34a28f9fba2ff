// Decoding of GGUF blocks (q4_k, q5_k, q6_k, q8_k, q8_0, q4_0; shared/QUANT.md) read byte-wise from a
// buffer of uint words, so any 2-byte aligned block is read where it lies. The including shader
// includes op_codes.glsl and defines QUANT_WORDS as the name of that uint array. Values are computed
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

// Value i (0..255) of the q5_k block at byte `blk`: q4_k's with a fifth bit, bit j (the sub-block)
// of qh[l], above the nibble of qs (at byte 48, laid out as q4_k's): (d·sc)·q − dmin·m.
float q5_k_value(uint blk, uint i) {
    float d = half_bits_to_float(quant_u16(blk));
    float dmin = half_bits_to_float(quant_u16(blk + 2u));
    uint j = i >> 5, l = i & 31u;
    uint sc, m;
    q4_k_scale_min(blk, j, sc, m);
    uint qb = quant_byte(blk + 48u + 32u * (j >> 1) + l);
    uint q = ((j & 1u) != 0u ? qb >> 4 : qb & 15u) | (((quant_byte(blk + 16u + l) >> j) & 1u) << 4);
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

// Value i (0..31) of the q8_0 block at byte `blk` (34 bytes, 2-byte aligned): q·d.
float q8_0_value(uint blk, uint i) {
    float d = half_bits_to_float(quant_u16(blk));
    precise float v = float(quant_i8(blk + 2u + i)) * d;
    return v;
}

// Value i (0..31) of the q4_0 block at byte `blk` (18 bytes, 2-byte aligned): (q − 8)·d, q the low
// nibble of qs[i] for i < 16, the high nibble of qs[i − 16] above.
float q4_0_value(uint blk, uint i) {
    float d = half_bits_to_float(quant_u16(blk));
    uint qb = quant_byte(blk + 2u + (i & 15u));
    uint q = i < 16u ? qb & 15u : qb >> 4;
    precise float v = float(int(q) - 8) * d;
    return v;
}

// Whether `type` (a RAYO_DTYPE_* code) is one of the block types above.
bool quant_is_block_type(uint type) {
    return type == RAYO_DTYPE_Q4_K || type == RAYO_DTYPE_Q5_K || type == RAYO_DTYPE_Q6_K || type == RAYO_DTYPE_Q8_K ||
           type == RAYO_DTYPE_Q8_0 || type == RAYO_DTYPE_Q4_0;
}

// Bytes of one block of `type`.
uint quant_block_bytes(uint type) {
    switch (type) {
        case RAYO_DTYPE_Q4_K: return 144u;
        case RAYO_DTYPE_Q5_K: return 176u;
        case RAYO_DTYPE_Q6_K: return 210u;
        case RAYO_DTYPE_Q8_0: return 34u;
        case RAYO_DTYPE_Q4_0: return 18u;
        default: return 292u;  // q8_k
    }
}

// log2 of the values in one block of `type`: 32 for q8_0 / q4_0, 256 for the K-quants.
uint quant_block_shift(uint type) { return type == RAYO_DTYPE_Q8_0 || type == RAYO_DTYPE_Q4_0 ? 5u : 8u; }

// Value i of the block of `type` at byte `blk`.
float quant_value(uint type, uint blk, uint i) {
    switch (type) {
        case RAYO_DTYPE_Q4_K: return q4_k_value(blk, i);
        case RAYO_DTYPE_Q5_K: return q5_k_value(blk, i);
        case RAYO_DTYPE_Q6_K: return q6_k_value(blk, i);
        case RAYO_DTYPE_Q8_0: return q8_0_value(blk, i);
        case RAYO_DTYPE_Q4_0: return q4_0_value(blk, i);
        default: return q8_k_value(blk, i);
    }
}

// Value p of a run of consecutive blocks of `type` that starts at byte `at` (a row of weights,
// or a whole contiguous tensor).
float quant_row_value(uint type, uint at, uint p) {
    uint shift = quant_block_shift(type);
    return quant_value(type, at + (p >> shift) * quant_block_bytes(type), p & ((1u << shift) - 1u));
}
