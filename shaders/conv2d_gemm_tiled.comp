#version 450
// conv2d as an implicit GEMM without cooperative matrices, for f16 / bf16 tensors on devices that
// lack them (and bf16, which they do not take): conv2d_gemm.glsl's tiles, 64x64 (under 20 KiB of
// shared memory, which CPU implementations such as lavapipe allow), each invocation a 4x8 block of
// the tile accumulated in f32 by scalar products from the staged elements.
#extension GL_GOOGLE_include_directive : require
#include "float_controls.glsl"
#define TILE_M 64u
#define TILE_N 64u
#include "conv2d_gemm.glsl"

const uint BLOCK_M = 4u, BLOCK_N = 8u;  // an invocation's block: rows, columns (one uvec4 of b)
const uint BLOCKS_N = TILE_N / BLOCK_N;

// Element k of row `row` of the weight tile, and the 8 elements of row k of the image tile from
// column col (a multiple of 8), widened to float.
float weight_at(uint buf, uint row, uint k) {
    uint word = tile_a[buf][(row * A_STRIDE + k) / 8u][(k % 8u) / 2u];
    return element_to_float((word >> ((k % 2u) * 16u)) & 0xffffu);
}

void image_at(uint buf, uint k, uint col, out float v[BLOCK_N]) {
    uvec4 run = tile_b[buf][(k * B_STRIDE + col) / 8u];
    [[unroll]] for (uint e = 0u; e < BLOCK_N; ++e) v[e] = element_to_float((run[e / 2u] >> ((e % 2u) * 16u)) & 0xffffu);
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint block_row = (t / BLOCKS_N) * BLOCK_M, block_col = (t % BLOCKS_N) * BLOCK_N;
    Frame f = frame();
    build_tap_table(f, t);
    Gather g = gather_of(f, t);

    float acc[BLOCK_M][BLOCK_N];
    [[unroll]] for (uint i = 0u; i < BLOCK_M; ++i)
        [[unroll]] for (uint j = 0u; j < BLOCK_N; ++j) acc[i][j] = 0.0;

    barrier();  // the tap table is written
    uvec4 runs[LOADS_A];
    uint values[ROWS];
    load_weights_step(f, t, 0u, runs);
    gather_step(f, g, 0u, values);
    uint buf = 0u;
    for (uint k0 = 0u; k0 < p.k; k0 += TILE_K) {
        store_weights(buf, t, runs);
        store_gathered(buf, g, values);
        barrier();
        if (k0 + TILE_K < p.k) {
            load_weights_step(f, t, k0 + TILE_K, runs);
            gather_step(f, g, k0 + TILE_K, values);
        }
        for (uint kk = 0u; kk < TILE_K; ++kk) {
            float b[BLOCK_N];
            image_at(buf, kk, block_col, b);
            [[unroll]] for (uint i = 0u; i < BLOCK_M; ++i) {
                float a = weight_at(buf, block_row + i, kk);
                [[unroll]] for (uint j = 0u; j < BLOCK_N; ++j) acc[i][j] += a * b[j];
            }
        }
        buf ^= 1u;
    }

    [[unroll]] for (uint j = 0u; j < BLOCK_N; ++j) {
        uint column = column_at(f, f.col0 + block_col + j);
        [[unroll]] for (uint i = 0u; i < BLOCK_M; ++i) store_output(f, column, f.row0 + block_row + i, acc[i][j]);
    }
}
