// softmax, log_softmax, layer_norm and rms_norm along contiguous rows, included by rows.comp and
// rows_subgroup.comp (which enable GL_EXT_control_flow_attributes). One workgroup per row (the
// workgroups stride over the rows), or for short rows one invocation per row (PER_THREAD); row
// statistics are workgroup reductions (workgroup_reduce.glsl) with sums as double-float pairs,
// following the CPU kernels (include/rayo/cpu/softmax.hpp, normalization.hpp) step for step.
// A workgroup's row is either held in registers (CHUNKS > 0: x read once, y written once, vec4
// accesses where VEC4) or, when too long for that (CHUNKS == 0), re-read from x in each pass.

#include "op_codes.glsl"

// softmax, log_softmax, layer_norm or rms_norm (op_codes.glsl)
layout(constant_id = 0) const uint OP = RAYO_OP_SOFTMAX;
const bool IS_SOFTMAX = OP == RAYO_OP_SOFTMAX || OP == RAYO_OP_LOG_SOFTMAX;
layout(constant_id = 2) const bool HAS_GAMMA = false;
layout(constant_id = 3) const bool HAS_BETA = false;
layout(constant_id = 4) const bool PER_THREAD = false;  // short rows: one invocation per row, no barriers
// > 0: each invocation holds CHUNKS groups of 4 elements of the row (cols <= 4·CHUNKS·workgroup size),
// at most MAX_CHUNKS (max_chunks in src/vulkan/ops/row_shader.cpp); the unrolled loops leave
// the rest unused.
layout(constant_id = 5) const uint CHUNKS = 0;
const uint MAX_CHUNKS = 8;
// With CHUNKS: cols and the x, y, gamma and beta offsets are multiples of 4, so chunks are vec4s.
layout(constant_id = 6) const bool VEC4 = false;

