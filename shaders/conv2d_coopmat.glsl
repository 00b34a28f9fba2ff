// The implicit-GEMM conv2d on cooperative matrices (tensor cores), f16 tensors: conv2d_gemm.glsl's
// tiles multiplied as matmul_coopmat.comp multiplies its own, each of the 4 subgroups a 64x64 part
// of the tile as 4 x 8 accumulator fragments of 16x8 (f32), a 16x16 weight fragment by a 16x8 image
// fragment a product. Written for VK_NV_cooperative_matrix; on a device with the KHR extension the
// backend rewrites the SPIR-V for it, as for the GEMM (spirv_cooperative_matrix.hpp: the fragment
// shapes are the GEMM's). The next step's tiles are loaded into registers while this step's are
// multiplied; one barrier a step. Each accumulator fragment goes out through a per-subgroup scratch
// so that its values reach NCHW memory with the bias added, rounded to f16 by the device's
// conversion (to nearest, Inf and NaN kept).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_GOOGLE_include_directive : require

#include "conv2d_gemm.glsl"

const uint SUBGROUP_COLS = TILE_N / 64u;  // subgroups side by side along the pixels
const uint FRAGS_M = 4u, FRAGS_N = 8u, FRAG_N = 8u;

shared float scratch[THREADS / 32u][16 * FRAG_N];  // one fragment per subgroup

void store_half(Frame f, uint column, uint row, float value) {
    if (column == NO_COLUMN || row >= p.og) return;
    ys[column + row * f.out_plane] = float16BitsToUint16(float16_t(value));
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint sg = t / 32u;  // subgroup (the device's subgroup size is 32, checked on the host)
    uint lane = t % 32u;
    uint sub_row = (sg / SUBGROUP_COLS) * 64u, sub_col = (sg % SUBGROUP_COLS) * 64u;
    Frame f = frame();
    build_tap_table(f, t);
    Gather g = gather_of(f, t);

    fcoopmatNV<32, gl_ScopeSubgroup, 16, FRAG_N> acc[FRAGS_M][FRAGS_N];
    [[unroll]] for (uint i = 0u; i < FRAGS_M; ++i)
        [[unroll]] for (uint j = 0u; j < FRAGS_N; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, FRAG_N>(0.0);

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
        [[unroll]] for (uint kk = 0u; kk < TILE_K; kk += 16u) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[FRAGS_M];
            fcoopmatNV<16, gl_ScopeSubgroup, 16, FRAG_N> fb[FRAGS_N];
            [[unroll]] for (uint i = 0u; i < FRAGS_M; ++i)
                coopMatLoadNV(fa[i], tile_a[buf], ((sub_row + 16u * i) * A_STRIDE + kk) / 8u, A_STRIDE / 8u, false);
            [[unroll]] for (uint j = 0u; j < FRAGS_N; ++j)
                coopMatLoadNV(fb[j], tile_b[buf], (kk * B_STRIDE + sub_col + FRAG_N * j) / 8u, B_STRIDE / 8u, false);
            [[unroll]] for (uint i = 0u; i < FRAGS_M; ++i)
                [[unroll]] for (uint j = 0u; j < FRAGS_N; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
        }
        buf ^= 1u;
    }

    // Lane l stores column l % 8 of rows l / 8, l / 8 + 4, ... of each fragment: its columns' places
    // in out found once, the bias of its rows once per row of fragments.
    uint row_in = lane / FRAG_N, col_in = lane % FRAG_N;
    uint columns[FRAGS_N];
    [[unroll]] for (uint j = 0u; j < FRAGS_N; ++j) columns[j] = column_at(f, f.col0 + sub_col + FRAG_N * j + col_in);
    const uint PER_LANE = 16u * FRAG_N / 32u;
    [[unroll]] for (uint i = 0u; i < FRAGS_M; ++i) {
        uint r = f.row0 + sub_row + 16u * i;
        if (r >= p.og) continue;  // uniform over the subgroup
        float bias[PER_LANE];
        [[unroll]] for (uint q = 0u; q < PER_LANE; ++q) bias[q] = bias_of(f, r + row_in + 4u * q);
        [[unroll]] for (uint j = 0u; j < FRAGS_N; ++j) {
            if (f.col0 + sub_col + FRAG_N * j >= p.pixels) continue;
            coopMatStoreNV(acc[i][j], scratch[sg], 0u, FRAG_N, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            [[unroll]] for (uint q = 0u; q < PER_LANE; ++q)
                store_half(f, columns[j], r + row_in + 4u * q, scratch[sg][lane + 32u * q] + bias[q]);
            subgroupBarrier();
        }
    }
}
