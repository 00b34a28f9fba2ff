// linear(x, w) for a few rows of x (m = ROWS_X <= 16) and block-quantized weights (TYPE: q4_k,
// q5_k, q6_k, q8_0 or q4_0), in f32: y[r, j] = Σ_p x[r, p]·w[j, p] with x read as stored and each
// weight decoded in registers once for all rows of x. Included by quant_gemv.comp (shared-memory
// reduction) and quant_gemv_subgroup.comp (RAYO_SUBGROUPS: subgroupAdd first).
//
// Work split: a workgroup takes ROWS_W consecutive weight rows; its invocations stride over the
// rows' units together, a unit being 64 weights of a K-quant block with a scale each 32 (q4_k /
// q5_k: the 32 packed bytes of sub-blocks 2c and 2c+1, q5_k with its 32 bytes of fifth bits) or 16
// (q6_k: 16 bytes each of ql, ql+32 and qh, four 16-value scale groups), or one 32-value block of
// q8_0 / q4_0 with its one scale. An invocation loads its unit of all ROWS_W rows before it
// decodes (memory-level parallelism), and each x vec4 it loads serves ROWS_W rows.
//
// A code q (4 to 8 bits at bit p of a word, p + width <= 23) becomes a float exactly in two
// operations, no int->float conversion: OR-ing it into the mantissa of 2^(23−p) gives 2^(23−p) + q,
// and subtracting 2^(23−p) leaves q (subtracting 2^(23−p) + 8 leaves q4_0's q − 8; q8_0's signed
// codes, their sign bit flipped, are q + 128 and leave q after 2^(23−p) + 128). Then either
//   FOLD:  the invocation sums q·x (and, where the type has an offset, x) per scale group and
//          applies the group's scale and min once per unit (acc += D·Σq·x − M·Σx; q6_k's −32
//          offset is M = 32·D; q8_0 and q4_0 have none): 1 FMA per weight and row of x, the best
//          for one or two rows of x;
//   !FOLD: each weight value D·q − M is formed once (one FMA) and multiplied into every row of x,
//          which needs far fewer registers when x has many rows.
// Partial sums of the invocations are added in a fixed order: results are the same run to run.

#include "op_codes.glsl"
#include "quant_header.glsl"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const uint TYPE = RAYO_DTYPE_Q4_K;  // RAYO_DTYPE_Q4_K, _Q5_K, _Q6_K, _Q8_0 or _Q4_0
layout(constant_id = 2) const uint ROWS_X = 1;     // rows of x (m)
layout(constant_id = 3) const uint ROWS_W = 4;     // weight rows per workgroup
layout(constant_id = 4) const bool FOLD = true;    // scales per unit (see above) or per weight
layout(constant_id = 5) const bool X_VEC4 = true;  // x starts 16-byte aligned: vec4 loads
layout(constant_id = 6) const uint SUBGROUP_SLOTS = 1;  // subgroups per workgroup (subgroup build)

const uint WG = gl_WorkGroupSize.x;
// q8_0 / q4_0: blocks of 32 values, one unit each; the K-quants: 256 values, 4 units of 64.
const bool SMALL_BLOCKS = TYPE == RAYO_DTYPE_Q8_0 || TYPE == RAYO_DTYPE_Q4_0;
const uint BLOCK_VALUES = SMALL_BLOCKS ? 32u : 256u;
const uint UNITS_PER_BLOCK = SMALL_BLOCKS ? 1u : 4u;
const uint GROUPS = SMALL_BLOCKS ? 1u : (TYPE == RAYO_DTYPE_Q6_K ? 4u : 2u);  // scale groups per unit
const bool OFFSETS = !SMALL_BLOCKS;  // a weight is D·q − M with M != 0 (the codes of q8_0 / q4_0 are signed)
const uint RM = ROWS_W * ROWS_X;