// x, y, gamma and beta: f32, or with RAYO_ELEMENT16 (the rows_element16 builds) f16 / bf16
// (element16.glsl), each also seen as groups of 4 (VEC4: every offset is then a multiple of 4
// elements). Elements are read and written through the functions below, as float.
#include "element16.glsl"
// (Macros, not functions: a function taking or returning uint16_t would need the Int16 capability.)
#ifdef RAYO_ELEMENT16
#define RAYO_ELEMENT uint16_t
#define RAYO_ELEMENT4 uvec2
#define element_value(e) element_to_float(uint(e))
#define element_of(v) uint16_t(float_to_element(v))
#define group_value(g) unpack_elements(g)
#define group_of(v) pack_elements(v)
#else
#define RAYO_ELEMENT float
#define RAYO_ELEMENT4 vec4
#define element_value(e) (e)
#define element_of(v) (v)
#define group_value(g) (g)
#define group_of(v) (v)
#endif
layout(std430, set = 0, binding = 0) readonly buffer Input { RAYO_ELEMENT x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output { RAYO_ELEMENT y[]; };
layout(std430, set = 0, binding = 2) readonly buffer Gamma { RAYO_ELEMENT gamma[]; };
layout(std430, set = 0, binding = 3) readonly buffer Beta { RAYO_ELEMENT beta[]; };
layout(std430, set = 0, binding = 0) readonly buffer Input4 { RAYO_ELEMENT4 x4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output4 { RAYO_ELEMENT4 y4[]; };
layout(std430, set = 0, binding = 2) readonly buffer Gamma4 { RAYO_ELEMENT4 gamma4[]; };
layout(std430, set = 0, binding = 3) readonly buffer Beta4 { RAYO_ELEMENT4 beta4[]; };
float load_x(uint i) { return element_value(x[i]); }
void store_y(uint i, float v) { y[i] = element_of(v); }

layout(push_constant) uniform Params {
    uint rows;
    uint cols;
    uint x_offset;  // elements
    uint y_offset;
    uint gamma_offset;
    uint beta_offset;
    float eps;
} params;

// Rows whose float sums or squares overflow (any |x| past ~2^64) take their statistics in units of
// x·2^-96 (exact: a power of two), whose squares and sums cannot overflow; the normalised values
// are the same. The branch to it is uniform over the workgroup (it follows a workgroup sum).
const float HUGE_SCALE = 1.2621774483536189e-29;  // 2^-96
// Below it neither a centred square nor the sum of them has overflowed.
const float HUGE_SQUARES = 4.2535295865117308e37;  // 2^125

bool finite(float v) { return !isnan(v) && !isinf(v); }

// The mean of a row from its double-float sum: c (the float mean) and c_lo (the rest).
void mean_of(vec2 s, float nf, out float c, out float c_lo) {
    c = rayo_div(s.x, nf);
    float p, e;
    rayo_two_prod(c, nf, p, e);
    precise float lo = (((s.x - p) - e) + s.y) / nf;
    c_lo = lo;
}

// ((x - c)·s + t)·gamma + beta for element i of the row, as the CPU's affine_row.
float affine(float v, float c, float s, float t, uint i) {
    precise float r = (v - c) * s + t;
    if (HAS_GAMMA) r = r * element_value(gamma[params.gamma_offset + i]);
    if (HAS_BETA && OP == RAYO_OP_LAYER_NORM) r = r + element_value(beta[params.beta_offset + i]);
    return r;
}

// The row's Σx·k, Σ(x·k - c)² and Σ(x·k)² as double-float pairs, over the workgroup (k a power
// of two: x·k is exact).
vec2 row_sum(uint xb, uint n, uint t, uint step, float k) {
    vec2 s = vec2(0.0);
    for (uint i = t; i < n; i += step) s = df_add1(s, load_x(xb + i) * k);
    return PER_THREAD ? s : wg_sum(s);
}

vec2 row_centred_squares(uint xb, uint n, uint t, uint step, float k, float c) {
    vec2 s = vec2(0.0);
    for (uint i = t; i < n; i += step) {
        precise float d = load_x(xb + i) * k - c;
        precise float dd = d * d;
        s = df_add1(s, dd);
    }
    return PER_THREAD ? s : wg_sum(s);
}

vec2 row_squares(uint xb, uint n, uint t, uint step, float k) {
    vec2 s = vec2(0.0);
    for (uint i = t; i < n; i += step) {
        precise float v = load_x(xb + i) * k;
        precise float sq = v * v;
        s = df_add1(s, sq);
    }
    return PER_THREAD ? s : wg_sum(s);
}

// Row `row`, whose elements t, t + step, ... this invocation handles (all of them per thread).
void process_row(uint row, uint t, uint step) {
    uint n = params.cols;
    float nf = float(n);
    uint xb = params.x_offset + row * n, yb = params.y_offset + row * n;
    if (IS_SOFTMAX) {
        // The row maximum (NaN if any), subtracted first so that large inputs cannot overflow.
        float m = -RAYO_INF;
        uint mi = RAYO_NONE;
        for (uint i = t; i < n; i += step)
            if (rayo_better(load_x(xb + i), i, m, mi, true)) {
                m = load_x(xb + i);
                mi = i;
            }
        if (!PER_THREAD) wg_best(m, mi, true);
        vec2 s = vec2(0.0);
        for (uint i = t; i < n; i += step) {
            precise float d = load_x(xb + i) - m;
            s = df_add1(s, rayo_exp(d));
        }
        if (!PER_THREAD) s = wg_sum(s);
        if (OP == RAYO_OP_LOG_SOFTMAX) {
            // y = (x - max) - log(sum), log(hi + lo) = log(hi) + lo/hi.
            precise float lse = rayo_log(s.x) + s.y / s.x;
            for (uint i = t; i < n; i += step) {
                precise float d = load_x(xb + i) - m;
                precise float r = d - lse;
                store_y(yb + i, r);
            }
        } else {
            float inv = rayo_div(1.0, s.x);
            for (uint i = t; i < n; i += step) {
                precise float d = load_x(xb + i) - m;
                precise float r = rayo_exp(d) * inv;
                store_y(yb + i, r);
            }
        }
    } else if (OP == RAYO_OP_LAYER_NORM) {
        // mean = (hi + lo)/n as c + c_lo: c is the float mean the CPU centres on. In units of x·k.
        float k = 1.0, c, c_lo;
        vec2 s = row_sum(xb, n, t, step, k);
        if (!finite(s.x)) {
            k = HUGE_SCALE;
            s = row_sum(xb, n, t, step, k);
        }
        mean_of(s, nf, c, c_lo);
        vec2 v = row_centred_squares(xb, n, t, step, k, c);
        if (k == 1.0 && !(v.x < HUGE_SQUARES)) {
            k = HUGE_SCALE;
            mean_of(row_sum(xb, n, t, step, k), nf, c, c_lo);
            v = row_centred_squares(xb, n, t, step, k, c);
        }
        precise float var = df_value(v) / nf;
        float rstd = rayo_div(1.0, rayo_sqrt(var + params.eps * k * k));
        precise float shift = -c_lo * rstd;  // (c - mean)·rstd
        for (uint i = t; i < n; i += step) store_y(yb + i, affine(load_x(xb + i) * k, c, rstd, shift, i));
    } else {
        float k = 1.0;
        vec2 s = row_squares(xb, n, t, step, k);
        if (!finite(s.x)) {
            k = HUGE_SCALE;
            s = row_squares(xb, n, t, step, k);
        }
        precise float ms = df_value(s) / nf;
        // x·k/sqrt(E[(x·k)²] + eps·k²) = x/sqrt(E[x²] + eps); the scale stays in units of x·k, as
        // 1/sqrt(E[x²]) of a huge row is subnormal (flushed on devices without denormals).
        float rs = rayo_div(1.0, rayo_sqrt(ms + params.eps * k * k));
        for (uint i = t; i < n; i += step) store_y(yb + i, affine(load_x(xb + i) * k, 0.0, rs, 0.0, i));
    }
}

// The register path (CHUNKS > 0). Chunk c of invocation t holds 4 elements of the row: with VEC4
// the vec4 at c·size + t (16-byte accesses, consecutive over the invocations), otherwise scalars
// interleaved by the workgroup size (each access coalesced too). Component k of the result is the
// element's index in the row; the first is the smallest, so a chunk with none in the row has ok.x
// false. Chunks are processed component by component in straight-line code: glslc's optimizer
// (spirv-opt 2022.4) miscompiles an unrolled loop over the components around rayo_exp.
uvec4 chunk_elements(uint c, uint t) {
    uvec4 k = uvec4(0, 1, 2, 3);
    return VEC4 ? (c * gl_WorkGroupSize.x + t) * 4 + k : (c * 4 + k) * gl_WorkGroupSize.x + t;
}

vec4 load_chunk(uint xb, uvec4 i, bvec4 ok) {
    if (VEC4) return ok.x ? group_value(x4[(xb + i.x) / 4]) : vec4(0.0);
    vec4 v = vec4(0.0);
    if (ok.x) v.x = load_x(xb + i.x);
    if (ok.y) v.y = load_x(xb + i.y);
    if (ok.z) v.z = load_x(xb + i.z);
    if (ok.w) v.w = load_x(xb + i.w);
    return v;
}

void store_chunk(uint yb, uvec4 i, bvec4 ok, vec4 v) {
    if (VEC4) {
        if (ok.x) y4[(yb + i.x) / 4] = group_of(v);
        return;
    }
    if (ok.x) store_y(yb + i.x, v.x);
    if (ok.y) store_y(yb + i.y, v.y);
    if (ok.z) store_y(yb + i.z, v.z);
    if (ok.w) store_y(yb + i.w, v.w);
}

// The elements of v in the row added to the pair s, in component order.
vec2 df_add4(vec2 s, vec4 v, bvec4 ok) {
    if (ok.x) s = df_add1(s, v.x);
    if (ok.y) s = df_add1(s, v.y);
    if (ok.z) s = df_add1(s, v.z);
    if (ok.w) s = df_add1(s, v.w);
    return s;
}

// (hi, lo) + x for finite x >= 0 and hi >= 0, by Fast2Sum (3 operations for the error instead of
// two_sum's 6): exact once hi >= x, which softmax's sums of e^(x - max) <= 1 reach after their
// first terms; before that the error term may miss a part below 2^-24 of the sum.
vec2 df_add1_nonnegative(vec2 a, float x) {
    precise float s = a.x + x;
    precise float z = s - a.x;
    precise float e = x - z;
    precise float lo = a.y + e;
    return vec2(s, lo);
}

// df_add4 of e^(x - max) values (finite, >= 0) with df_add1_nonnegative where `nonnegative` (the
// branch is uniform over the workgroup).
vec2 df_add4_exp(vec2 s, vec4 v, bvec4 ok, bool nonnegative) {
    if (!nonnegative) return df_add4(s, v, ok);
    if (ok.x) s = df_add1_nonnegative(s, v.x);
    if (ok.y) s = df_add1_nonnegative(s, v.y);
    if (ok.z) s = df_add1_nonnegative(s, v.z);
    if (ok.w) s = df_add1_nonnegative(s, v.w);
    return s;
}

// m and the elements of v in the row: their maximum, NaN if any is NaN.
float max4(vec4 v, bvec4 ok, float m) {
    if (ok.x) m = rayo_max_nan(m, v.x);
    if (ok.y) m = rayo_max_nan(m, v.y);
    if (ok.z) m = rayo_max_nan(m, v.z);
    if (ok.w) m = rayo_max_nan(m, v.w);
    return m;
}

// e^d; `nonpositive`: every d is <= 0 or -inf (the row's max is finite), so the NaN test and
// the upper clamp can go (the branch is uniform over the workgroup).
vec4 exp4(vec4 d, bool nonpositive) {
    if (nonpositive)
        return vec4(rayo_exp_nonpositive(d.x), rayo_exp_nonpositive(d.y), rayo_exp_nonpositive(d.z),
                    rayo_exp_nonpositive(d.w));
    return vec4(rayo_exp(d.x), rayo_exp(d.y), rayo_exp(d.z), rayo_exp(d.w));
}

// affine() of the chunk's elements in the row; with VEC4, gamma and beta are read as vec4s.
vec4 affine_chunk(vec4 v, float c, float s, float t, uvec4 i, bvec4 ok) {
    if (VEC4) {
        precise vec4 r = (v - c) * s + t;
        if (HAS_GAMMA) r = r * group_value(gamma4[(params.gamma_offset + i.x) / 4]);
        if (HAS_BETA && OP == RAYO_OP_LAYER_NORM) r = r + group_value(beta4[(params.beta_offset + i.x) / 4]);
        return r;
    }
    if (ok.x) v.x = affine(v.x, c, s, t, i.x);
    if (ok.y) v.y = affine(v.y, c, s, t, i.y);
    if (ok.z) v.z = affine(v.z, c, s, t, i.z);
    if (ok.w) v.w = affine(v.w, c, s, t, i.w);
    return v;
}

// row_sum, row_centred_squares and row_squares of the chunks held in registers.
vec2 chunks_sum(vec4 v[MAX_CHUNKS], uint t, uint n, float k) {
    vec2 s = vec2(0.0);
    [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
        uvec4 i = chunk_elements(c, t);
        s = df_add4(s, v[c] * k, lessThan(i, uvec4(n)));
    }
    return wg_sum(s);
}

vec2 chunks_centred_squares(vec4 v[MAX_CHUNKS], uint t, uint n, float k, float mean) {
    vec2 s = vec2(0.0);
    [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
        uvec4 i = chunk_elements(c, t);
        precise vec4 d = v[c] * k - mean;
        precise vec4 dd = d * d;
        s = df_add4(s, dd, lessThan(i, uvec4(n)));
    }
    return wg_sum(s);
}

vec2 chunks_squares(vec4 v[MAX_CHUNKS], uint t, uint n, float k) {
    vec2 s = vec2(0.0);
    [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
        uvec4 i = chunk_elements(c, t);
        precise vec4 w = v[c] * k;
        precise vec4 sq = w * w;
        s = df_add4(s, sq, lessThan(i, uvec4(n)));
    }
    return wg_sum(s);
}

// process_row() with the row's share of this invocation held in v: the same steps and sums, x read
// once; what a later pass needs (x - max, e^(x - max)) is kept rather than recomputed.
void process_row_in_registers(uint row, uint t) {
    uint n = params.cols;
    float nf = float(n);
    uint xb = params.x_offset + row * n, yb = params.y_offset + row * n;
    vec4 v[MAX_CHUNKS];
    [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
        uvec4 i = chunk_elements(c, t);
        v[c] = load_chunk(xb, i, lessThan(i, uvec4(n)));
    }
    if (IS_SOFTMAX) {
        // The row maximum (NaN if any): the value only, which softmax needs, unlike the multi-pass
        // form's wg_best with its index. (With wg_best here NVIDIA's driver gives NaN rows once a
        // workgroup has two subgroups or more.)
        float m = -RAYO_INF;
        [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
            uvec4 i = chunk_elements(c, t);
            m = max4(v[c], lessThan(i, uvec4(n)), m);
        }
        m = wg_max(m);
        bool finite_max = !isnan(m) && !isinf(m);
        vec2 s = vec2(0.0);
        [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
            uvec4 i = chunk_elements(c, t);
            bvec4 ok = lessThan(i, uvec4(n));
            if (ok.x) {
                precise vec4 d = v[c] - m;
                vec4 e = exp4(d, finite_max);
                s = df_add4_exp(s, e, ok, finite_max);
                v[c] = OP == RAYO_OP_LOG_SOFTMAX ? d : e;
            }
        }
        s = wg_sum(s);
        if (OP == RAYO_OP_LOG_SOFTMAX) {
            precise float lse = rayo_log(s.x) + s.y / s.x;
            [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
                precise vec4 r = v[c] - lse;
                v[c] = r;
            }
        } else {
            float inv = rayo_div(1.0, s.x);
            [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
                precise vec4 r = v[c] * inv;
                v[c] = r;
            }
        }
    } else if (OP == RAYO_OP_LAYER_NORM) {
        // As process_row: in units of x·k, k = 1 or, for rows of huge values, 2^-96.
        float k = 1.0, mean, mean_lo;
        vec2 s = chunks_sum(v, t, n, k);
        if (!finite(s.x)) {
            k = HUGE_SCALE;
            s = chunks_sum(v, t, n, k);
        }
        mean_of(s, nf, mean, mean_lo);
        vec2 sd = chunks_centred_squares(v, t, n, k, mean);
        if (k == 1.0 && !(sd.x < HUGE_SQUARES)) {
            k = HUGE_SCALE;
            mean_of(chunks_sum(v, t, n, k), nf, mean, mean_lo);
            sd = chunks_centred_squares(v, t, n, k, mean);
        }
        precise float var = df_value(sd) / nf;
        float rstd = rayo_div(1.0, rayo_sqrt(var + params.eps * k * k));
        precise float shift = -mean_lo * rstd;
        [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
            uvec4 i = chunk_elements(c, t);
            v[c] = affine_chunk(v[c] * k, mean, rstd, shift, i, lessThan(i, uvec4(n)));
        }
    } else {
        float k = 1.0;
        vec2 s = chunks_squares(v, t, n, k);
        if (!finite(s.x)) {
            k = HUGE_SCALE;
            s = chunks_squares(v, t, n, k);
        }
        precise float ms = df_value(s) / nf;
        float rs = rayo_div(1.0, rayo_sqrt(ms + params.eps * k * k));
        [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
            uvec4 i = chunk_elements(c, t);
            v[c] = affine_chunk(v[c] * k, 0.0, rs, 0.0, i, lessThan(i, uvec4(n)));
        }
    }
    [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
        uvec4 i = chunk_elements(c, t);
        store_chunk(yb, i, lessThan(i, uvec4(n)), v[c]);
    }
}

void main() {
    if (PER_THREAD) {
        uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
        for (uint row = gl_GlobalInvocationID.x; row < params.rows; row += stride) process_row(row, 0, 1);
    } else if (CHUNKS > 0) {
        for (uint row = gl_WorkGroupID.x; row < params.rows; row += gl_NumWorkGroups.x)  // uniform
            process_row_in_registers(row, gl_LocalInvocationID.x);
    } else {
        for (uint row = gl_WorkGroupID.x; row < params.rows; row += gl_NumWorkGroups.x)  // uniform
            process_row(row, gl_LocalInvocationID.x, gl_WorkGroupSize.x);
    }
}
