// The online-softmax step of flash attention for one tile of scores (a block of query rows × a
// block of keys): the scores scaled, masked and turned into weights against each row's running
// maximum, the running sums and output rows rescaled when the maximum grows. The products around
// it (q·kᵀ and weights·v) run on the GEMM micro-kernel (src/cpu/ops/attention.cpp).
//
// Compiled once per ISA (see src/cpu/kernel_table.hpp): templates on the xsimd arch, raw pointers.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "rayo/cpu/attention_tile.hpp"
#include "rayo/cpu/simd_loop.hpp"
#include "rayo/cpu/vector_math.hpp"

namespace rayo::cpu {

namespace attention_detail {

// The scores of one row scaled and masked, the first n of cols seen (the rest −inf); their maximum,
// NaN when one of them is.
template <class A>
inline float prepare_row(float* s, std::size_t n, std::size_t cols, float scale, float const* mask) {
    using B = fbatch<A>;
    constexpr std::size_t w = B::size;
    float constexpr neg_inf = -std::numeric_limits<float>::infinity();
    B const sc(scale);
    B m(neg_inf);
    auto nan = m != m;
    std::size_t c = 0;
    for (; c + w <= n; c += w) {
        B x = B::load_unaligned(s + c) * sc;
        if (mask) x += B::load_unaligned(mask + c);
        x.store_unaligned(s + c);
        m = xsimd::max(m, x);
        nan = nan || x != x;
    }
    float tail_max = neg_inf;
    bool tail_nan = false;
    for (; c < n; ++c) {
        float x = s[c] * scale;
        if (mask) x += mask[c];
        s[c] = x;
        tail_max = x > tail_max ? x : tail_max;
        tail_nan = tail_nan || x != x;
    }
    for (; c < cols; ++c) s[c] = neg_inf;
    if (tail_nan || xsimd::any(nan)) return std::numeric_limits<float>::quiet_NaN();
    float const vm = horizontal_max<A>(m);
    return vm > tail_max ? vm : tail_max;
}

// s[c] = exp(s[c] − m) for c < cols; their sum.
template <class A>
inline float exponentiate_row(float* s, std::size_t cols, float m) {
    using B = fbatch<A>;
    constexpr std::size_t w = B::size;
    B const mb(m);
    B sum(0.0f);
    std::size_t c = 0;
    for (; c + w <= cols; c += w) {
        B const p = math::exp(B::load_unaligned(s + c) - mb);
        p.store_unaligned(s + c);
        sum += p;
    }
    alignas(64) float lanes[w];
    sum.store_aligned(lanes);
    float total = 0.0f;
    for (float x : lanes) total += x;
    if (c < cols) {
        B const p = math::exp(load_partial<A>(s + c, cols - c, -std::numeric_limits<float>::infinity()) - mb);
        p.store_aligned(lanes);
        for (std::size_t i = 0; i < cols - c; ++i) {
            s[c + i] = lanes[i];
            total += lanes[i];
        }
    }
    return total;
}

template <class A>
inline void scale_row(float* o, std::size_t n, float f) {
    using B = fbatch<A>;
    constexpr std::size_t w = B::size;
    B const fb(f);
    std::size_t c = 0;
    for (; c + w <= n; c += w) (B::load_unaligned(o + c) * fb).store_unaligned(o + c);
    for (; c < n; ++c) o[c] *= f;
}

}  // namespace attention_detail

template <class A>
void attention_tile_kernel(AttentionTile const& t) {
    using namespace attention_detail;
    float constexpr neg_inf = -std::numeric_limits<float>::infinity();
    for (std::size_t r = 0; r < t.rows; ++r) {
        float* s = t.scores + r * t.ld;
        std::int64_t const seen = t.visible + static_cast<std::int64_t>(r) * t.visible_step;
        std::size_t const n = seen <= 0                                   ? 0
                              : seen >= static_cast<std::int64_t>(t.cols) ? t.cols
                                                                          : static_cast<std::size_t>(seen);
        float const block_max = prepare_row<A>(s, n, t.cols, t.scale, t.mask ? t.mask + r * t.mask_row : nullptr);
        float const old_max = t.row_max[r];
        float const new_max = block_max > old_max ? block_max : (block_max != block_max ? block_max : old_max);
        if (new_max == neg_inf) {  // nothing seen yet: weights 0, the state unchanged
            for (std::size_t c = 0; c < t.cols; ++c) s[c] = 0.0f;
            continue;
        }
        float const sum = exponentiate_row<A>(s, t.cols, new_max);
        if (new_max != old_max) {
            float const correction = old_max == neg_inf ? 0.0f : std::exp(old_max - new_max);
            t.row_sum[r] *= correction;
            scale_row<A>(t.out + r * t.ld_out, t.out_cols, correction);
        }
        t.row_max[r] = new_max;
        t.row_sum[r] += sum;
    }
}

}  // namespace rayo::cpu
