// Reductions over [outer, extent, inner] (sum, max, min, argmax, argmin, and dot as a sum of
// products), included by reduce.comp and reduce_subgroup.comp. One output per (outer, inner)
// pair; its extent may be split into `chunks` contiguous chunks whose partial results go to a
// temporary buffer and are combined, in chunk order, by a second dispatch (MODE 2). Nothing
// depends on timing: no atomics, a fixed tree per workgroup.
//
// MODE 0 (inner == 1, long extent): one workgroup per (output, chunk); its invocations stride
//         over the chunk.
// MODE 1 (inner > 1, or a short extent): one invocation per (output, chunk); neighbouring
//         invocations take neighbouring outputs, so loads down a strided extent are coalesced.
// MODE 2: one workgroup per output combines its chunks' partials (written by MODE 0 or 1).

#include "op_codes.glsl"

layout(constant_id = 0) const uint OP = RAYO_OP_SUM;  // sum, max, min, argmax or argmin (op_codes.glsl)
layout(constant_id = 2) const uint MODE = 0;
layout(constant_id = 3) const bool PRODUCT = false;  // dot: reduce x·y
layout(constant_id = 4) const bool FINAL = true;     // write outputs (else partials)

struct Partial {
    float hi;
    float lo;
    uint index;  // within the extent
    uint unused;
};

// x and y: f32, or with RAYO_ELEMENT16 (the reduce_element16 builds) f16 / bf16 (element16.glsl),
// read as float; partials and results are f32 (i64 indices) either way.
#include "element16.glsl"
#ifdef RAYO_ELEMENT16
layout(std430, set = 0, binding = 0) readonly buffer Input { uint16_t x[]; };
#define load_x(i) element_to_float(uint(x[i]))
#define load_y(i) element_to_float(uint(y[i]))
#else
layout(std430, set = 0, binding = 0) readonly buffer Input { float x[]; };
#define load_x(i) x[i]
#define load_y(i) y[i]
#endif
layout(std430, set = 0, binding = 1) writeonly buffer Output { uint out_words[]; };
layout(std430, set = 0, binding = 2) buffer Partials { Partial parts[]; };
#ifdef RAYO_ELEMENT16
layout(std430, set = 0, binding = 3) readonly buffer InputB { uint16_t y[]; };
#else
layout(std430, set = 0, binding = 3) readonly buffer InputB { float y[]; };
#endif

layout(push_constant) uniform Params {
    uint outputs;    // outer · inner
    uint extent;
    uint inner;
    uint chunks;     // per output
    uint chunk_len;  // extent elements per chunk (the last may be shorter)
    uint x_offset;   // elements
    uint y_offset;
    uint out_offset;  // 32-bit words
    uint mean;       // divide sums by the extent
} params;

const bool IS_SUM = OP == RAYO_OP_SUM;
const bool IS_MAX = OP == RAYO_OP_MAX || OP == RAYO_OP_ARGMAX;
const bool IS_ARG = OP == RAYO_OP_ARGMAX || OP == RAYO_OP_ARGMIN;

struct Acc {
    vec2 sum;
    float best;
    uint index;
};

Acc acc_empty() {
    Acc a;
    a.sum = vec2(0.0);
    a.best = IS_MAX ? -RAYO_INF : RAYO_INF;
    a.index = RAYO_NONE;
    return a;
}

// Element e (of the extent) of output p.
float element(uint p, uint e) {
    uint o = p / params.inner, j = p - o * params.inner;
    uint i = (o * params.extent + e) * params.inner + j;
    if (PRODUCT) {
        precise float v = load_x(params.x_offset + i) * load_y(params.y_offset + i);
        return v;
    }
    return load_x(params.x_offset + i);
}

void acc_add(inout Acc a, float v, uint e) {
    if (IS_SUM) a.sum = df_add1(a.sum, v);
    else if (rayo_better(v, e, a.best, a.index, IS_MAX)) {
        a.best = v;
        a.index = e;
    }
}

void acc_merge(inout Acc a, Partial q) {
    if (IS_SUM) a.sum = df_add(a.sum, vec2(q.hi, q.lo));
    else if (rayo_better(q.hi, q.index, a.best, a.index, IS_MAX)) {
        a.best = q.hi;
        a.index = q.index;
    }
}

// Writes the result of output p (FINAL) or partial w.
void store(Acc a, uint p, uint w) {
    if (!FINAL) {
        Partial q;
        q.hi = IS_SUM ? a.sum.x : a.best;
        q.lo = IS_SUM ? a.sum.y : 0.0;
        q.index = a.index;
        q.unused = 0;
        parts[w] = q;
    } else if (IS_ARG) {
        // int64 little-endian; an index fits 32 bits (a binding holds < 2^32 bytes).
        out_words[params.out_offset + 2 * p] = a.index;
        out_words[params.out_offset + 2 * p + 1] = 0u;
    } else {
        float v = a.best;
        if (IS_SUM) {
            float s = df_value(a.sum);
            v = params.mean != 0u ? rayo_div(s, float(params.extent)) : s;
        }
        out_words[params.out_offset + p] = floatBitsToUint(v);
    }
}

// Reduces the workgroup's accumulators into every invocation's.
void wg_reduce(inout Acc a) {
    if (IS_SUM) a.sum = wg_sum(a.sum);
    else wg_best(a.best, a.index, IS_MAX);
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint work = params.outputs * params.chunks;
    if (MODE == 0) {
        for (uint w = gl_WorkGroupID.x; w < work; w += gl_NumWorkGroups.x) {  // uniform in the workgroup
            uint p = w / params.chunks, c = w - p * params.chunks;
            uint begin = c * params.chunk_len, end = min(params.extent, begin + params.chunk_len);
            Acc a = acc_empty();
            for (uint e = begin + t; e < end; e += gl_WorkGroupSize.x) acc_add(a, element(p, e), e);
            wg_reduce(a);
            if (t == 0) store(a, p, w);
        }
    } else if (MODE == 1) {
        uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
        for (uint w = gl_GlobalInvocationID.x; w < work; w += stride) {
            uint c = w / params.outputs, p = w - c * params.outputs;
            uint begin = c * params.chunk_len, end = min(params.extent, begin + params.chunk_len);
            Acc a = acc_empty();
            for (uint e = begin; e < end; ++e) acc_add(a, element(p, e), e);
            store(a, p, p * params.chunks + c);
        }
    } else {
        for (uint p = gl_WorkGroupID.x; p < params.outputs; p += gl_NumWorkGroups.x) {
            Acc a = acc_empty();
            for (uint c = t; c < params.chunks; c += gl_WorkGroupSize.x) acc_merge(a, parts[p * params.chunks + c]);
            wg_reduce(a);
            if (t == 0) store(a, p, p);
        }
    }
}
