#version 450
// f32 x f32 -> f32 GEMM for large shapes, in the style of a register-blocked SGEMM:
// out[m, n] = a[m, k] · op(b), op(b) = b[k, n] or b[n, k]ᵀ (B_TRANSPOSED), f32 accumulation.
//
// A workgroup of 256 invocations (16 x 16: tx along n, ty along m) computes a TILE_M x TILE_N
// tile of out (128x128, 128x64, 64x128 or 64x64; specialization constants), each invocation a
// THREAD_M x THREAD_N = TILE_M/16 x TILE_N/16 block: rows g·64 + 4·ty + i and columns
// g·64 + 4·tx + j (g < 2, i, j < 4), so that every shared-memory read of the inner loop is a vec4
// (A's per 4 rows, op(b)'s per 4 columns) and the stores of 16 neighbouring invocations are 256
// contiguous bytes of a row.
//
// Per step of TILE_K (8 or 16) along k the workgroup stages a TILE_K x TILE_M tile of a,
// transposed (k-major), and a TILE_K x TILE_N tile of op(b) in shared memory. The tiles are
// double-buffered and the next step's global loads are issued into registers before the current
// step's products, so memory latency hides behind the FMAs and one barrier per step suffices:
// a step's stores go to the buffer no invocation reads in that step, and the barrier that ends
// the step both publishes them and retires every read of the other buffer.
//
// Global loads: each invocation fetches runs of 4 consecutive elements along the operand's
// contiguous axis (k for a and bᵀ, n for b); as one vec4 where VEC4_A / VEC4_B say the row stride
// and the view offset are multiples of 4 (the host checks), else as 4 guarded scalars. Elements
// outside m, n, k are staged as 0 and out is stored guarded (vec4 where VEC4_OUT), so any shape
// works. Shared rows are not padded (the 128x128x16 tiles fill exactly 32 KiB, the limit of some
// devices): the vec4 slot of a k-row is XOR-swizzled by k instead, which makes the transposing
// scalar stores of a and bᵀ conflict-free and leaves the vec4 reads a permutation of one row.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "float_controls.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TILE_M = 128;
layout(constant_id = 2) const uint TILE_N = 128;
layout(constant_id = 3) const bool B_TRANSPOSED = false;
layout(constant_id = 4) const uint TILE_K = 8;
layout(constant_id = 5) const bool VEC4_A = false;    // a_offset and k are multiples of 4
layout(constant_id = 6) const bool VEC4_B = false;    // b_offset and the row stride of b (n, or k if bᵀ) too
layout(constant_id = 7) const bool VEC4_OUT = false;  // out_offset and n too

const uint THREAD_M = TILE_M / 16u;     // 8 or 4 rows per invocation
const uint GROUPS_N = TILE_N / 64u;     // 2 or 1 vec4 of columns per invocation
const uint SLOTS_A = TILE_M / 4u;       // vec4 per k-row of the a tile
const uint SLOTS_B = TILE_N / 4u;
const uint RUNS_A = TILE_M * TILE_K / 4u;  // runs of 4 elements per tile
const uint RUNS_B = TILE_N * TILE_K / 4u;
const uint RUNS_PER_ROW = TILE_K / 4u;     // of a or bᵀ, along k
const uint MAX_RUNS = 2u;                  // per invocation: 128 x 16 / 4 / 256

