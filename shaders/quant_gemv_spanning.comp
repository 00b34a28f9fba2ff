#version 450
// linear(x, w) for one row of x and q4_k weights, in f32, with x held in registers: a workgroup of
// 8·BLOCKS invocations (rounded up to whole subgroups) spans a weight row, invocation t taking the
// same 32 values of every row: qs bytes [16j, 16j+16) of block t/8, j = t%8, i.e. values
// 64c + 16h + i (low nibbles, sub-block 2c) and 64c + 32 + 16h + i (high nibbles, sub-block 2c+1),
// c = j/2, h = j%2, i < 16. Its 32 x values and their sums are loaded once; per row it loads the
// block's 16-byte header and its 16 qs bytes, the next rows' while it multiplies these.
//
// A code q becomes a float in two operations: shifted to bits 19-22 and OR-ed into 16.0's bits it
// gives 16 + q exactly; Σ(16 + q)·x − 16·Σx is then Σ q·x, and the values stay within 2x of q's, so
// the subtraction costs no accuracy worth naming. Each row's partial sums are added by subgroupAdd
// into shared memory and, after the workgroup's last row, across the subgroups in a fixed order:
// no barrier between rows, and results do not depend on timing.
//
// Built a second time with RAYO_INTEGER_DOT for devices with VK_KHR_shader_integer_dot_product:
// each invocation then turns its two runs of 16 x values into 24-bit integers (q = round(x·(2^23 -
// 1)/amax), amax over the run, so no invocation waits for another: x keeps ~f32 precision), split
// into bytes (q = 65536·h + 256·m + l; h signed), four of each packed in a word. A word of 8 codes
// then costs two masks and six 4x8-bit dot products (h by OpSUDot, m and l by OpUDot) instead of
// 24 operations.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "float_controls.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "quant_header.glsl"

layout(local_size_x_id = 1) in;
layout(constant_id = 2) const uint BLOCKS = 1;          // blocks per row: 8·BLOCKS <= workgroup size
layout(constant_id = 3) const uint ROWS_PER_GROUP = 2;  // consecutive weight rows per workgroup, a multiple of BATCH
layout(constant_id = 4) const uint SUBGROUP_SLOTS = 1;  // subgroups per workgroup
const uint BATCH = 2u;                                  // rows loaded and multiplied together

layout(std430, set = 0, binding = 0) readonly buffer Weights16 { uvec4 w_vec4[]; };
layout(std430, set = 0, binding = 1) readonly buffer X16 { vec4 x_vec4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Output { float y[]; };
layout(std430, set = 0, binding = 3) readonly buffer Bias { float bias[]; };

layout(push_constant) uniform Params {
    uint n;           // weight rows
    uint blocks;      // blocks per row (BLOCKS)
    uint w_offset;    // bytes, a multiple of 16
    uint row_bytes;   // 144·blocks
    uint x_offset;    // floats, a multiple of 4
    uint out_offset;  // floats
    uint bias_offset; // floats
    uint has_bias;    // 1: y gets bias[row] added (linear's bias)
} params;

shared float sums[ROWS_PER_GROUP * SUBGROUP_SLOTS];

// 16 + the nibble at bit p of w.
float code16(uint w, uint p) {
    uint at19 = p <= 19u ? w << (19u - p) : w >> (p - 19u);
    return uintBitsToFloat((at19 & 0x00780000u) | 0x41800000u);
}

#ifdef RAYO_INTEGER_DOT
#extension GL_EXT_spirv_intrinsics : require
// SPV_KHR_integer_dot_product (glslc 2023.2 has no GLSL for it): 4452 OpSUDot (signed · unsigned
// bytes), 4451 OpUDot; capabilities 6019 DotProduct, 6018 DotProductInput4x8BitPacked; the last
// operand is the packed format, 0 = PackedVectorFormat4x8Bit.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4452)
int rayo_sudot4(uint signed_bytes, uint unsigned_bytes, spirv_literal int packed_format);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4451)
uint rayo_udot4(uint a, uint b, spirv_literal int packed_format);

// A run of 16 x values as 24-bit integers split into bytes: high[w], mid[w], low[w] hold values
// 4w .. 4w+3 (signed high byte, unsigned others).
struct XRun {
    uvec4 high, mid, low;
    float scale;  // x ≈ scale·(65536·h + 256·m + l)
};

XRun quantize_run(vec4 x[4]) {
    float amax = 0.0;
    [[unroll]] for (uint w = 0u; w < 4u; ++w)
        amax = max(amax, max(max(abs(x[w].x), abs(x[w].y)), max(abs(x[w].z), abs(x[w].w))));
    XRun run;
    run.scale = amax / 8388607.0;
    float inv = amax > 0.0 ? 8388607.0 / amax : 0.0;
    [[unroll]] for (uint w = 0u; w < 4u; ++w) {
        // x·inv may round one ulp past 2^23 - 1.
        ivec4 q = clamp(ivec4(roundEven(x[w] * inv)), -8388607, 8388607);
        uvec4 h = uvec4(q >> 16) & 0xFFu, m = uvec4(q >> 8) & 0xFFu, l = uvec4(q) & 0xFFu;
        run.high[w] = h.x | (h.y << 8) | (h.z << 16) | (h.w << 24);
        run.mid[w] = m.x | (m.y << 8) | (m.z << 16) | (m.w << 24);
        run.low[w] = l.x | (l.y << 8) | (l.z << 16) | (l.w << 24);
    }
    return run;
}

