#version 450
// linear(x, w) for a few rows of x (m <= MAX_ROWS) and q4_k / q6_k weights (TYPE 0 / 1):
// y[r, j] = Σ_p x[r, p]·w[j, p] with x as int8 activations (quant_activations.comp) and the
// weights as stored, each weight byte read once for all rows of x. Integer dot products of 4
// codes per word, written as plain int8 arithmetic (no GL_EXT_integer_dot_product needed).
// A workgroup takes 4 weight rows, 64 invocations each; the invocations of a row stride over its
// units (32 values of q4_k sharing a scale and min, 16 of q6_k sharing a scale).
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TYPE = 0;
layout(constant_id = 1) const bool RESIDUAL = true;

const uint MAX_ROWS = 16u;

layout(std430, set = 0, binding = 0) readonly buffer Weights { uint w_words[]; };
layout(std430, set = 0, binding = 1) readonly buffer Activations { uint act[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Params {
    uint n;           // weight rows
    uint m;           // rows of x
    uint blocks;      // blocks per row
    uint w_offset;    // bytes
    uint row_bytes;
    uint out_offset;  // floats
} params;

#define QUANT_WORDS w_words
#include "quant_blocks.glsl"

const uint ACTIVATION_WORDS = 146u;

// The 4 bytes at `addr` (2-byte aligned for q6_k blocks) as one little-endian word.
uint quant_word(uint addr) {
    uint shift = (addr & 3u) * 8u;
    uint lo = w_words[addr >> 2];
    if (shift == 0u) return lo;
    return (lo >> shift) | (w_words[(addr >> 2) + 1u] << (32u - shift));
}

// Σ of 4 unsigned bytes (0..63) of w times 4 signed bytes of x.
int dot4(uint w, uint x) {
    int s = 0;
    for (int b = 0; b < 4; ++b) s += int(bitfieldExtract(w, 8 * b, 8)) * bitfieldExtract(int(x), 8 * b, 8);
    return s;
}

shared float partial[256];

void main() {
    uint lane = gl_LocalInvocationID.x & 63u;
    uint j = gl_WorkGroupID.x * 4u + (gl_LocalInvocationID.x >> 6);
    bool row_valid = j < params.n;
    float acc[MAX_ROWS];
    for (uint r = 0u; r < MAX_ROWS; ++r) acc[r] = 0.0;
    uint units = params.blocks * (TYPE == 0u ? 8u : 16u);
    for (uint u = lane; row_valid && u < units; u += 64u) {
        if (TYPE == 0u) {
            uint b = u >> 3, sub = u & 7u;
            uint blk = params.w_offset + j * params.row_bytes + 144u * b;
            float d = half_bits_to_float(quant_u16(blk));
            float dmin = half_bits_to_float(quant_u16(blk + 2u));
            uint sc, mn;
            q4_k_scale_min(blk, sub, sc, mn);
            uint wq[8];
            uint first = (blk + 16u + 32u * (sub >> 1)) >> 2;  // q4_k blocks are 4-byte aligned
            for (uint k = 0u; k < 8u; ++k) wq[k] = (w_words[first + k] >> (4u * (sub & 1u))) & 0x0F0F0F0Fu;
            float scale = d * float(sc), offset = dmin * float(mn);
            for (uint r = 0u; r < params.m && r < MAX_ROWS; ++r) {
                uint a = (r * params.blocks + b) * ACTIVATION_WORDS;
                int dot1 = 0, dot2 = 0;
                for (uint k = 0u; k < 8u; ++k) dot1 += dot4(wq[k], act[a + 18u + 8u * sub + k]);
                if (RESIDUAL)
                    for (uint k = 0u; k < 8u; ++k) dot2 += dot4(wq[k], act[a + 82u + 8u * sub + k]);
                float sum32 = uintBitsToFloat(act[a + 2u + 2u * sub]) + uintBitsToFloat(act[a + 3u + 2u * sub]);
                float xs = uintBitsToFloat(act[a]) * float(dot1) + uintBitsToFloat(act[a + 1u]) * float(dot2);
                acc[r] += scale * xs - offset * sum32;
            }
        } else {
            uint b = u >> 4, s = u & 15u;
            uint blk = params.w_offset + j * params.row_bytes + 210u * b;
            uint h = s >> 3, quarter = (s & 7u) >> 1, l0 = (s & 1u) * 16u;
            uint ql_at = blk + 64u * h + (quarter & 1u) * 32u + l0;
            uint qh_at = blk + 128u + 32u * h + l0;
            // Codes q − 32 are signed: the dot takes them as (q) and subtracts 32·Σx below.
            uint wq[4];
            for (uint k = 0u; k < 4u; ++k) {
                uint low = (quant_word(ql_at + 4u * k) >> (quarter >= 2u ? 4u : 0u)) & 0x0F0F0F0Fu;
                uint high = (quant_word(qh_at + 4u * k) >> (2u * quarter)) & 0x03030303u;
                wq[k] = low | (high << 4);
            }
            float scale = half_bits_to_float(quant_u16(blk + 208u)) * float(quant_i8(blk + 192u + s));
            uint first = (128u * h + 32u * quarter + l0) >> 2;  // the x words of these 16 values
            for (uint r = 0u; r < params.m && r < MAX_ROWS; ++r) {
                uint a = (r * params.blocks + b) * ACTIVATION_WORDS;
                int dot1 = 0, dot2 = 0;
                for (uint k = 0u; k < 4u; ++k) dot1 += dot4(wq[k], act[a + 18u + first + k]);
                if (RESIDUAL)
                    for (uint k = 0u; k < 4u; ++k) dot2 += dot4(wq[k], act[a + 82u + first + k]);
                // sums16 of group (value index / 16) holds d1·Σq1 + d2·Σq2 of these 16 values.
                float sum16 = uintBitsToFloat(act[a + 2u + (first >> 2)]);
                float xs = uintBitsToFloat(act[a]) * float(dot1) + uintBitsToFloat(act[a + 1u]) * float(dot2);
                acc[r] += scale * (xs - 32.0 * sum16);
            }
        }
    }
    for (uint r = 0u; r < params.m && r < MAX_ROWS; ++r) {
        partial[gl_LocalInvocationID.x] = acc[r];
        barrier();
        for (uint s = 32u; s > 0u; s >>= 1) {
            if (lane < s) partial[gl_LocalInvocationID.x] += partial[gl_LocalInvocationID.x + s];
            barrier();
        }
        if (lane == 0u && row_valid) y[params.out_offset + r * params.n + j] = partial[gl_LocalInvocationID.x];
        barrier();
    }
}
