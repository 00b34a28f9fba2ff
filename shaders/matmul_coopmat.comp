#version 450
// f16 x f16 -> f32 GEMM on VK_NV_cooperative_matrix (tensor cores), chosen only where the device
// reports a 16x16x16 or 16x8x16 (FRAG_N = 16 or 8) f16·f16 + f32 subgroup-scope shape and a
// subgroup of 32, with shaderFloat16 and vulkanMemoryModel (glslang declares that model for it). out[m, n] = a[m, k] · op(b) as in matmul_tiled.glsl; both operands f16.
// A workgroup of 4 subgroups computes a 64x64 tile; each subgroup a 32x32 quarter of it as 2 x
// (32/FRAG_N) accumulator fragments. Per step of 16 along k, the workgroup stages a 64x16 tile
// of a and a 16x64 tile of op(b) in shared memory as f16, zero-padded at the edges (any m, n, k),
// and the subgroups load their fragments from there. Accumulators go out through shared memory
// so that edge tiles store only their valid part.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require  // glslang emits the Vulkan memory model for it anyway
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

layout(local_size_x = 128) in;
layout(constant_id = 3) const bool B_TRANSPOSED = false;
layout(constant_id = 4) const uint FRAG_N = 16;

const uint TILE_M = 64u, TILE_N = 64u, TILE_K = 16u;
const uint FRAGS_N = 32u / FRAG_N;

layout(std430, set = 0, binding = 0) readonly buffer A { uint a_words[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { uint b_words[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Params {
    uint m, n, k;
    uint a_offset;    // elements
    uint b_offset;    // elements
    uint out_offset;  // floats
    uint b_row_bytes;  // unused here
} params;

shared float16_t tile_a[TILE_M * TILE_K];  // row-major, stride TILE_K
shared float16_t tile_b[TILE_K * TILE_N];  // row-major (k rows), stride TILE_N
shared float tile_out[TILE_M * TILE_N];

float16_t half_at(uint word, uint e) {
    return float16_t(unpackHalf2x16((word >> ((e & 1u) * 16u)) & 0xFFFFu).x);
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint sg = t / 32u;  // subgroup index (the device's subgroup size is 32, checked on the host)
    uint sub_row = (sg >> 1) * 32u, sub_col = (sg & 1u) * 32u;
    uint row0 = gl_WorkGroupID.y * TILE_M, col0 = gl_WorkGroupID.x * TILE_N;

    fcoopmatNV<32, gl_ScopeSubgroup, 16, FRAG_N> acc[2][FRAGS_N];
    for (uint i = 0u; i < 2u; ++i)
        for (uint j = 0u; j < FRAGS_N; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, FRAG_N>(0.0);

    for (uint k0 = 0u; k0 < params.k; k0 += TILE_K) {
        for (uint s = 0u; s < 8u; ++s) {  // 1024 elements of each tile, 8 per invocation
            uint idx = t + 128u * s;
            uint r = idx / TILE_K, c = idx % TILE_K;
            uint row = row0 + r, p = k0 + c;
            uint e = params.a_offset + row * params.k + p;
            tile_a[r * TILE_K + c] = row < params.m && p < params.k ? half_at(a_words[e >> 1], e) : float16_t(0.0);
            uint bp, bj;
            if (B_TRANSPOSED) {
                bp = idx % TILE_K;
                bj = idx / TILE_K;
            } else {
                bp = idx / TILE_N;
                bj = idx % TILE_N;
            }
            uint gp = k0 + bp, gj = col0 + bj;
            uint eb = params.b_offset + (B_TRANSPOSED ? gj * params.k + gp : gp * params.n + gj);
            tile_b[bp * TILE_N + bj] = gp < params.k && gj < params.n ? half_at(b_words[eb >> 1], eb) : float16_t(0.0);
        }
        barrier();
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[2];
        fcoopmatNV<16, gl_ScopeSubgroup, 16, FRAG_N> fb[FRAGS_N];
        for (uint i = 0u; i < 2u; ++i)
            coopMatLoadNV(fa[i], tile_a, (sub_row + 16u * i) * TILE_K, TILE_K, false);
        for (uint j = 0u; j < FRAGS_N; ++j)
            coopMatLoadNV(fb[j], tile_b, sub_col + FRAG_N * j, TILE_N, false);
        for (uint i = 0u; i < 2u; ++i)
            for (uint j = 0u; j < FRAGS_N; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
        barrier();
    }
    for (uint i = 0u; i < 2u; ++i)
        for (uint j = 0u; j < FRAGS_N; ++j)
            coopMatStoreNV(acc[i][j], tile_out, (sub_row + 16u * i) * TILE_N + sub_col + FRAG_N * j, TILE_N, false);
    barrier();
    for (uint s = 0u; s < 32u; ++s) {
        uint idx = t + 128u * s;
        uint r = idx / TILE_N, c = idx % TILE_N;
        if (row0 + r < params.m && col0 + c < params.n)
            y[params.out_offset + (row0 + r) * params.n + col0 + c] = tile_out[idx];
    }
}