// Σ q_i·x_i over the 16 nibbles of qs at bit offset `nibble` (0: low, 4: high) of each byte. The
// sum 65536·high + 256·mid + low is at most 16·15·(2^23 - 1) < 2^31: exact in int32.
float dot16(uvec4 qs, uint nibble, XRun x) {
    int high = 0, mid = 0, low = 0;
    [[unroll]] for (uint w = 0u; w < 4u; ++w) {
        uint codes = (qs[w] >> nibble) & 0x0F0F0F0Fu;
        high += rayo_sudot4(x.high[w], codes, 0);
        mid += int(rayo_udot4(x.mid[w], codes, 0));
        low += int(rayo_udot4(x.low[w], codes, 0));
    }
    return float(high * 65536 + mid * 256 + low) * x.scale;
}
#else
// Σ (16 + q_i)·x_i over the 16 nibbles of qs at bit offset `nibble` (0: low, 4: high) of each byte.
float dot16(uvec4 qs, uint nibble, vec4 x[4]) {
    precise float s = 0.0;
    [[unroll]] for (uint w = 0u; w < 4u; ++w) {
        uint word = qs[w];
        s = fma(code16(word, nibble), x[w].x, s);
        s = fma(code16(word, nibble + 8u), x[w].y, s);
        s = fma(code16(word, nibble + 16u), x[w].z, s);
        s = fma(code16(word, nibble + 24u), x[w].w, s);
    }
    return s;
}
#endif

void main() {
    uint t = gl_LocalInvocationID.x;
    bool in_row = t / 8u < BLOCKS;
    uint b = min(t / 8u, BLOCKS - 1u), j = t % 8u, c = j / 2u;
    uint x_at = (params.x_offset + 256u * b + 64u * c + 16u * (j % 2u)) / 4u;  // in vec4s
    vec4 x_lo[4], x_hi[4];
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        x_lo[i] = x_vec4[x_at + i];
        x_hi[i] = x_vec4[x_at + 8u + i];
    }
    float sum_lo = 0.0, sum_hi = 0.0;
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        sum_lo += (x_lo[i].x + x_lo[i].y) + (x_lo[i].z + x_lo[i].w);
        sum_hi += (x_hi[i].x + x_hi[i].y) + (x_hi[i].z + x_hi[i].w);
    }
#ifdef RAYO_INTEGER_DOT
    XRun run_lo = quantize_run(x_lo), run_hi = quantize_run(x_hi);
#else
    float sum16_lo = 16.0 * sum_lo, sum16_hi = 16.0 * sum_hi;
#endif

    uint first = gl_WorkGroupID.x * ROWS_PER_GROUP;
    uint last_row = params.n - 1u;
    uint block_at = (params.w_offset + 144u * b) / 16u;  // in uvec4s, within any row
    uint row_vec4s = params.row_bytes / 16u;
    uvec4 next_head[BATCH], next_qs[BATCH];
    [[unroll]] for (uint r = 0u; r < BATCH; ++r) {
        uint at = block_at + min(first + r, last_row) * row_vec4s;
        next_head[r] = w_vec4[at];
        next_qs[r] = w_vec4[at + 1u + j];
    }
    for (uint i = 0u; i < ROWS_PER_GROUP; i += BATCH) {
        uvec4 head[BATCH], qs[BATCH];
        [[unroll]] for (uint r = 0u; r < BATCH; ++r) {
            head[r] = next_head[r];
            qs[r] = next_qs[r];
        }
        if (i + BATCH < ROWS_PER_GROUP) {
            [[unroll]] for (uint r = 0u; r < BATCH; ++r) {
                uint at = block_at + min(first + i + BATCH + r, last_row) * row_vec4s;
                next_head[r] = w_vec4[at];
                next_qs[r] = w_vec4[at + 1u + j];
            }
        }
        [[unroll]] for (uint r = 0u; r < BATCH; ++r) {
            uvec4 h = head[r];
            uvec2 sm = q4_k_scales_mins(h, c);
            float sc_lo = float(sm.x & 0xFFu), sc_hi = float((sm.x >> 8) & 0xFFu);
            float mn_lo = float(sm.y & 0xFFu), mn_hi = float((sm.y >> 8) & 0xFFu);
            float d = half_exact(h.x), dmin = half_exact(h.x >> 16);
#ifdef RAYO_INTEGER_DOT
            float dot_lo = dot16(qs[r], 0u, run_lo);
            float dot_hi = dot16(qs[r], 4u, run_hi);
#else
            float dot_lo = dot16(qs[r], 0u, x_lo) - sum16_lo;
            float dot_hi = dot16(qs[r], 4u, x_hi) - sum16_hi;
#endif
            float part = d * (sc_lo * dot_lo + sc_hi * dot_hi) - dmin * (mn_lo * sum_lo + mn_hi * sum_hi);
            float total = subgroupAdd(in_row ? part : 0.0);
            if (subgroupElect()) sums[(i + r) * SUBGROUP_SLOTS + gl_SubgroupID] = total;
        }
    }
    barrier();
    for (uint e = t; e < ROWS_PER_GROUP; e += gl_WorkGroupSize.x) {
        uint row = first + e;
        if (row >= params.n) continue;
        float total = 0.0;
        for (uint s = 0u; s < gl_NumSubgroups; ++s) total += sums[e * SUBGROUP_SLOTS + s];
        y[params.out_offset + row] = total + (params.has_bias != 0u ? bias[params.bias_offset + row] : 0.0);
    }
}
