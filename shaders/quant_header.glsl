// What the f32 K-quant GEMVs (quant_gemv_body.glsl, quant_gemv_spanning.comp) decode of a block's
// header, read as words: its f16 scales as exact f32, and q4_k's 6-bit scales and mins.

// IEEE binary16 -> f32 for the low 16 bits of h, exact for subnormal halves too whatever the
// device's float16 denormal mode (mant·2^-24 is a normal f32).
float half_exact(uint h) {
    float v = unpackHalf2x16(h).x;
    if ((h & 0x7C00u) == 0u) v = float(h & 0x3FFu) * (1.0 / 16777216.0) * ((h & 0x8000u) != 0u ? -1.0 : 1.0);
    return v;
}

// The 6-bit scales (x) and mins (y) of q4_k sub-blocks 2c and 2c+1 as bytes 0 and 1 of each word,
// from the block's first 16 bytes (shared/QUANT.md's get_scale_min_k4): sub-blocks 0..3 are bytes of
// head.y / head.z, 4..7 the nibbles of head.w with the top two bits of head.y / head.z.
uvec2 q4_k_scales_mins(uvec4 head, uint c) {
    uint sc = c < 2u ? head.y & 0x3F3F3F3Fu : (head.w & 0x0F0F0F0Fu) | ((head.y >> 2) & 0x30303030u);
    uint mn = c < 2u ? head.z & 0x3F3F3F3Fu : ((head.w >> 4) & 0x0F0F0F0Fu) | ((head.z >> 2) & 0x30303030u);
    uint shift = (c & 1u) * 16u;  // sub-blocks 2c, 2c+1 are bytes 2(c%2), 2(c%2)+1
    return uvec2(sc >> shift, mn >> shift);
}