// The weights as words (q6_k, q8_0 and q4_0 blocks are only 2-byte aligned) and, for q4_k and
// q5_k, whose blocks are 16-byte aligned (the host checks), as 16-byte vectors: both views of
// binding 0. Likewise x.
layout(std430, set = 0, binding = 0) readonly buffer Weights { uint w_words[]; };
layout(std430, set = 0, binding = 0) readonly buffer Weights16 { uvec4 w_vec4[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { float x_floats[]; };
layout(std430, set = 0, binding = 1) readonly buffer X16 { vec4 x_vec4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Output { float y[]; };
layout(std430, set = 0, binding = 3) readonly buffer Bias { float bias[]; };

layout(push_constant) uniform Params {
    uint n;           // weight rows
    uint blocks;      // blocks per row (k / 256, or k / 32 for q8_0 / q4_0)
    uint w_offset;    // bytes
    uint row_bytes;
    uint x_offset;    // floats
    uint out_offset;  // floats
    uint bias_offset; // floats
    uint has_bias;    // 1: y gets bias[row] added (linear's bias)
} params;

// What linear's bias adds to weight row j's outputs: bias[j], or 0 without one.
float bias_of(uint j) { return params.has_bias != 0u ? bias[params.bias_offset + j] : 0.0; }

float acc[RM];                 // [weight row][row of x]
float qx[ROWS_W * ROWS_X * GROUPS];  // FOLD: Σ q·x of the unit, [weight row][row of x][group]
float xs[ROWS_X * GROUPS];     // FOLD: Σ x of the unit, [row of x][group]
float scale[ROWS_W * GROUPS];  // D of each group of the unit, [weight row][group]
float offset[ROWS_W * GROUPS]; // M: the value of a weight is D·q − M
uint row_at[ROWS_W];           // byte address of each weight row

// The code `q` = (word >> p) & mask, p + bits of mask <= 23, as a float minus `bias`: 2^(23−p) + q
// less 2^(23−p) + bias (exact for bias <= 128 and p <= 16).
float code_at(uint word, uint p, uint mask, float bias) {
    uint magic = (150u - p) << 23;
    return uintBitsToFloat(magic | (word & (mask << p))) - (uintBitsToFloat(magic) + bias);
}
float code_at(uint word, uint p, uint mask) { return code_at(word, p, mask, 0.0); }

// The codes in the 4 bytes of `word` (the low bits of each that `mask` keeps, up to all 8) less
// `bias`: bytes 0-1 in place, bytes 2-3 moved down to bits 0 and 8.
vec4 byte_codes(uint word, uint mask, float bias) {
    uint upper = word >> 16;
    return vec4(code_at(word, 0u, mask, bias), code_at(word, 8u, mask, bias), code_at(upper, 0u, mask, bias),
                code_at(upper, 8u, mask, bias));
}

// Row r of x starts this many floats past the first.
uint x_row(uint r) { return r * params.blocks * BLOCK_VALUES; }

vec4 load_x(uint at) {  // at: a float index, a multiple of 4
    if (X_VEC4) return x_vec4[at >> 2];
    return vec4(x_floats[at], x_floats[at + 1u], x_floats[at + 2u], x_floats[at + 3u]);
}

// codes[j]: 4 consecutive codes (FOLD) or weight values of weight row j, of scale group g, whose
// x values start at index `at` of each row of x; adds their products into the sums.
void multiply(vec4 codes[ROWS_W], uint g, uint at) {
    [[unroll]] for (uint r = 0u; r < ROWS_X; ++r) {
        vec4 xv = load_x(params.x_offset + x_row(r) + at);
        if (FOLD) {
            if (OFFSETS) xs[r * GROUPS + g] += (xv.x + xv.y) + (xv.z + xv.w);
            [[unroll]] for (uint j = 0u; j < ROWS_W; ++j) {
                uint i = (j * ROWS_X + r) * GROUPS + g;
                qx[i] += codes[j].x * xv.x;
                qx[i] += codes[j].y * xv.y;
                qx[i] += codes[j].z * xv.z;
                qx[i] += codes[j].w * xv.w;
            }
        } else {
            [[unroll]] for (uint j = 0u; j < ROWS_W; ++j) {
                uint i = j * ROWS_X + r;
                acc[i] += codes[j].x * xv.x;
                acc[i] += codes[j].y * xv.y;
                acc[i] += codes[j].z * xv.z;
                acc[i] += codes[j].w * xv.w;
            }
        }
    }
}

// !FOLD: the codes of row j become weight values (one FMA each; a product without offsets).
vec4 weights(vec4 codes, uint j, uint g) {
    if (FOLD) return codes;
    return OFFSETS ? codes * scale[j * GROUPS + g] - offset[j * GROUPS + g] : codes * scale[j * GROUPS + g];
}

void begin_unit() {
    if (!FOLD) return;
    [[unroll]] for (uint i = 0u; i < ROWS_W * ROWS_X * GROUPS; ++i) qx[i] = 0.0;
    if (OFFSETS) {
        [[unroll]] for (uint i = 0u; i < ROWS_X * GROUPS; ++i) xs[i] = 0.0;
    }
}

void end_unit() {
    if (!FOLD) return;
    [[unroll]] for (uint j = 0u; j < ROWS_W; ++j)
        [[unroll]] for (uint r = 0u; r < ROWS_X; ++r)
            [[unroll]] for (uint g = 0u; g < GROUPS; ++g)
                acc[j * ROWS_X + r] += OFFSETS ? scale[j * GROUPS + g] * qx[(j * ROWS_X + r) * GROUPS + g] -
                                                     offset[j * GROUPS + g] * xs[r * GROUPS + g]
                                               : scale[j * GROUPS + g] * qx[(j * ROWS_X + r) * GROUPS + g];
}

// The scales and offsets of sub-blocks 2c and 2c+1 of weight row j's q4_k / q5_k block, whose
// first 16 bytes are `head` (d, dmin, the packed 6-bit scales and mins).
void k4_factors(uvec4 head, uint c, uint j) {
    uvec2 sm = q4_k_scales_mins(head, c);
    uint sc = sm.x, mn = sm.y;
    float d = half_exact(head.x), dmin = half_exact(head.x >> 16);
    scale[j * 2u] = d * code_at(sc, 0u, 63u);
    scale[j * 2u + 1u] = d * code_at(sc, 8u, 63u);
    offset[j * 2u] = dmin * code_at(mn, 0u, 63u);
    offset[j * 2u + 1u] = dmin * code_at(mn, 8u, 63u);
}

// q4_k unit u: chunk c = u % 4 of block u / 4, i.e. sub-blocks 2c (low nibbles) and 2c+1 (high).
void q4_k_unit(uint u) {
    uint b = u >> 2, c = u & 3u;
    uint q[ROWS_W * 8];
    [[unroll]] for (uint j = 0u; j < ROWS_W; ++j) {
        uint v = (row_at[j] + 144u * b) >> 4;  // the block in 16-byte units
        uvec4 head = w_vec4[v];
        uvec4 lo = w_vec4[v + 1u + 2u * c], hi = w_vec4[v + 2u + 2u * c];
        q[8u * j + 0u] = lo.x; q[8u * j + 1u] = lo.y; q[8u * j + 2u] = lo.z; q[8u * j + 3u] = lo.w;
        q[8u * j + 4u] = hi.x; q[8u * j + 5u] = hi.y; q[8u * j + 6u] = hi.z; q[8u * j + 7u] = hi.w;
        k4_factors(head, c, j);
    }
    uint at = 256u * b + 64u * c;  // x index of the unit's first value
    [[unroll]] for (uint k = 0u; k < 8u; ++k) {  // word k: values 4k..4k+3 of both sub-blocks
        vec4 low[ROWS_W], high[ROWS_W];
        [[unroll]] for (uint j = 0u; j < ROWS_W; ++j) {
            uint word = q[8u * j + k], top = word >> 12;  // nibbles at 20, 24, 28 moved to 8, 12, 16
            low[j] = weights(vec4(code_at(word, 0u, 15u), code_at(word, 8u, 15u), code_at(word, 16u, 15u),
                                  code_at(top, 12u, 15u)), j, 0u);
            high[j] = weights(vec4(code_at(word, 4u, 15u), code_at(word, 12u, 15u), code_at(top, 8u, 15u),
                                   code_at(top, 16u, 15u)), j, 1u);
        }
        multiply(low, 0u, at + 4u * k);
        multiply(high, 1u, at + 32u + 4u * k);
    }
}

// q5_k unit u: chunk c = u % 4 of block u / 4 (176 bytes: d, dmin, scales as q4_k's, qh[32] at
// byte 16, qs[128] at byte 48), i.e. sub-blocks 2c (low nibbles, fifth bit 2c of qh[l]) and 2c+1
// (high nibbles, bit 2c+1).
void q5_k_unit(uint u) {
    uint b = u >> 2, c = u & 3u;
    uint low[ROWS_W * 8], high[ROWS_W * 8];  // bytes of 5-bit codes: word k holds l = 4k..4k+3
    [[unroll]] for (uint j = 0u; j < ROWS_W; ++j) {
        uint v = (row_at[j] + 176u * b) >> 4;  // the block in 16-byte units
        uvec4 head = w_vec4[v];
        uvec4 h0 = w_vec4[v + 1u], h1 = w_vec4[v + 2u];  // qh: word k is qh[4k..4k+3]
        uvec4 q0 = w_vec4[v + 3u + 2u * c], q1 = w_vec4[v + 4u + 2u * c];
        uint qs[8] = uint[8](q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w);
        uint qh[8] = uint[8](h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w);
        [[unroll]] for (uint k = 0u; k < 8u; ++k) {
            low[8u * j + k] = (qs[k] & 0x0F0F0F0Fu) | (((qh[k] >> (2u * c)) & 0x01010101u) << 4);
            high[8u * j + k] = ((qs[k] >> 4) & 0x0F0F0F0Fu) | (((qh[k] >> (2u * c + 1u)) & 0x01010101u) << 4);
        }
        k4_factors(head, c, j);
    }
    uint at = 256u * b + 64u * c;  // x index of the unit's first value
    [[unroll]] for (uint k = 0u; k < 8u; ++k) {  // word k: values 4k..4k+3 of both sub-blocks
        vec4 lo[ROWS_W], hi[ROWS_W];
        [[unroll]] for (uint j = 0u; j < ROWS_W; ++j) {
            lo[j] = weights(byte_codes(low[8u * j + k], 31u, 0.0), j, 0u);
            hi[j] = weights(byte_codes(high[8u * j + k], 31u, 0.0), j, 1u);
        }
        multiply(lo, 0u, at + 4u * k);
        multiply(hi, 1u, at + 32u + 4u * k);
    }
}

// The 4 words of 16 bytes at byte address `at` (2-byte aligned): the aligned words around them,
// realigned by 16 bits where `at` is not 4-byte aligned.
void load16(uint at, out uint words[4]) {
    uint i = at >> 2;
    bool odd = (at & 2u) != 0u;
    uint w0 = w_words[i], w1 = w_words[i + 1u], w2 = w_words[i + 2u], w3 = w_words[i + 3u], w4 = w_words[i + 4u];
    words[0] = odd ? (w0 >> 16) | (w1 << 16) : w0;
    words[1] = odd ? (w1 >> 16) | (w2 << 16) : w1;
    words[2] = odd ? (w2 >> 16) | (w3 << 16) : w2;
    words[3] = odd ? (w3 >> 16) | (w4 << 16) : w3;
}

// q6_k unit u: half h and values l0..l0+15 (l0 = 0 or 16) of each quarter of block u / 4.
void q6_k_unit(uint u) {
    uint b = u >> 2, h = (u >> 1) & 1u, l0 = (u & 1u) * 16u;
    uint ql0[ROWS_W * 4], ql1[ROWS_W * 4], qh[ROWS_W * 4];
    [[unroll]] for (uint j = 0u; j < ROWS_W; ++j) {
        uint blk = row_at[j] + 210u * b;
        uint words[4];
        load16(blk + 64u * h + l0, words);  // ql[l]: quarters 0 (low nibbles) and 2 (high)
        [[unroll]] for (uint k = 0u; k < 4u; ++k) ql0[4u * j + k] = words[k];
        load16(blk + 64u * h + 32u + l0, words);  // ql[l + 32]: quarters 1 and 3
        [[unroll]] for (uint k = 0u; k < 4u; ++k) ql1[4u * j + k] = words[k];
        load16(blk + 128u + 32u * h + l0, words);  // qh[l]: 2 high bits of each quarter
        [[unroll]] for (uint k = 0u; k < 4u; ++k) qh[4u * j + k] = words[k];
        // The int8 scales 8h + l0/16 + {0, 2, 4, 6}, and d.
        uint scales_at = blk + 192u + 8u * h, i = scales_at >> 2;
        bool odd = (scales_at & 2u) != 0u;
        uint s0 = w_words[i], s1 = w_words[i + 1u], s2 = w_words[i + 2u];
        uint lo = odd ? (s0 >> 16) | (s1 << 16) : s0, hi = odd ? (s1 >> 16) | (s2 << 16) : s1;
        int bit = int(l0 >> 1);  // byte l0/16
        uint dw = w_words[(blk + 208u) >> 2];
        float d = half_exact(odd ? dw >> 16 : dw);
        scale[j * 4u + 0u] = d * float(bitfieldExtract(int(lo), bit, 8));
        scale[j * 4u + 1u] = d * float(bitfieldExtract(int(lo), bit + 16, 8));
        scale[j * 4u + 2u] = d * float(bitfieldExtract(int(hi), bit, 8));
        scale[j * 4u + 3u] = d * float(bitfieldExtract(int(hi), bit + 16, 8));
        [[unroll]] for (uint g = 0u; g < 4u; ++g) offset[j * 4u + g] = 32.0 * scale[j * 4u + g];  // codes are q − 32
    }
    uint at = 256u * b + 128u * h + l0;
    [[unroll]] for (uint k = 0u; k < 4u; ++k) {  // values l0 + 4k .. l0 + 4k + 3 of each quarter
        [[unroll]] for (uint g = 0u; g < 4u; ++g) {
            vec4 codes[ROWS_W];
            [[unroll]] for (uint j = 0u; j < ROWS_W; ++j) {
                uint a = ql0[4u * j + k], c = ql1[4u * j + k], e = qh[4u * j + k];
                // Bytes of 6-bit codes: 4 low bits from ql, bits 4-5 from qh (bits 6-7 are
                // don't-care: code_at masks them off).
                uint word = g == 0u ? (a & 0x0F0F0F0Fu) | ((e << 4) & 0xF0F0F0F0u)
                          : g == 1u ? (c & 0x0F0F0F0Fu) | ((e << 2) & 0xF0F0F0F0u)
                          : g == 2u ? ((a >> 4) & 0x0F0F0F0Fu) | (e & 0xF0F0F0F0u)
                                    : ((c >> 4) & 0x0F0F0F0Fu) | ((e >> 2) & 0xF0F0F0F0u);
                codes[j] = weights(vec4(code_at(word, 0u, 63u), code_at(word, 8u, 63u), code_at(word, 16u, 63u),
                                        code_at(word >> 8, 16u, 63u)), j, g);
            }
            multiply(codes, g, at + 32u * g + 4u * k);
        }
    }
}

// The f16 scale (as an exact f32) and the first `count` (4 or 8) words of codes of the q8_0 / q4_0
// block at byte `blk`, which is only 2-byte aligned: words i..i+count from i = blk / 4 hold all of
// it (and nothing past its last word). Where blk is a multiple of 4 the codes start 2 bytes into
// word i and are realigned by 16 bits; else d is word i's upper half and the codes start at i+1.
void load_small_block(uint blk, uint count, out float d, out uint codes[8]) {
    uint i = blk >> 2;
    bool odd = (blk & 2u) != 0u;
    uint w[9];
    [[unroll]] for (uint k = 0u; k < 9u; ++k) w[k] = k <= count ? w_words[i + k] : 0u;
    d = half_exact(odd ? w[0] >> 16 : w[0]);
    [[unroll]] for (uint k = 0u; k < 8u; ++k) codes[k] = odd ? w[k + 1u] : (w[k] >> 16) | (w[k + 1u] << 16);
}

// q8_0 unit u: block u (34 bytes: f16 d, 32 int8 codes), value = q·d.
void q8_0_unit(uint u) {
    uint q[ROWS_W * 8];
    [[unroll]] for (uint j = 0u; j < ROWS_W; ++j) {
        uint codes[8];
        load_small_block(row_at[j] + 34u * u, 8u, scale[j], codes);
        [[unroll]] for (uint k = 0u; k < 8u; ++k) q[8u * j + k] = codes[k] ^ 0x80808080u;  // q + 128: unsigned
    }
    uint at = 32u * u;
    [[unroll]] for (uint k = 0u; k < 8u; ++k) {  // word k: values 4k..4k+3
        vec4 values[ROWS_W];
        [[unroll]] for (uint j = 0u; j < ROWS_W; ++j)
            values[j] = weights(byte_codes(q[8u * j + k], 255u, 128.0), j, 0u);
        multiply(values, 0u, at + 4u * k);
    }
}

// q4_0 unit u: block u (18 bytes: f16 d, 16 bytes of nibbles), value i = (q − 8)·d with q the low
// nibble of qs[i] for i < 16, the high nibble of qs[i − 16] above.
void q4_0_unit(uint u) {
    uint q[ROWS_W * 4];
    [[unroll]] for (uint j = 0u; j < ROWS_W; ++j) {
        uint codes[8];
        load_small_block(row_at[j] + 18u * u, 4u, scale[j], codes);
        [[unroll]] for (uint k = 0u; k < 4u; ++k) q[4u * j + k] = codes[k];
    }
    uint at = 32u * u;
    [[unroll]] for (uint k = 0u; k < 4u; ++k) {  // word k: values 4k..4k+3 (low) and 16+4k.. (high)
        vec4 low[ROWS_W], high[ROWS_W];
        [[unroll]] for (uint j = 0u; j < ROWS_W; ++j) {
            uint word = q[4u * j + k];
            low[j] = weights(byte_codes(word, 15u, 8.0), j, 0u);
            high[j] = weights(byte_codes(word >> 4, 15u, 8.0), j, 0u);
        }
        multiply(low, 0u, at + 4u * k);
        multiply(high, 0u, at + 16u + 4u * k);
    }
}

#ifdef RAYO_SUBGROUPS
shared float partial[SUBGROUP_SLOTS * RM];
#else
shared float partial[WG];
#endif

void main() {
    uint lane = gl_LocalInvocationID.x;
    uint row0 = gl_WorkGroupID.x * ROWS_W;
    // Rows past n repeat the last one (uniform control flow for the reduction) and are not written.
    [[unroll]] for (uint j = 0u; j < ROWS_W; ++j)
        row_at[j] = params.w_offset + min(row0 + j, params.n - 1u) * params.row_bytes;
    [[unroll]] for (uint i = 0u; i < RM; ++i) acc[i] = 0.0;
    uint units = params.blocks * UNITS_PER_BLOCK;
    for (uint u = lane; u < units; u += WG) {
        begin_unit();
        if (TYPE == RAYO_DTYPE_Q4_K)
            q4_k_unit(u);
        else if (TYPE == RAYO_DTYPE_Q5_K)
            q5_k_unit(u);
        else if (TYPE == RAYO_DTYPE_Q6_K)
            q6_k_unit(u);
        else if (TYPE == RAYO_DTYPE_Q8_0)
            q8_0_unit(u);
        else
            q4_0_unit(u);
        end_unit();
    }

#ifdef RAYO_SUBGROUPS
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        float s = subgroupAdd(acc[i]);
        if (subgroupElect() && gl_SubgroupID < SUBGROUP_SLOTS) partial[gl_SubgroupID * RM + i] = s;
    }
    barrier();
    if (lane < RM) {
        float s = 0.0;
        for (uint g = 0u; g < min(gl_NumSubgroups, SUBGROUP_SLOTS); ++g) s += partial[g * RM + lane];
        uint j = lane / ROWS_X, r = lane % ROWS_X;
        if (row0 + j < params.n) y[params.out_offset + r * params.n + row0 + j] = s + bias_of(row0 + j);
    }
#else
    [[unroll]] for (uint i = 0u; i < RM; ++i) {
        partial[lane] = acc[i];
        barrier();
        for (uint s = WG / 2u; s > 0u; s >>= 1) {
            if (lane < s) partial[lane] += partial[lane + s];
            barrier();
        }
        uint j = i / ROWS_X, r = i % ROWS_X;
        if (lane == 0u && row0 + j < params.n)
            y[params.out_offset + r * params.n + row0 + j] = partial[0] + bias_of(row0 + j);
        barrier();
    }
#endif
}
