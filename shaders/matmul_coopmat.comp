#version 450
// f16 x f16 -> f32 GEMM on cooperative matrices (tensor cores), chosen only where the device lists
// a 16x8x16 f16·f16 + f32 subgroup-scope shape and a subgroup of 32, with shaderFloat16 and
// vulkanMemoryModel (glslang declares that model for it). Written for VK_NV_cooperative_matrix,
// which Debian's glslc compiles; where the device has VK_KHR_cooperative_matrix the backend
// rewrites the SPIR-V for it (src/vulkan/spirv_cooperative_matrix.hpp: a fragments 16x16, b 16x8,
// the accumulator 16x8, as listed there). out[m, n] = a[m, k] · b[k, n], b f16, a f16 or (A_F32) f32
// rounded to f16 as it is staged (as the CUDA backend's tensor-core GEMM does), b as stored or
// (B_TRANSPOSED) stored [n, k]: matmul of f16 operands and linear(x, w) with f32 x and f16 w, any
// m, n, k.
//
// A workgroup of 4 subgroups computes a 128x128 tile of out, each subgroup a 64x64 quarter of it
// as 4 x 8 accumulator fragments of 16x8. Per step of 32 along k the workgroup stages a 128x32 tile
// of a and a 32x128 tile of b in shared memory (double-buffered: one barrier a step), the next
// step's tiles being loaded from global memory into registers while this one's are multiplied;
// with VEC8 those loads are 16 bytes (8 halves, or two of 4 floats) each, else elements one by
// one. A transposed b is staged as it is stored, [128][32], and its fragments loaded column-major.
// Shared rows are padded (80 and 272 bytes) so that the fragment loads' rows fall in different
// banks. Fragments inside out are stored straight to it; those across its edge go through a
// per-subgroup scratch so that only their valid part is written.
//
// The tile, the split into subgroups and the step depth are the fastest on NVIDIA's driver, and
// the KHR rewrite is taken wherever it can be, because with the NV types that driver transposes
// every b fragment again before each product (figures: docs/backends/vulkan.md).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require  // glslang emits the Vulkan memory model for it anyway
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_GOOGLE_include_directive : require

// Every loop bound is a compile-time constant: NVIDIA's compiler leaves loops over specialization-
// constant bounds rolled, with the accumulators in local memory.
const uint TILE_M = 128u, TILE_N = 128u, TILE_K = 32u;
const uint WARP_COLS = 64u;  // each subgroup: 64 rows, WARP_COLS columns of out
const uint SUBGROUPS = (TILE_M / 64u) * (TILE_N / WARP_COLS);
const uint THREADS = 32u * SUBGROUPS;
layout(local_size_x = 128) in;
const uint FRAG_N = 8u;  // b and accumulator fragments 16x8: one HMMA.16816 a product
// 8-half runs per invocation and step: of the a tile (RUNS_A a row), of the b tile (RUNS_B a row).
const uint LOADS_A = TILE_M * TILE_K / 8u / THREADS;
const uint LOADS_B = TILE_K * TILE_N / 8u / THREADS;
const uint RUNS_A = TILE_K / 8u;
const uint RUNS_B = TILE_N / 8u;
// 16-byte loads: the offsets of a and b and the row lengths of both (k, and n or k) are multiples of
// 8 elements (a's offset of 4 where a is f32), so that every run of 8 starts 16-byte aligned and
// lies wholly inside or outside the matrix.
layout(constant_id = 5) const bool VEC8 = false;
layout(constant_id = 6) const bool A_F32 = false;
layout(constant_id = 7) const bool B_TRANSPOSED = false;

const uint FRAGS_M = 4u;             // 64 rows of a subgroup
const uint FRAGS_N = WARP_COLS / FRAG_N;
const uint A_STRIDE = TILE_K + 8u;   // halves: the a tile row-major [TILE_M][A_STRIDE]
const uint B_STRIDE = TILE_N + 8u;   // halves: the b tile row-major [TILE_K][B_STRIDE]
// Shared tiles hold runs of 8 halves as uvec4s (cooperative-matrix loads take offsets and strides
// in units of the array's element: 16 bytes here).
const uint A_TILE = TILE_M * A_STRIDE / 8u;
// b's tile either way: [TILE_K][B_STRIDE], or transposed [TILE_N][A_STRIDE] (the larger).
const uint B_TILE = max(TILE_K * B_STRIDE, TILE_N * A_STRIDE) / 8u;