layout(std430, set = 0, binding = 0) readonly buffer A1 { float a1[]; };
layout(std430, set = 0, binding = 0) readonly buffer A4 { vec4 a4[]; };
layout(std430, set = 0, binding = 1) readonly buffer B1 { float b1[]; };
layout(std430, set = 0, binding = 1) readonly buffer B4 { vec4 b4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out1 { float y1[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out4 { vec4 y4[]; };

// As matmul_tiled.glsl's (MatmulPush in src/vulkan/ops/matmul.cpp); b_row_bytes unused.
layout(push_constant) uniform Params {
    uint m, n, k;
    uint a_offset, b_offset, out_offset;  // elements
    uint b_row_bytes;
    uint a_batch, b_batch, out_batch;  // elements between the products of a batch (matmul_batch.glsl)
    uint bias_offset, has_bias;        // the bias (binding 3, f32 [n]) added to every row, when has_bias
} params;
#include "matmul_batch.glsl"

shared vec4 tile_a[2u * TILE_K * SLOTS_A];
shared vec4 tile_b[2u * TILE_K * SLOTS_B];

// The shared index of vec4 `slot` of k-row `kk` of buffer `buf`. The XOR spreads the 4 (or 2)
// k-rows one warp's transposing stores touch over distinct banks; it stays below 16 <= slots.
uint at(uint buf, uint kk, uint slot, uint slots) {
    return (buf * TILE_K + kk) * slots + (slot ^ ((kk / 4u) * (32u / TILE_K)));
}

// Elements [p, p + 4) of row `row` of a [rows, k] matrix (a, or b stored transposed); 0 outside.
vec4 load_a_run(uint row, uint p) {
    if (row >= params.m) return vec4(0.0);
    uint e = a_base() + row * params.k + p;
    if (VEC4_A) return p < params.k ? a4[e / 4u] : vec4(0.0);
    vec4 v;
    [[unroll]] for (uint c = 0u; c < 4u; ++c) v[c] = p + c < params.k ? a1[e + c] : 0.0;
    return v;
}

vec4 load_bt_run(uint row, uint p) {
    if (row >= params.n) return vec4(0.0);
    uint e = b_base() + row * params.k + p;
    if (VEC4_B) return p < params.k ? b4[e / 4u] : vec4(0.0);
    vec4 v;
    [[unroll]] for (uint c = 0u; c < 4u; ++c) v[c] = p + c < params.k ? b1[e + c] : 0.0;
    return v;
}

// Elements [j, j + 4) of row p of b[k, n]; 0 outside.
vec4 load_b_run(uint p, uint j) {
    if (p >= params.k) return vec4(0.0);
    uint e = b_base() + p * params.n + j;
    if (VEC4_B) return j < params.n ? b4[e / 4u] : vec4(0.0);
    vec4 v;
    [[unroll]] for (uint c = 0u; c < 4u; ++c) v[c] = j + c < params.n ? b1[e + c] : 0.0;
    return v;
}

vec4 stage_a[MAX_RUNS], stage_b[MAX_RUNS];

// Global loads of the k-tile at k0 into stage_a / stage_b. Runs along k (a, bᵀ): run r is
// elements [4·(r % RUNS_PER_ROW), +4) of tile row r / RUNS_PER_ROW; along n (b): run r is
// elements [4·(r % SLOTS_B), +4) of tile k-row r / SLOTS_B. Consecutive invocations take
// consecutive runs, so a warp reads whole 32-byte sectors.
void fetch(uint t, uint row0, uint col0, uint k0) {
    [[unroll]] for (uint s = 0u; s < MAX_RUNS; ++s) {
        uint r = t + 256u * s;
        if (r < RUNS_A) stage_a[s] = load_a_run(row0 + r / RUNS_PER_ROW, k0 + 4u * (r % RUNS_PER_ROW));
        if (r < RUNS_B)
            stage_b[s] = B_TRANSPOSED ? load_bt_run(col0 + r / RUNS_PER_ROW, k0 + 4u * (r % RUNS_PER_ROW))
                                      : load_b_run(k0 + r / SLOTS_B, col0 + 4u * (r % SLOTS_B));
    }
}

// stage_a / stage_b into shared buffer `buf`: a and bᵀ transposed (4 scalar stores per run),
// b as one vec4.
void stash(uint t, uint buf) {
    [[unroll]] for (uint s = 0u; s < MAX_RUNS; ++s) {
        uint r = t + 256u * s;
        if (r < RUNS_A) {
            uint row = r / RUNS_PER_ROW, kk = 4u * (r % RUNS_PER_ROW);
            [[unroll]] for (uint c = 0u; c < 4u; ++c)
                tile_a[at(buf, kk + c, row / 4u, SLOTS_A)][row % 4u] = stage_a[s][c];
        }
        if (r < RUNS_B) {
            if (B_TRANSPOSED) {
                uint col = r / RUNS_PER_ROW, kk = 4u * (r % RUNS_PER_ROW);
                [[unroll]] for (uint c = 0u; c < 4u; ++c)
                    tile_b[at(buf, kk + c, col / 4u, SLOTS_B)][col % 4u] = stage_b[s][c];
            } else {
                tile_b[at(buf, r / SLOTS_B, r % SLOTS_B, SLOTS_B)] = stage_b[s];
            }
        }
    }
}

// Columns [col, col + 4) of out's row `row`, those inside n.
void store_run(uint row, uint col, vec4 v) {
    uint e = out_base() + row * params.n + col;
    if (params.has_bias != 0u)
        [[unroll]] for (uint c = 0u; c < 4u; ++c) v[c] += col + c < params.n ? bias_at(col + c) : 0.0;
    if (VEC4_OUT) {
        if (col < params.n) y4[e / 4u] = v;
    } else {
        [[unroll]] for (uint c = 0u; c < 4u; ++c)
            if (col + c < params.n) y1[e + c] = v[c];
    }
}

void main() {
    uint t = gl_LocalInvocationIndex;
    uint tx = t % 16u, ty = t / 16u;
    uint row0 = gl_WorkGroupID.y * TILE_M, col0 = gl_WorkGroupID.x * TILE_N;

    // acc0[i] / acc1[i]: row i's columns of group 0 / 1 (THREAD_M rows; acc1 only for GROUPS_N 2).
    // Written out per group rather than as loops over spec-constant bounds, which NVIDIA's compiler
    // leaves rolled, with the accumulators in local memory (docs/backends/vulkan.md).
    vec4 acc0[8], acc1[8];
    [[unroll]] for (uint i = 0u; i < 8u; ++i) {
        acc0[i] = vec4(0.0);
        acc1[i] = vec4(0.0);
    }

    uint steps = (params.k + TILE_K - 1u) / TILE_K;
    if (steps > 0u) {
        fetch(t, row0, col0, 0u);
        stash(t, 0u);
        barrier();
    }
    for (uint step = 0u; step < steps; ++step) {
        uint buf = step & 1u;
        bool more = step + 1u < steps;
        if (more) fetch(t, row0, col0, (step + 1u) * TILE_K);
        [[unroll]] for (uint kk = 0u; kk < TILE_K; ++kk) {
            vec4 a0 = tile_a[at(buf, kk, ty, SLOTS_A)];
            vec4 a1 = THREAD_M == 8u ? tile_a[at(buf, kk, 16u + ty, SLOTS_A)] : vec4(0.0);
            vec4 b0 = tile_b[at(buf, kk, tx, SLOTS_B)];
            vec4 b1 = GROUPS_N == 2u ? tile_b[at(buf, kk, 16u + tx, SLOTS_B)] : vec4(0.0);
            [[unroll]] for (uint i = 0u; i < 4u; ++i) {
                acc0[i] = fma(vec4(a0[i]), b0, acc0[i]);
                if (GROUPS_N == 2u) acc1[i] = fma(vec4(a0[i]), b1, acc1[i]);
                if (THREAD_M == 8u) {
                    acc0[4u + i] = fma(vec4(a1[i]), b0, acc0[4u + i]);
                    if (GROUPS_N == 2u) acc1[4u + i] = fma(vec4(a1[i]), b1, acc1[4u + i]);
                }
            }
        }
        if (more) stash(t, buf ^ 1u);
        barrier();
    }

    [[unroll]] for (uint i = 0u; i < 8u; ++i) {
        if (i >= THREAD_M) break;
        uint row = row0 + 64u * (i / 4u) + 4u * ty + i % 4u;
        if (row >= params.m) continue;
        store_run(row, col0 + 4u * tx, acc0[i]);
        if (GROUPS_N == 2u) store_run(row, col0 + 64u + 4u * tx, acc1[i]);
    }
}
