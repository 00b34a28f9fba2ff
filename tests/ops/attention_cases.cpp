// Attention against a float64 reference: head dims 64, 80, 96, 128, 256 and 40; prefill (causal,
// q_len = kv_len), fewer queries than keys at an explicit query_offset, decode (one query row over a
// thousand keys and more, which the GPUs split across workgroups), grouped-query (8 heads over 2)
// and multi-head, masks [q_len, kv_len], [batch, 1, 1, kv_len] and [heads, q_len, 1] with −Inf
// entries and fully hidden rows (zeros), more queries than keys under the causal default (the first
// rows see nothing: zeros), NaN in q, k and v (prefill, and decode through the key split), hidden
// rows under the split, rank-3 operands, and 0-sized problems; decode with the key and value views on
// 16-byte runs (as a KV cache is) and off them; the position read from a device tensor
// (query_position: decode over a whole cache, prefill, under a mask, stored values past either end,
// clamped); at f32, f16 and bf16 (16-bit inputs are random floats rounded to the type, the reference
// computed from them).
//
// Tolerance (tolerances.cpp): |got − want| ≤ rel · max|v| · (1 + scale · |q_i| · max_j |k_j|) per
// element of row i: a score's error grows with |q_i|·|k_j| (and √head_dim, which rel absorbs), and
// moves the output by at most twice that times max|v|; the weights' and the output's own rounding
// is relative to max|v| too.
#include "ops/harness.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace rayo::test::ops {
namespace {

enum class MaskKind { none, rows_by_keys, per_batch_key, per_head_row };

struct Problem {
    std::size_t batch, q_len, kv_len, heads, kv_heads, head_dim;
    bool causal = false;
    std::optional<std::int64_t> offset = std::nullopt;
    MaskKind mask = MaskKind::none;
    bool nans = false;       // a NaN in one row of q, one key of k and one element of v
    bool rank3 = false;      // operands without the batch axis (batch 1)
    bool hide_rows = false;  // the mask hides every key of some rows
    bool aligned = false;    // k and v start on 8 elements (16-byte runs, as a KV cache does)
    std::optional<std::int32_t> stored = std::nullopt;  // query_position's value (offset unset)

