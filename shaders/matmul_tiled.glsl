// The shared-memory tiled, register-blocked GEMM of matmul.comp and matmul_storage16.comp:
// out[m, n] = a[m, k] · op(b), op(b) = b[k, n] or b[n, k]ᵀ (B_TRANSPOSED), f32 accumulation.
// A workgroup of 16x16 invocations computes a 64x64 tile of out, each invocation a 4x4 block
// (rows ty + 16i, columns tx + 16j: conflict-free shared reads, coalesced stores). Per step of
// 16 along k the workgroup stages a 64x16 tile of a and a 16x64 tile of op(b) in shared memory,
// converted to f32 there; out-of-range elements are staged as 0, so any m, n, k works.
//
// Operand types (A_TYPE, B_TYPE, RAYO_DTYPE_* of op_codes.glsl): f32, f16, bf16; B_TYPE also q4_k, q5_k, q6_k,
// q8_0, q4_0 (weights
// [n rows of k values], B_TRANSPOSED): the weight tile is dequantized into shared memory once
// per workgroup and serves its 64 rows of a. Buffers are bound as uint words (f16/bf16 packed
// two to a word); with RAYO_STORAGE16 defined, f16 operands are read through 16-bit storage.
#extension GL_GOOGLE_include_directive : require
#include "op_codes.glsl"
#ifdef RAYO_STORAGE16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

layout(local_size_x = 16, local_size_y = 16) in;
layout(constant_id = 0) const uint A_TYPE = RAYO_DTYPE_F32;
layout(constant_id = 2) const uint B_TYPE = RAYO_DTYPE_F32;
layout(constant_id = 3) const bool B_TRANSPOSED = false;

const uint TILE_M = 64u, TILE_N = 64u, TILE_K = 16u;

layout(std430, set = 0, binding = 0) readonly buffer A { uint a_words[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { uint b_words[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Output { float y[]; };
#ifdef RAYO_STORAGE16
layout(std430, set = 0, binding = 0) readonly buffer A16 { float16_t a_halves[]; };
layout(std430, set = 0, binding = 1) readonly buffer B16 { float16_t b_halves[]; };
#endif

layout(push_constant) uniform Params {
    uint m, n, k;
    uint a_offset;    // elements
    uint b_offset;    // elements; bytes for block-quantized weights
    uint out_offset;  // floats
    uint b_row_bytes;  // block-quantized weights: bytes per weight row
    uint a_batch, b_batch, out_batch;  // elements between the products of a batch (matmul_batch.glsl)
    uint bias_offset, has_bias;        // the bias (binding 3, f32 [n]) added to every row, when has_bias
} params;
#include "matmul_batch.glsl"

#define QUANT_WORDS b_words
#include "quant_blocks.glsl"

// Element e of a 16-bit array packed two to a word: f16 (type 1) or bf16 (type 2).
float packed16(uint word, uint e, uint type) {
    uint bits = (word >> ((e & 1u) * 16u)) & 0xFFFFu;
    return type == RAYO_DTYPE_F16 ? unpackHalf2x16(bits).x : uintBitsToFloat(bits << 16);
}

float load_a(uint e) {
    if (A_TYPE == RAYO_DTYPE_F32) return uintBitsToFloat(a_words[e]);
#ifdef RAYO_STORAGE16
    if (A_TYPE == RAYO_DTYPE_F16) return float(a_halves[e]);
#endif
    return packed16(a_words[e >> 1], e, A_TYPE);
}

float load_b(uint e) {
    if (B_TYPE == RAYO_DTYPE_F32) return uintBitsToFloat(b_words[e]);
#ifdef RAYO_STORAGE16
    if (B_TYPE == RAYO_DTYPE_F16) return float(b_halves[e]);
#endif
    return packed16(b_words[e >> 1], e, B_TYPE);
}

// op(b)[p, j]: the element of row p (along k), column j (along n).
float load_op_b(uint p, uint j) {
    if (quant_is_block_type(B_TYPE)) return quant_row_value(B_TYPE, b_base() + j * params.b_row_bytes, p);
    return load_b(b_base() + (B_TRANSPOSED ? j * params.k + p : p * params.n + j));
}

shared float tile_a[TILE_K][TILE_M + 1];
shared float tile_b[TILE_K][TILE_N + 1];

void main() {
    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    uint t = ty * 16u + tx;
    uint row0 = gl_WorkGroupID.y * TILE_M, col0 = gl_WorkGroupID.x * TILE_N;
    float acc[4][4];
    for (uint i = 0u; i < 4u; ++i)
        for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;

    for (uint k0 = 0u; k0 < params.k; k0 += TILE_K) {
        // 1024 elements of each tile, 4 per invocation; consecutive invocations take consecutive
        // addresses of the operand as stored (along k for a and bᵀ, along n for b).
        for (uint s = 0u; s < 4u; ++s) {
            uint idx = t + 256u * s;
            uint r = idx / TILE_K, c = idx % TILE_K;
            uint row = row0 + r, p = k0 + c;
            tile_a[c][r] = row < params.m && p < params.k ? load_a(a_base() + row * params.k + p) : 0.0;
            uint bp, bj;
            if (B_TRANSPOSED) {
                bp = idx % TILE_K;
                bj = idx / TILE_K;
            } else {
                bp = idx / TILE_N;
                bj = idx % TILE_N;
            }
            uint gp = k0 + bp, gj = col0 + bj;
            tile_b[bp][bj] = gp < params.k && gj < params.n ? load_op_b(gp, gj) : 0.0;
        }
        barrier();
        for (uint kk = 0u; kk < TILE_K; ++kk) {
            float av[4], bv[4];
            for (uint i = 0u; i < 4u; ++i) av[i] = tile_a[kk][ty + 16u * i];
            for (uint j = 0u; j < 4u; ++j) bv[j] = tile_b[kk][tx + 16u * j];
            for (uint i = 0u; i < 4u; ++i)
                for (uint j = 0u; j < 4u; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
        }
        barrier();
    }
    for (uint i = 0u; i < 4u; ++i) {
        uint row = row0 + ty + 16u * i;
        if (row >= params.m) continue;
        for (uint j = 0u; j < 4u; ++j) {
            uint col = col0 + tx + 16u * j;
            if (col < params.n) y[out_base() + row * params.n + col] = acc[i][j] + bias_at(col);
        }
    }
}