layout(std430, set = 0, binding = 0) readonly buffer A { uint a_words[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { uint b_words[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Output { float y[]; };
layout(std430, set = 0, binding = 0) readonly buffer A8 { uvec4 a8[]; };
layout(std430, set = 0, binding = 1) readonly buffer B8 { uvec4 b8[]; };
layout(std430, set = 0, binding = 0) readonly buffer AF { float a_floats[]; };  // A_F32
layout(std430, set = 0, binding = 0) readonly buffer AF4 { vec4 a_vec4[]; };

layout(push_constant) uniform Params {
    uint m, n, k;
    uint a_offset;    // elements
    uint b_offset;    // elements
    uint out_offset;  // floats
    uint b_row_bytes;  // unused here
    uint a_batch, b_batch, out_batch;  // elements between the products of a batch (matmul_batch.glsl)
    uint bias_offset, has_bias;        // the bias (binding 3, f32 [n]) added to every row, when has_bias
} params;
#include "matmul_batch.glsl"

shared uvec4 tile_a[2][A_TILE];
shared uvec4 tile_b[2][B_TILE];
shared float scratch[SUBGROUPS][16 * FRAG_N];  // edge fragments, one per subgroup

// 8 halves of a row-major matrix with `cols` columns at (row, col), zeros where outside [rows, cols].
uvec4 load8(bool is_a, uint offset, uint row, uint col, uint rows, uint cols) {
    if (row >= rows || col >= cols) return uvec4(0u);
    uint e = offset + row * cols + col;
    if (VEC8) return is_a ? a8[e / 8u] : b8[e / 8u];
    uint h[8];
    [[unroll]] for (uint i = 0u; i < 8u; ++i) {
        uint ei = e + i;
        uint word = col + i < cols ? (is_a ? a_words[ei >> 1] : b_words[ei >> 1]) : 0u;
        h[i] = col + i < cols ? (word >> ((ei & 1u) * 16u)) & 0xFFFFu : 0u;
    }
    return uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}

// A run of 8 elements of a as loaded: halves in lo, or (A_F32) the bits of 8 floats in lo and hi,
// rounded to f16 only as they are stored to shared memory (a_halves), so that the loads' latency
// stays hidden behind the step's products (rounding right after the load makes them wait for it).
struct RunA {
    uvec4 lo, hi;
};

RunA load_a(uint row, uint col) {
    RunA r;
    r.hi = uvec4(0u);
    if (!A_F32) {
        r.lo = load8(true, a_base(), row, col, params.m, params.k);
        return r;
    }
    r.lo = uvec4(0u);
    if (row >= params.m || col >= params.k) return r;
    uint e = a_base() + row * params.k + col;
    if (VEC8) {
        r.lo = floatBitsToUint(a_vec4[e / 4u]);
        r.hi = floatBitsToUint(a_vec4[e / 4u + 1u]);
        return r;
    }
    uint f[8];
    [[unroll]] for (uint i = 0u; i < 8u; ++i) f[i] = col + i < params.k ? floatBitsToUint(a_floats[e + i]) : 0u;
    r.lo = uvec4(f[0], f[1], f[2], f[3]);
    r.hi = uvec4(f[4], f[5], f[6], f[7]);
    return r;
}

uvec4 a_halves(RunA r) {
    if (!A_F32) return r.lo;
    vec4 lo = uintBitsToFloat(r.lo), hi = uintBitsToFloat(r.hi);
    return uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy), packHalf2x16(hi.zw));
}

// A workgroup whose tiles lie wholly inside a and b (and k a multiple of TILE_K), with f16 a, b as
// stored and 16-byte loads, skips the bounds checks: each invocation's runs are then its first
// run's uvec4 index plus constants and k0's. That removes most of the address arithmetic that
// otherwise stands before the step's first product (docs/backends/vulkan.md).
struct InteriorLoads {
    bool on;
    uint a_index, b_index;  // uvec4 indices of this invocation's first runs at k0 = 0
};

InteriorLoads interior_loads(uint t, uint row0, uint col0) {
    InteriorLoads l;
    l.on = VEC8 && !A_F32 && !B_TRANSPOSED && row0 + TILE_M <= params.m && col0 + TILE_N <= params.n &&
           params.k % TILE_K == 0u;
    l.a_index = (a_base() + (row0 + t / RUNS_A) * params.k + (t % RUNS_A) * 8u) / 8u;
    l.b_index = (b_base() + (t / RUNS_B) * params.n + col0 + (t % RUNS_B) * 8u) / 8u;
    return l;
}

// The 8-element runs this invocation loads of each tile for the step at k0: of a row of a's tile
// (RUNS_A runs a row), of a row of b's (RUNS_B runs a row; transposed, RUNS_A runs of a row of b's
// [n, k]).
void load_step(uint k0, uint t, uint row0, uint col0, InteriorLoads interior, out RunA ra[LOADS_A],
               out uvec4 rb[LOADS_B]) {
    if (interior.on) {
        [[unroll]] for (uint s = 0u; s < LOADS_A; ++s) {
            ra[s].lo = a8[interior.a_index + s * (THREADS / RUNS_A) * (params.k / 8u) + k0 / 8u];
            ra[s].hi = uvec4(0u);
        }
        [[unroll]] for (uint s = 0u; s < LOADS_B; ++s)
            rb[s] = b8[interior.b_index + (k0 + s * (THREADS / RUNS_B)) * (params.n / 8u)];
        return;
    }
    [[unroll]] for (uint s = 0u; s < LOADS_A; ++s) {
        uint idx = t + THREADS * s;
        ra[s] = load_a(row0 + idx / RUNS_A, k0 + (idx % RUNS_A) * 8u);
    }
    [[unroll]] for (uint s = 0u; s < LOADS_B; ++s) {
        uint idx = t + THREADS * s;
        rb[s] = B_TRANSPOSED
                    ? load8(false, b_base(), col0 + idx / RUNS_A, k0 + (idx % RUNS_A) * 8u, params.n, params.k)
                    : load8(false, b_base(), k0 + idx / RUNS_B, col0 + (idx % RUNS_B) * 8u, params.k, params.n);
    }
}

void store_step(uint buf, uint t, RunA ra[LOADS_A], uvec4 rb[LOADS_B]) {
    [[unroll]] for (uint s = 0u; s < LOADS_A; ++s) {
        uint idx = t + THREADS * s;
        tile_a[buf][(idx / RUNS_A) * (A_STRIDE / 8u) + idx % RUNS_A] = a_halves(ra[s]);
    }
    [[unroll]] for (uint s = 0u; s < LOADS_B; ++s) {
        uint idx = t + THREADS * s;
        uint at = B_TRANSPOSED ? (idx / RUNS_A) * (A_STRIDE / 8u) + idx % RUNS_A
                               : (idx / RUNS_B) * (B_STRIDE / 8u) + idx % RUNS_B;
        tile_b[buf][at] = rb[s];
    }
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint sg = t / 32u;  // subgroup (the device's subgroup size is 32, checked on the host)
    uint lane = t % 32u;
    uint sub_row = (sg / (TILE_N / WARP_COLS)) * 64u, sub_col = (sg % (TILE_N / WARP_COLS)) * WARP_COLS;
    uint row0 = gl_WorkGroupID.y * TILE_M, col0 = gl_WorkGroupID.x * TILE_N;

    fcoopmatNV<32, gl_ScopeSubgroup, 16, FRAG_N> acc[FRAGS_M][FRAGS_N];
    [[unroll]] for (uint i = 0u; i < FRAGS_M; ++i)
        [[unroll]] for (uint j = 0u; j < FRAGS_N; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, FRAG_N>(0.0);

    InteriorLoads interior = interior_loads(t, row0, col0);
    RunA ra[LOADS_A];
    uvec4 rb[LOADS_B];
    load_step(0u, t, row0, col0, interior, ra, rb);
    uint buf = 0u;
    for (uint k0 = 0u; k0 < params.k; k0 += TILE_K) {
        store_step(buf, t, ra, rb);
        barrier();
        if (k0 + TILE_K < params.k) load_step(k0 + TILE_K, t, row0, col0, interior, ra, rb);
        [[unroll]] for (uint kk = 0u; kk < TILE_K; kk += 16u) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[FRAGS_M];
            fcoopmatNV<16, gl_ScopeSubgroup, 16, FRAG_N> fb[FRAGS_N];
            [[unroll]] for (uint i = 0u; i < FRAGS_M; ++i)
                coopMatLoadNV(fa[i], tile_a[buf], ((sub_row + 16u * i) * A_STRIDE + kk) / 8u, A_STRIDE / 8u, false);
            [[unroll]] for (uint j = 0u; j < FRAGS_N; ++j) {
                if (B_TRANSPOSED)  // element (k, n) at [n][k]: column-major
                    coopMatLoadNV(fb[j], tile_b[buf], ((sub_col + FRAG_N * j) * A_STRIDE + kk) / 8u, A_STRIDE / 8u,
                                  true);
                else
                    coopMatLoadNV(fb[j], tile_b[buf], (kk * B_STRIDE + sub_col + FRAG_N * j) / 8u, B_STRIDE / 8u,
                                  false);
            }
            [[unroll]] for (uint i = 0u; i < FRAGS_M; ++i)
                [[unroll]] for (uint j = 0u; j < FRAGS_N; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
        }
        buf ^= 1u;
    }

    [[unroll]] for (uint i = 0u; i < FRAGS_M; ++i)
        [[unroll]] for (uint j = 0u; j < FRAGS_N; ++j) {
            uint r = row0 + sub_row + 16u * i, c = col0 + sub_col + FRAG_N * j;
            if (r >= params.m || c >= params.n) continue;  // uniform over the subgroup
            if (params.has_bias == 0u && r + 16u <= params.m && c + FRAG_N <= params.n) {
                coopMatStoreNV(acc[i][j], y, out_base() + r * params.n + c, params.n, false);
                continue;
            }
            coopMatStoreNV(acc[i][j], scratch[sg], 0u, FRAG_N, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < 16u * FRAG_N; e += 32u) {
                uint rr = r + e / FRAG_N, cc = c + e % FRAG_N;
                if (rr < params.m && cc < params.n) y[out_base() + rr * params.n + cc] = scratch[sg][e] + bias_at(cc);
            }
            subgroupBarrier();
        }
}