    [[nodiscard]] std::string describe() const {
        return "batch " + std::to_string(batch) + ", q_len " + std::to_string(q_len) + ", kv_len " +
               std::to_string(kv_len) + ", heads " + std::to_string(heads) + "/" + std::to_string(kv_heads) +
               ", head_dim " + std::to_string(head_dim) + (causal ? ", causal" : "") +
               (offset ? ", offset " + std::to_string(*offset) : "") +
               (mask != MaskKind::none ? ", mask " + std::to_string(static_cast<int>(mask)) : "") +
               (nans ? ", NaNs" : "") + (rank3 ? ", rank 3" : "") + (aligned ? ", aligned" : "") +
               (stored ? ", stored position " + std::to_string(*stored) : "");
    }
    [[nodiscard]] std::size_t largest() const {
        return std::max(batch * q_len * heads, batch * kv_len * kv_heads) * head_dim;
    }
};

// The mask's shape and its element for (b, h, i, j).
struct Mask {
    Shape shape;
    std::vector<float> values;
    std::size_t sb = 0, sh = 0, si = 0, sj = 0;
    [[nodiscard]] double at(std::size_t b, std::size_t h, std::size_t i, std::size_t j) const {
        return values[b * sb + h * sh + i * si + j * sj];
    }
};

Mask make_mask(CaseContext& ctx, Problem const& p) {
    auto const i64 = [](std::size_t x) { return static_cast<std::int64_t>(x); };
    Mask m;
    switch (p.mask) {
        case MaskKind::none: return m;
        case MaskKind::rows_by_keys:
            m.shape = Shape{i64(p.q_len), i64(p.kv_len)};
            m.si = p.kv_len;
            m.sj = 1;
            break;
        case MaskKind::per_batch_key:
            m.shape = Shape{i64(p.batch), 1, 1, i64(p.kv_len)};
            m.sb = p.kv_len;
            m.sj = 1;
            break;
        case MaskKind::per_head_row:
            m.shape = Shape{i64(p.heads), i64(p.q_len), 1};
            m.sh = p.q_len;
            m.si = 1;
            break;
    }
    m.values = ctx.values(m.shape.numel(), {-3, 1}, Specials::none);
    float const inf = std::numeric_limits<float>::infinity();
    for (std::size_t e = 0; e < m.values.size(); e += 5) m.values[e] = -inf;
    if (p.hide_rows && p.mask == MaskKind::rows_by_keys)  // rows 1 and 4 (when there) see nothing
        for (std::size_t i : {std::size_t{1}, std::size_t{4}})
            if (i < p.q_len) std::fill_n(m.values.begin() + static_cast<std::ptrdiff_t>(i * p.kv_len), p.kv_len, -inf);
    return m;
}

// out[b, i, h, :] in float64 from the stored (rounded) inputs.
std::vector<double> reference(Problem const& p, std::vector<float> const& q, std::vector<float> const& k,
                              std::vector<float> const& v, Mask const& mask, float scale, std::int64_t offset) {
    std::size_t const d = p.head_dim, group = p.heads / p.kv_heads;
    std::vector<double> out(p.batch * p.q_len * p.heads * d, 0.0), s(p.kv_len);
    std::vector<char> seen(p.kv_len);
    for (std::size_t b = 0; b < p.batch; ++b)
        for (std::size_t h = 0; h < p.heads; ++h)
            for (std::size_t i = 0; i < p.q_len; ++i) {
                float const* qi = q.data() + ((b * p.q_len + i) * p.heads + h) * d;
                double m = -std::numeric_limits<double>::infinity();
                bool any_nan = false;
                for (std::size_t j = 0; j < p.kv_len; ++j) {
                    seen[j] = !p.causal || static_cast<std::int64_t>(j) <= offset + static_cast<std::int64_t>(i);
                    if (!seen[j]) continue;
                    float const* kj = k.data() + ((b * p.kv_len + j) * p.kv_heads + h / group) * d;
                    double dot = 0;
                    for (std::size_t c = 0; c < d; ++c) dot += double(qi[c]) * kj[c];
                    s[j] = dot * scale + (mask.values.empty() ? 0.0 : mask.at(b, h, i, j));
                    any_nan |= std::isnan(s[j]);
                    m = std::max(m, s[j]);
                }
                double* o = out.data() + ((b * p.q_len + i) * p.heads + h) * d;
                if (any_nan) {
                    std::fill_n(o, d, std::numeric_limits<double>::quiet_NaN());
                    continue;
                }
                if (m == -std::numeric_limits<double>::infinity()) continue;  // sees no key: zeros
                double sum = 0;
                for (std::size_t j = 0; j < p.kv_len; ++j) {
                    if (!seen[j]) continue;
                    double const w = std::exp(s[j] - m);
                    sum += w;
                    float const* vj = v.data() + ((b * p.kv_len + j) * p.kv_heads + h / group) * d;
                    for (std::size_t c = 0; c < d; ++c) o[c] += w * vj[c];
                }
                for (std::size_t c = 0; c < d; ++c) o[c] /= sum;
            }
    return out;
}

double max_abs(float const* x, std::size_t n) {
    double m = 0;
    for (std::size_t i = 0; i < n; ++i)
        if (!std::isnan(x[i])) m = std::max(m, double(std::abs(x[i])));
    return m;
}

template <class T>
void check_problem(CaseContext& ctx, Problem const& p, std::size_t index) {
    SCOPED_TRACE(p.describe());
    auto const i64 = [](std::size_t x) { return static_cast<std::int64_t>(x); };
    auto const shape = [&](std::size_t len, std::size_t heads) {
        return p.rank3 ? Shape{i64(len), i64(heads), i64(p.head_dim)}
                       : Shape{i64(p.batch), i64(len), i64(heads), i64(p.head_dim)};
    };
    Shape const q_shape = shape(p.q_len, p.heads), kv_shape = shape(p.kv_len, p.kv_heads);
    std::size_t const d = p.head_dim;
    std::vector<T> const q16 = rounded_to<T>(ctx.values(q_shape.numel(), {-1.5f, 1.5f}, Specials::none));
    std::vector<T> const k16 = rounded_to<T>(ctx.values(kv_shape.numel(), {-1.5f, 1.5f}, Specials::none));
    std::vector<T> v16 = rounded_to<T>(ctx.values(kv_shape.numel(), {-2, 2}, Specials::none));
    std::vector<float> q(q16.begin(), q16.end()), k(k16.begin(), k16.end()), v(v16.begin(), v16.end());
    if (p.nans) {
        float const nan = std::numeric_limits<float>::quiet_NaN();
        q[(std::min<std::size_t>(1, p.q_len - 1) * p.heads + 0) * d + 3] = nan;  // row 1 (or 0) of head 0: NaN
        k[(2 * p.kv_heads + p.kv_heads - 1) * d + 5] = nan;  // key 2 of the last kv head: its heads NaN
        v[(3 * p.kv_heads + 0) * d + 7] = nan;               // column 7 of kv head 0's heads: NaN
    }
    Mask const mask = make_mask(ctx, p);
    float const scale = 1.0f / std::sqrt(static_cast<float>(std::max<std::size_t>(d, 1)));
    std::int64_t const offset = p.stored ? std::clamp<std::int64_t>(*p.stored, 0, i64(p.kv_len))
                                         : p.offset.value_or(i64(p.kv_len) - i64(p.q_len));
    std::vector<double> const want = reference(p, q, k, v, mask, scale, offset);

    AttentionParams params;
    params.causal = p.causal;
    params.query_offset = p.offset;
    if (p.stored) params.query_position = ctx.input(std::vector<std::int32_t>{*p.stored}, Shape{1}, index % 2);
    if (p.mask != MaskKind::none) params.mask = ctx.input(mask.values, mask.shape, index % 2);
    Guarded<T> out = ctx.output<T>(q_shape, index % 3);
    std::size_t const run = p.aligned ? 8 : 1;
    attention_into(ctx.input(rounded_to<T>(q), q_shape, index % 2),
                   ctx.input(rounded_to<T>(k), kv_shape, (index + 1) % 2 * run),
                   ctx.input(rounded_to<T>(v), kv_shape, index % 3 * run), params, out.tensor());

    // Per (batch, kv head): max |v| and max |k_j|; per row: |q_i|.
    std::size_t const group = p.kv_heads ? p.heads / p.kv_heads : 1;
    std::vector<double> v_max(p.batch * p.kv_heads, 0.0), k_max(p.batch * p.kv_heads, 0.0);
    for (std::size_t b = 0; b < p.batch; ++b)
        for (std::size_t j = 0; j < p.kv_len; ++j)
            for (std::size_t g = 0; g < p.kv_heads; ++g) {
                std::size_t const at = ((b * p.kv_len + j) * p.kv_heads + g) * d;
                double norm = 0;
                for (std::size_t c = 0; c < d; ++c) norm += double(k[at + c]) * k[at + c];
                k_max[b * p.kv_heads + g] = std::max(k_max[b * p.kv_heads + g], std::sqrt(norm));
                v_max[b * p.kv_heads + g] = std::max(v_max[b * p.kv_heads + g], max_abs(v.data() + at, d));
            }
    auto const where = [&](std::size_t e) {
        std::size_t const c = e % d, h = e / d % p.heads, i = e / d / p.heads % p.q_len, b = e / d / p.heads / p.q_len;
        return std::array<std::size_t, 4>{b, i, h, c};
    };
    ctx.expect_close(out, {.want = [&](std::size_t e) { return want[e]; },
                           .describe =
                               [&](std::size_t e) {
                                   auto const [b, i, h, c] = where(e);
                                   return "batch " + std::to_string(b) + ", row " + std::to_string(i) + ", head " +
                                          std::to_string(h) + ", column " + std::to_string(c);
                               },
                           .scale =
                               [&](std::size_t e) {
                                   auto const [b, i, h, c] = where(e);
                                   std::size_t const g = b * p.kv_heads + h / group;
                                   double const q_norm = std::sqrt([&] {
                                       double n = 0;
                                       for (std::size_t x = 0; x < d; ++x) n += double(q[e - c + x]) * q[e - c + x];
                                       return n;
                                   }());
                                   return v_max[g] * (1.0 + scale * q_norm * k_max[g]);
                               }});
}

std::vector<Problem> problems() {
    return {
        {.batch = 2, .q_len = 5, .kv_len = 37, .heads = 4, .kv_heads = 2, .head_dim = 64},
        {.batch = 1, .q_len = 33, .kv_len = 33, .heads = 2, .kv_heads = 2, .head_dim = 80, .causal = true},
        {.batch = 1,
         .q_len = 9,
         .kv_len = 70,
         .heads = 3,
         .kv_heads = 1,
         .head_dim = 96,
         .causal = true,
         .offset = 40,
         .mask = MaskKind::rows_by_keys},
        {.batch = 1, .q_len = 1, .kv_len = 1000, .heads = 4, .kv_heads = 1, .head_dim = 64, .causal = true},
        {.batch = 2,
         .q_len = 1,
         .kv_len = 1100,
         .heads = 8,
         .kv_heads = 2,
         .head_dim = 128,
         .causal = true,
         .aligned = true},
        {.batch = 2,
         .q_len = 3,
         .kv_len = 300,
         .heads = 2,
         .kv_heads = 2,
         .head_dim = 128,
         .mask = MaskKind::per_batch_key},
        {.batch = 1,
         .q_len = 16,
         .kv_len = 40,
         .heads = 4,
         .kv_heads = 2,
         .head_dim = 128,
         .causal = true,
         .mask = MaskKind::per_batch_key},
        {.batch = 1,
         .q_len = 17,
         .kv_len = 17,
         .heads = 2,
         .kv_heads = 1,
         .head_dim = 256,
         .causal = true,
         .mask = MaskKind::per_batch_key},
        {.batch = 1,
         .q_len = 12,
         .kv_len = 20,
         .heads = 2,
         .kv_heads = 2,
         .head_dim = 40,
         .mask = MaskKind::rows_by_keys,
         .rank3 = true,
         .hide_rows = true},
        {.batch = 1, .q_len = 6, .kv_len = 10, .heads = 2, .kv_heads = 2, .head_dim = 64, .nans = true},
        {.batch = 1,
         .q_len = 1,
         .kv_len = 700,
         .heads = 4,
         .kv_heads = 2,
         .head_dim = 64,
         .nans = true,
         .aligned = true},
        {.batch = 1,
         .q_len = 2,
         .kv_len = 600,
         .heads = 2,
         .kv_heads = 1,
         .head_dim = 64,
         .mask = MaskKind::rows_by_keys,
         .hide_rows = true},
        {.batch = 1, .q_len = 7, .kv_len = 4, .heads = 2, .kv_heads = 1, .head_dim = 64, .causal = true},
        // Decode over a short cache: splits of one tile where longer ones leave multiprocessors idle.
        {.batch = 1, .q_len = 1, .kv_len = 100, .heads = 4, .kv_heads = 1, .head_dim = 128, .causal = true},
        // Decode at an offset short of the cache's end (keys past it unseen), a group of 3, head_dim 40
        // (five 16-byte runs of f16); and a group of 16 query heads a key/value head.
        {.batch = 2,
         .q_len = 1,
         .kv_len = 90,
         .heads = 6,
         .kv_heads = 2,
         .head_dim = 40,
         .causal = true,
         .offset = 50,
         .aligned = true},
        {.batch = 1, .q_len = 1, .kv_len = 130, .heads = 16, .kv_heads = 1, .head_dim = 64, .causal = true},
        // Decode with the largest group a decode workgroup takes (8) at head_dim 256, and with one
        // query head a key/value head over a cache of 45 keys (a split of 13) at head_dim 36 (not whole
        // 16-byte runs of f16).
        {.batch = 1, .q_len = 1, .kv_len = 77, .heads = 8, .kv_heads = 1, .head_dim = 256, .aligned = true},
        {.batch = 1,
         .q_len = 1,
         .kv_len = 45,
         .heads = 3,
         .kv_heads = 3,
         .head_dim = 36,
         .causal = true,
         .aligned = true},
        {.batch = 1,
         .q_len = 70,
         .kv_len = 130,
         .heads = 8,
         .kv_heads = 2,
         .head_dim = 64,
         .causal = true,
         .mask = MaskKind::per_head_row},
        // Prefill long enough for the GPUs' blocks of 128 query rows (Hopper's wgmma kernel): two row
        // blocks, more key blocks than the rings' two slots, a partial last key block; NaN/Inf at d 64.
        // (Past the simulator's budget: CudaAttentionSimulated runs that kernel on smaller shapes.)
        {.batch = 1,
         .q_len = 136,
         .kv_len = 520,
         .heads = 2,
         .kv_heads = 1,
         .head_dim = 128,
         .causal = true,
         .offset = 384},
        {.batch = 1, .q_len = 80, .kv_len = 1030, .heads = 2, .kv_heads = 1, .head_dim = 64, .nans = true},
        {.batch = 2, .q_len = 0, .kv_len = 9, .heads = 2, .kv_heads = 1, .head_dim = 64},
        {.batch = 1, .q_len = 3, .kv_len = 0, .heads = 2, .kv_heads = 1, .head_dim = 64, .causal = true},
        {.batch = 0, .q_len = 3, .kv_len = 5, .heads = 2, .kv_heads = 2, .head_dim = 64},
        // Decode over a cache of 5 keys, of one key seen (query_offset 0) and of none (zeros); and a
        // cache long enough for splits of 128 keys (the last of 4) over 32 query heads of 8 key/value heads.
        {.batch = 1, .q_len = 1, .kv_len = 5, .heads = 4, .kv_heads = 2, .head_dim = 64, .aligned = true},
        {.batch = 1,
         .q_len = 1,
         .kv_len = 40,
         .heads = 2,
         .kv_heads = 1,
         .head_dim = 64,
         .causal = true,
         .offset = 0,
         .aligned = true},
        {.batch = 2, .q_len = 1, .kv_len = 0, .heads = 2, .kv_heads = 1, .head_dim = 64, .aligned = true},
        {.batch = 2,
         .q_len = 1,
         .kv_len = 4100,
         .heads = 32,
         .kv_heads = 8,
         .head_dim = 128,
         .causal = true,
         .aligned = true},
        // The position from a device tensor: decode over a whole cache of which it sees 700 keys (and,
        // unaligned, 31), two query rows, prefill on the tensor-core shapes, under a mask, and stored
        // values past either end of the keys (taken as kv_len and 0).
        {.batch = 2,
         .q_len = 1,
         .kv_len = 1100,
         .heads = 8,
         .kv_heads = 2,
         .head_dim = 128,
         .causal = true,
         .aligned = true,
         .stored = 699},
        {.batch = 1, .q_len = 1, .kv_len = 90, .heads = 6, .kv_heads = 2, .head_dim = 40, .causal = true, .stored = 30},
        {.batch = 1,
         .q_len = 2,
         .kv_len = 300,
         .heads = 4,
         .kv_heads = 1,
         .head_dim = 64,
         .causal = true,
         .aligned = true,
         .stored = 150},
        {.batch = 1,
         .q_len = 136,
         .kv_len = 520,
         .heads = 2,
         .kv_heads = 1,
         .head_dim = 128,
         .causal = true,
         .stored = 200},
        {.batch = 1,
         .q_len = 9,
         .kv_len = 70,
         .heads = 3,
         .kv_heads = 1,
         .head_dim = 96,
         .causal = true,
         .mask = MaskKind::rows_by_keys,
         .stored = 33},
        {.batch = 1,
         .q_len = 3,
         .kv_len = 50,
         .heads = 4,
         .kv_heads = 2,
         .head_dim = 64,
         .causal = true,
         .aligned = true,
         .stored = 1 << 30},
        {.batch = 1,
         .q_len = 1,
         .kv_len = 50,
         .heads = 4,
         .kv_heads = 2,
         .head_dim = 64,
         .causal = true,
         .aligned = true,
         .stored = -5},
    };
}

template <class T>
void check(CaseContext& ctx) {
    std::vector<Problem> const all = problems();
    for (std::size_t n = 0; n < all.size(); ++n)
        if (ctx.fits(all[n].largest())) ctx.attempt([&] { check_problem<T>(ctx, all[n], n); });
    // The returning form gives what attention_into wrote.
    std::vector<T> const x = rounded_to<T>(ctx.values(2 * 3 * 4 * 64, {-1, 1}, Specials::none));
    Tensor<T> const q = ctx.input(x, Shape{2, 3, 4, 64});
    Tensor<T> const kv = ctx.input(x, Shape{2, 3, 4, 64}, 2);
    AttentionParams causal;
    causal.causal = true;
    Tensor<T> const got = attention(q, kv, kv, causal);
    Tensor<T> const into = Tensor<T>::empty(q.shape(), ctx.device());
    attention_into(q, kv, kv, causal, into);
    EXPECT_EQ(got.to_vector(), into.to_vector()) << "attention and attention_into differ";
}

std::vector<OpCase> cases() {
    return {{"attention", Op::attention, DType::f32, check<float>},
            {"attention_f16", Op::attention, DType::f16, check<half>},
            {"attention_bf16", Op::attention, DType::bf16, check<bfloat16>}};
}

CaseRegistration const registration(cases());

}  // namespace
}  // namespace rayo::test::ops
