// Workgroup-wide reductions for the reduction, softmax and norm shaders. Each function must be
// called by every invocation of the workgroup (they contain barriers) and returns the result to
// all of them. The combining order is fixed by the workgroup size (and, with subgroups, by the
// device's subgroup operations), so results are the same run to run.
//
// With RAYO_SUBGROUPS defined (the *_subgroup.comp variants, used where the device reports subgroup
// arithmetic and shuffles in compute shaders) each subgroup reduces first (sums by a butterfly of
// shuffles, extremes with subgroupMin/Max) and shared memory combines one value per subgroup;
// without it, a shared-memory tree (the portable path).
//
// Sums are double-float pairs (hi, lo): each invocation accumulates with an error-free two_sum,
// and pairs are combined with two_sum too, so a sum is accurate to about a float ulp of Σ|x|
// however many terms it has (the CPU adds float blocks into double; this keeps to its tolerances).
// Requires float_math.glsl and `layout(local_size_x_id = 1) in;` with a power-of-two size.

const uint RAYO_NONE = 0xffffffffu;  // the index of "no element yet"

shared float rayo_sh_a[gl_WorkGroupSize.x];
shared float rayo_sh_b[gl_WorkGroupSize.x];
shared uint rayo_sh_i[gl_WorkGroupSize.x];

// (hi, lo) + x, with the rounding error of hi + x carried in lo. Once hi is infinite or NaN, lo is
// NaN: df_value() then returns hi.
vec2 df_add1(vec2 a, float x) {
    float s, e;
    rayo_two_sum(a.x, x, s, e);
    precise float lo = a.y + e;
    return vec2(s, lo);
}

// (hi, lo) + (hi, lo), renormalised so that |lo| <= ulp(hi)/2.
vec2 df_add(vec2 a, vec2 b) {
    float s, e;
    rayo_two_sum(a.x, b.x, s, e);
    if (isinf(s) || isnan(s)) return vec2(s, 0.0);  // the error terms of an infinite sum are NaN
    precise float t = e + (a.y + b.y);
    precise float hi = s + t;
    precise float lo = t - (hi - s);
    return vec2(hi, lo);
}

float df_value(vec2 a) {
    if (isinf(a.x) || isnan(a.x)) return a.x;
    precise float s = a.x + a.y;
    return s;
}

// Whether (v, i) beats (bv, bi) for a max (is_max) or min with the CPU's rules: NaN beats
// everything (the first NaN wins), then the larger (smaller) value, then the smaller index.
bool rayo_better(float v, uint i, float bv, uint bi, bool is_max) {
    bool vn = isnan(v), bn = isnan(bv);
    if (vn || bn) return vn && (!bn || i < bi);
    if (v == bv) return i < bi;
    return is_max ? v > bv : v < bv;
}

// The larger of a and b, NaN if either is (a row maximum that propagates NaN).
float rayo_max_nan(float a, float b) { return isnan(a) || isnan(b) ? RAYO_NAN : (b > a ? b : a); }

#ifdef RAYO_SUBGROUPS

// The subgroup's pairs added without losing what subgroupAdd of the hi parts would round away: a
// butterfly of df_add over shuffled partners. df_add(a, b) equals df_add(b, a) (a two_sum error is
// exact), so every lane ends with the same pair.
vec2 subgroup_df_sum(vec2 v) {
    for (uint m = 1u; m < gl_SubgroupSize; m <<= 1u)
        v = df_add(v, vec2(subgroupShuffleXor(v.x, m), subgroupShuffleXor(v.y, m)));
    return v;
}

vec2 wg_sum(vec2 v) {
    vec2 r = subgroup_df_sum(v);
    if (subgroupElect()) {
        rayo_sh_a[gl_SubgroupID] = r.x;
        rayo_sh_b[gl_SubgroupID] = r.y;
    }
    barrier();
    if (gl_SubgroupID == 0) {
        vec2 acc = vec2(0.0);
        for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize)
            acc = df_add(acc, vec2(rayo_sh_a[i], rayo_sh_b[i]));
        vec2 t = subgroup_df_sum(acc);
        if (subgroupElect()) {
            rayo_sh_a[0] = t.x;
            rayo_sh_b[0] = t.y;
        }
    }
    barrier();
    vec2 result = vec2(rayo_sh_a[0], rayo_sh_b[0]);
    barrier();  // the shared arrays may be reused right after
    return result;
}

