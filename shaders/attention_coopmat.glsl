// attention over f16 tensors on cooperative matrices (tensor cores), flash style: the body of
// attention_coopmat_d<D>.comp, each of which defines HEAD_DIM (every loop bound is then a
// compile-time constant, so that NVIDIA's compiler unrolls them and keeps the fragments in registers).
//
// A workgroup of 4 subgroups takes 64 query rows of one (batch, head), 16 rows a subgroup, its q
// rows as 16x16 f16 fragments held for the whole pass and its output rows as 16x8 f32 accumulator
// fragments. The keys go by in blocks of 32, k and v staged in shared memory (the next block's loads
// in flight in registers while this one is used, for head_dim up to 128):
//   1. S = q·kᵀ on the tensor cores (f16 products, f32 sums), stored to the subgroup's shared rows;
//   2. the online softmax, two invocations a row (16 keys each, joined by a shuffle): scaled and
//      masked scores in base 2, the row's running maximum and sum, the weights P rounded to f16 into
//      shared memory and the factor α = 2^(old max − new max) broadcast along 8 columns of its row;
//   3. the output fragments scaled by α element by element (α read through an accumulator-shaped
//      load, so no assumption about which element of a fragment is which row), then O += P·v.
// At the end each row is divided by its sum (zeros for a row that saw no key, NaN for a row with a
// NaN score) and rounded to f16 on its way out through shared memory. Under CAUSAL the blocks past
// the workgroup's last visible key are skipped and the workgroups with the most keys start first.
// Needs 16-byte aligned rows: head_dim a multiple of 16 and every offset of 8 elements (checked on
// the host); the mask is f32. Written for VK_NV_cooperative_matrix with the matrix types of
// matmul_coopmat.comp (a 16x16, b 16x8 f16, accumulator 16x8 f32), so the backend's KHR rewrite
// applies unchanged.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x = 128) in;
layout(constant_id = 4) const bool HAS_MASK = false;
layout(constant_id = 5) const bool CAUSAL = false;
layout(constant_id = 6) const bool STORED_POSITION = false;  // query_offset read from Position

const uint D = HEAD_DIM;
const uint ROWS = 64u, SUBGROUPS = 4u, THREADS = 128u;
const uint BK = 32u;                        // keys a block
const uint DS = D + 8u;                     // halves: a shared row of q, k or v (padded against bank conflicts)
const uint SS = BK + 4u;                    // floats: a shared row of scores (padded: rows 4 banks apart)
const uint PS = D < 256u ? 40u : 32u;       // halves: a shared row of P (unpadded at 256, to fit 48 KiB)
const uint RUNS = D / 8u;                   // 16-byte runs a row
const uint LOADS = 2u * BK * RUNS / THREADS;  // runs of k and v an invocation loads a block
const bool PREFETCH = D <= 128u;            // the next block's runs held in registers
const uint FRAGS_D = D / 8u;                // output fragments (16x8) a subgroup
const uint STEPS_D = D / 16u;               // q fragments (16x16) a subgroup
const uint KV_RUNS = BK * DS / 8u;          // uvec4s of one staged block of k (or v)

