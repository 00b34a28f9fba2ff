// softmax, log_softmax, layer_norm and rms_norm along contiguous rows, included by rows.comp and
// rows_subgroup.comp. One workgroup per row (the workgroups stride over the rows), or for short
// rows one invocation per row (PER_THREAD); row statistics
// are workgroup reductions (workgroup_reduce.glsl) with sums as double-float pairs, following
// the CPU kernels (include/rayo/cpu/softmax.hpp, normalization.hpp) step for step.

layout(constant_id = 0) const uint OP = 0;  // 0 softmax, 1 log_softmax, 2 layer_norm, 3 rms_norm
layout(constant_id = 2) const bool HAS_GAMMA = false;
layout(constant_id = 3) const bool HAS_BETA = false;
layout(constant_id = 4) const bool PER_THREAD = false;  // short rows: one invocation per row, no barriers

layout(std430, set = 0, binding = 0) readonly buffer Input { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output { float y[]; };
layout(std430, set = 0, binding = 2) readonly buffer Gamma { float gamma[]; };
layout(std430, set = 0, binding = 3) readonly buffer Beta { float beta[]; };

layout(push_constant) uniform Params {
    uint rows;
    uint cols;
    uint x_offset;  // elements
    uint y_offset;
    uint gamma_offset;
    uint beta_offset;
    float eps;
} params;

// ((x - c)·s + t)·gamma + beta for element i of the row, as the CPU's affine_row.
float affine(float v, float c, float s, float t, uint i) {
    precise float r = (v - c) * s + t;
    if (HAS_GAMMA) r = r * gamma[params.gamma_offset + i];
    if (HAS_BETA && OP == 2) r = r + beta[params.beta_offset + i];
    return r;
}

// Row `row`, whose elements t, t + step, ... this invocation handles (all of them per thread).
void process_row(uint row, uint t, uint step) {
    uint n = params.cols;
    float nf = float(n);
    uint xb = params.x_offset + row * n, yb = params.y_offset + row * n;
    if (OP <= 1) {
        // The row maximum (NaN if any), subtracted first so that large inputs cannot overflow.
        float m = -RAYO_INF;
        uint mi = RAYO_NONE;
        for (uint i = t; i < n; i += step)
            if (rayo_better(x[xb + i], i, m, mi, true)) {
                m = x[xb + i];
                mi = i;
            }
        if (!PER_THREAD) wg_best(m, mi, true);
        vec2 s = vec2(0.0);
        for (uint i = t; i < n; i += step) {
            precise float d = x[xb + i] - m;
            s = df_add1(s, rayo_exp(d));
        }
        if (!PER_THREAD) s = wg_sum(s);
        if (OP == 1) {
            // y = (x - max) - log(sum), log(hi + lo) = log(hi) + lo/hi.
            precise float lse = rayo_log(s.x) + s.y / s.x;
            for (uint i = t; i < n; i += step) {
                precise float d = x[xb + i] - m;
                precise float r = d - lse;
                y[yb + i] = r;
            }
        } else {
            float inv = rayo_div(1.0, s.x);
            for (uint i = t; i < n; i += step) {
                precise float d = x[xb + i] - m;
                precise float r = rayo_exp(d) * inv;
                y[yb + i] = r;
            }
        }
    } else if (OP == 2) {
        vec2 s = vec2(0.0);
        for (uint i = t; i < n; i += step) s = df_add1(s, x[xb + i]);
        if (!PER_THREAD) s = wg_sum(s);
        // mean = (hi + lo)/n as c + c_lo: c is the float mean the CPU centres on.
        float c = rayo_div(s.x, nf);
        float p, e;
        rayo_two_prod(c, nf, p, e);
        precise float c_lo = (((s.x - p) - e) + s.y) / nf;
        vec2 v = vec2(0.0);
        for (uint i = t; i < n; i += step) {
            precise float d = x[xb + i] - c;
            precise float dd = d * d;
            v = df_add1(v, dd);
        }
        if (!PER_THREAD) v = wg_sum(v);
        precise float var = (v.x + v.y) / nf;
        float rstd = rayo_div(1.0, rayo_sqrt(var + params.eps));
        precise float shift = -c_lo * rstd;  // (c - mean)·rstd
        for (uint i = t; i < n; i += step) y[yb + i] = affine(x[xb + i], c, rstd, shift, i);
    } else {
        vec2 s = vec2(0.0);
        for (uint i = t; i < n; i += step) {
            precise float sq = x[xb + i] * x[xb + i];
            s = df_add1(s, sq);
        }
        if (!PER_THREAD) s = wg_sum(s);
        precise float ms = (s.x + s.y) / nf;
        float rs = rayo_div(1.0, rayo_sqrt(ms + params.eps));
        for (uint i = t; i < n; i += step) y[yb + i] = affine(x[xb + i], 0.0, rs, 0.0, i);
    }
}

void main() {
    if (PER_THREAD) {
        uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
        for (uint row = gl_GlobalInvocationID.x; row < params.rows; row += stride) process_row(row, 0, 1);
    } else {
        for (uint row = gl_WorkGroupID.x; row < params.rows; row += gl_NumWorkGroups.x)  // uniform
            process_row(row, gl_LocalInvocationID.x, gl_WorkGroupSize.x);
    }
}