// The subgroup's best (value, index): NaN if any lane has one, with the smallest index among the
// lanes holding the winning value.
void rayo_subgroup_best(inout float v, inout uint idx, bool is_max) {
    bool any_nan = subgroupMax(isnan(v) ? 1u : 0u) != 0u;
    float m = RAYO_NAN;
    if (!any_nan) m = is_max ? subgroupMax(v) : subgroupMin(v);
    bool mine = any_nan ? isnan(v) : v == m;
    idx = subgroupMin(mine ? idx : RAYO_NONE);
    v = m;
}

void wg_best(inout float v, inout uint idx, bool is_max) {
    rayo_subgroup_best(v, idx, is_max);
    if (subgroupElect()) {
        rayo_sh_a[gl_SubgroupID] = v;
        rayo_sh_i[gl_SubgroupID] = idx;
    }
    barrier();
    if (gl_SubgroupID == 0) {
        float bv = is_max ? -RAYO_INF : RAYO_INF;
        uint bi = RAYO_NONE;
        for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize)
            if (rayo_better(rayo_sh_a[i], rayo_sh_i[i], bv, bi, is_max)) {
                bv = rayo_sh_a[i];
                bi = rayo_sh_i[i];
            }
        rayo_subgroup_best(bv, bi, is_max);
        if (subgroupElect()) {
            rayo_sh_a[0] = bv;
            rayo_sh_i[0] = bi;
        }
    }
    barrier();
    v = rayo_sh_a[0];
    idx = rayo_sh_i[0];
    barrier();
}

// The workgroup's largest value, NaN if any is (softmax's row maximum, which needs no index):
// subgroupMax over the non-NaN values, NaN flagged apart (subgroupMax of a NaN is undefined).
float wg_max(float v) {
    bool nan_seen = subgroupMax(isnan(v) ? 1u : 0u) != 0u;
    float m = subgroupMax(isnan(v) ? -RAYO_INF : v);
    if (subgroupElect()) rayo_sh_a[gl_SubgroupID] = nan_seen ? RAYO_NAN : m;
    barrier();
    if (gl_SubgroupID == 0) {
        float b = -RAYO_INF;
        bool b_nan = false;
        for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize) {
            float w = rayo_sh_a[i];
            if (isnan(w)) b_nan = true;
            else if (w > b) b = w;
        }
        bool any_nan = subgroupMax(b_nan ? 1u : 0u) != 0u;
        float r = subgroupMax(b);
        if (subgroupElect()) rayo_sh_a[0] = any_nan ? RAYO_NAN : r;
    }
    barrier();
    float result = rayo_sh_a[0];
    barrier();
    return result;
}

#else

vec2 wg_sum(vec2 v) {
    uint t = gl_LocalInvocationID.x;
    rayo_sh_a[t] = v.x;
    rayo_sh_b[t] = v.y;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (t < s) {
            vec2 r = df_add(vec2(rayo_sh_a[t], rayo_sh_b[t]), vec2(rayo_sh_a[t + s], rayo_sh_b[t + s]));
            rayo_sh_a[t] = r.x;
            rayo_sh_b[t] = r.y;
        }
        barrier();
    }
    vec2 result = vec2(rayo_sh_a[0], rayo_sh_b[0]);
    barrier();
    return result;
}

void wg_best(inout float v, inout uint idx, bool is_max) {
    uint t = gl_LocalInvocationID.x;
    rayo_sh_a[t] = v;
    rayo_sh_i[t] = idx;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (t < s && rayo_better(rayo_sh_a[t + s], rayo_sh_i[t + s], rayo_sh_a[t], rayo_sh_i[t], is_max)) {
            rayo_sh_a[t] = rayo_sh_a[t + s];
            rayo_sh_i[t] = rayo_sh_i[t + s];
        }
        barrier();
    }
    v = rayo_sh_a[0];
    idx = rayo_sh_i[0];
    barrier();
}

// The workgroup's largest value, NaN if any is.
float wg_max(float v) {
    uint t = gl_LocalInvocationID.x;
    rayo_sh_a[t] = v;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (t < s) {
            rayo_sh_a[t] = rayo_max_nan(rayo_sh_a[t], rayo_sh_a[t + s]);
        }
        barrier();
    }
    float result = rayo_sh_a[0];
    barrier();
    return result;
}

#endif