layout(std430, set = 0, binding = 0) readonly buffer Q8 { uvec4 q8[]; };
layout(std430, set = 0, binding = 1) readonly buffer K8 { uvec4 k8[]; };
layout(std430, set = 0, binding = 2) readonly buffer V8 { uvec4 v8[]; };
layout(std430, set = 0, binding = 3) readonly buffer Mask { float mask[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Out8 { uvec4 o8[]; };
layout(std430, set = 0, binding = 5) readonly buffer Position { int position[]; };

// Mirrors AttentionPush (src/vulkan/ops/attention.cpp); offsets in elements.
layout(push_constant) uniform Params {
    uint q_offset, k_offset, v_offset, mask_offset, o_offset;
    uint q_len, kv_len, heads, kv_heads;
    float scale;
    int query_offset;
    uint mask_batch, mask_head, mask_row;
    uint splits, keys_per_split;
    uint position_offset;
} params;

// k then v of a block ([BK][DS] halves each); before the loop, the workgroup's q rows ([64][DS]).
shared uvec4 kv_sh[2u * KV_RUNS];
shared float s_sh[SUBGROUPS][16u * SS];   // a subgroup's scores; at the end, its output 32 columns at a time
shared uvec4 p_sh[SUBGROUPS][16u * PS / 8u];
shared float alpha_sh[SUBGROUPS][16u * 8u];

const float LOG2E = 1.44269504;

// The run `idx` of a block (k's runs, then v's): its key and 16-byte column.
uvec4 load_run(uint idx, uint j0, uint k_base, uint v_base) {
    bool is_v = idx >= BK * RUNS;
    uint rem = is_v ? idx - BK * RUNS : idx;
    uint key = rem / RUNS, c8 = rem % RUNS;
    uint j = j0 + key;
    if (j >= params.kv_len) return uvec4(0u);
    uint at = (is_v ? v_base : k_base) + j * params.kv_heads * RUNS + c8;
    return is_v ? v8[at] : k8[at];
}

uint shared_run(uint idx) {
    bool is_v = idx >= BK * RUNS;
    uint rem = is_v ? idx - BK * RUNS : idx;
    return (is_v ? KV_RUNS : 0u) + (rem / RUNS) * (DS / 8u) + rem % RUNS;
}

void main() {
    float neg_inf = uintBitsToFloat(0xff800000u);
    uint t = gl_LocalInvocationID.x, sg = t / 32u, lane = t % 32u;  // subgroups of 32 (checked on the host)
    uint blocks = (params.q_len + ROWS - 1u) / ROWS;
    uint block = CAUSAL ? blocks - 1u - gl_WorkGroupID.x : gl_WorkGroupID.x;
    uint r0 = block * ROWS;
    uint head = gl_WorkGroupID.y % params.heads, b = gl_WorkGroupID.y / params.heads;
    uint kv_head = head / (params.heads / params.kv_heads);
    // uvec4 indices of key 0's (and query 0's) first run.
    uint k_base = (params.k_offset + (b * params.kv_len * params.kv_heads + kv_head) * D) / 8u;
    uint v_base = (params.v_offset + (b * params.kv_len * params.kv_heads + kv_head) * D) / 8u;
    uint q_base = (params.q_offset + (b * params.q_len * params.heads + head) * D) / 8u;

    // The workgroup's q rows through shared memory into fragments.
    [[unroll]] for (uint s = 0u; s < ROWS * RUNS / THREADS; ++s) {
        uint idx = t + THREADS * s, row = idx / RUNS, c8 = idx % RUNS;
        uint i = r0 + row;
        kv_sh[row * (DS / 8u) + c8] = i < params.q_len ? q8[q_base + i * params.heads * RUNS + c8] : uvec4(0u);
    }
    barrier();
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> qf[STEPS_D];
    [[unroll]] for (uint kk = 0u; kk < STEPS_D; ++kk)
        coopMatLoadNV(qf[kk], kv_sh, ((sg * 16u) * DS + kk * 16u) / 8u, DS / 8u, false);
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> acc[FRAGS_D];
    [[unroll]] for (uint f = 0u; f < FRAGS_D; ++f) acc[f] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);

    // q's first position: the push constant, or the stored one clamped to [0, kv_len].
    int query_offset =
        STORED_POSITION ? clamp(position[params.position_offset], 0, int(params.kv_len)) : params.query_offset;
    // The keys the workgroup's rows see at most.
    uint end = params.kv_len;
    if (CAUSAL) {
        int last_row = int(min(params.q_len, r0 + ROWS)) - 1;
        end = uint(clamp(query_offset + last_row + 1, 0, int(params.kv_len)));
    }
    // This invocation's softmax row (two invocations a row, 16 keys each) and its state.
    uint row = lane >> 1u, half_ = lane & 1u;
    uint i = r0 + sg * 16u + row;
    int row_sees = query_offset + int(i);
    uint mask_at = params.mask_offset + b * params.mask_batch + head * params.mask_head + i * params.mask_row;
    float row_max = neg_inf, row_sum = 0.0;
    bool row_nan = false;
    float scale2 = params.scale * LOG2E;

    uvec4 next[LOADS];
    if (PREFETCH && end > 0u)
        [[unroll]] for (uint s = 0u; s < LOADS; ++s) next[s] = load_run(t + THREADS * s, 0u, k_base, v_base);
    for (uint j0 = 0u; j0 < end; j0 += BK) {
        barrier();  // the previous block (or q) read by every subgroup
        [[unroll]] for (uint s = 0u; s < LOADS; ++s) {
            uint idx = t + THREADS * s;
            kv_sh[shared_run(idx)] = PREFETCH ? next[s] : load_run(idx, j0, k_base, v_base);
        }
        barrier();
        if (PREFETCH && j0 + BK < end)
            [[unroll]] for (uint s = 0u; s < LOADS; ++s) next[s] = load_run(t + THREADS * s, j0 + BK, k_base, v_base);

        // 1. S = q·kᵀ: k's rows are the columns of b (column-major loads).
        fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> sf[BK / 8u];
        [[unroll]] for (uint n = 0u; n < BK / 8u; ++n) sf[n] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
        [[unroll]] for (uint kk = 0u; kk < STEPS_D; ++kk)
            [[unroll]] for (uint n = 0u; n < BK / 8u; ++n) {
                fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> kf;
                coopMatLoadNV(kf, kv_sh, ((n * 8u) * DS + kk * 16u) / 8u, DS / 8u, true);
                sf[n] = coopMatMulAddNV(qf[kk], kf, sf[n]);
            }
        [[unroll]] for (uint n = 0u; n < BK / 8u; ++n) coopMatStoreNV(sf[n], s_sh[sg], n * 8u, SS, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        // 2. The online softmax of this invocation's 16 scores of its row.
        float x[16];
        float block_max = neg_inf;
        bool nan = false;
        [[unroll]] for (uint e = 0u; e < 16u; ++e) {
            uint j = j0 + half_ * 16u + e;
            bool seen = i < params.q_len && j < params.kv_len && (!CAUSAL || int(j) <= row_sees);
            float s = s_sh[sg][row * SS + half_ * 16u + e] * scale2;
            if (HAS_MASK && seen) s = fma(mask[mask_at + j], LOG2E, s);
            s = seen ? s : neg_inf;
            nan = nan || isnan(s);
            x[e] = s;
            block_max = isnan(s) ? block_max : max(block_max, s);
        }
        block_max = max(block_max, subgroupShuffleXor(block_max, 1u));
        row_nan = row_nan || nan || subgroupShuffleXor(nan ? 1u : 0u, 1u) != 0u;
        float new_max = max(row_max, block_max);
        bool none = row_nan || new_max == neg_inf;  // no weight to add (or the row is NaN already)
        float alpha = none ? 1.0 : exp2(row_max - new_max);
        float sum = 0.0;
        uint words[8];
        [[unroll]] for (uint e = 0u; e < 16u; e += 2u) {
            float p0 = none || x[e] == neg_inf ? 0.0 : exp2(x[e] - new_max);
            float p1 = none || x[e + 1u] == neg_inf ? 0.0 : exp2(x[e + 1u] - new_max);
            sum += p0 + p1;
            words[e / 2u] = packHalf2x16(vec2(p0, p1));
        }
        sum += subgroupShuffleXor(sum, 1u);
        row_sum = fma(row_sum, alpha, sum);
        row_max = none ? row_max : new_max;
        uint p_at = (row * PS + half_ * 16u) / 8u;
        p_sh[sg][p_at] = uvec4(words[0], words[1], words[2], words[3]);
        p_sh[sg][p_at + 1u] = uvec4(words[4], words[5], words[6], words[7]);
        [[unroll]] for (uint c = 0u; c < 4u; ++c) alpha_sh[sg][row * 8u + half_ * 4u + c] = alpha;
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        // 3. O = α·O + P·v.
        if (subgroupMin(alpha) != 1.0) {
            fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> af;
            coopMatLoadNV(af, alpha_sh[sg], 0u, 8u, false);
            [[unroll]] for (uint f = 0u; f < FRAGS_D; ++f)
                for (int e = 0; e < af.length(); ++e) acc[f][e] *= af[e];
        }
        [[unroll]] for (uint kk = 0u; kk < BK / 16u; ++kk) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> pf;
            coopMatLoadNV(pf, p_sh[sg], (kk * 16u) / 8u, PS / 8u, false);
            [[unroll]] for (uint f = 0u; f < FRAGS_D; ++f) {
                fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> vf;
                coopMatLoadNV(vf, kv_sh, KV_RUNS + ((kk * 16u) * DS + f * 8u) / 8u, DS / 8u, false);
                acc[f] = coopMatMulAddNV(pf, vf, acc[f]);
            }
        }
    }

    // Each row divided by its sum, rounded to f16 and written, 32 columns at a time through s_sh.
    float nan_value = uintBitsToFloat(0x7fc00000u);
    float inv = row_sum == 0.0 ? 0.0 : 1.0 / row_sum;
    uint o_base = (params.o_offset + (b * params.q_len * params.heads + head) * D) / 8u + i * params.heads * RUNS;
    [[unroll]] for (uint c0 = 0u; c0 < FRAGS_D; c0 += BK / 8u) {
        subgroupBarrier();
        [[unroll]] for (uint n = 0u; n < BK / 8u; ++n)
            if (c0 + n < FRAGS_D) coopMatStoreNV(acc[c0 + n], s_sh[sg], n * 8u, SS, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        uint col = c0 * 8u + half_ * 16u;
        if (i < params.q_len && col < D) {
            uint words[8];
            [[unroll]] for (uint e = 0u; e < 16u; e += 2u) {
                vec2 y = vec2(s_sh[sg][row * SS + half_ * 16u + e], s_sh[sg][row * SS + half_ * 16u + e + 1u]) * inv;
                y = row_nan ? vec2(nan_value) : row_sum == 0.0 ? vec2(0.0) : y;
                words[e / 2u] = packHalf2x16(y);
            }
            o8[o_base + col / 8u] = uvec4(words[0], words[1], words[2], words[3]);
            o8[o_base + col / 8u + 1u] = uvec4(words[4], words[5], words[6], words[7]);
        }
    }
}
