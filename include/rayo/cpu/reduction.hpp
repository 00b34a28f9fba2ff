// Reductions: sum, max, min, argmax, argmin over a contiguous run or down the columns of a block,
// and dot products. Sums are blocked (float runs added into double); extremes propagate NaN and
// report the first index of the extreme value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "rayo/cpu/simd_loop.hpp"
#include "rayo/op_table.hpp"

namespace rayo::cpu {

template <class A>
double sum_kernel(float const* in, std::size_t n) {
    using B = fbatch<A>;
    return blocked_sum<A>(
        n, [&](std::size_t i) { return B::load_unaligned(in + i); },
        [&](std::size_t i, std::size_t c) { return load_partial<A>(in + i, c, 0.0f); });
}

template <class A>
double dot_kernel(float const* a, float const* b, std::size_t n) {
    using B = fbatch<A>;
    return blocked_sum<A>(
        n, [&](std::size_t i) { return B::load_unaligned(a + i) * B::load_unaligned(b + i); },
        [&](std::size_t i, std::size_t c) {
            return load_partial<A>(a + i, c, 0.0f) * load_partial<A>(b + i, c, 0.0f);
        });
}

// The extreme value of in[0..n) (NaN if any element is NaN); n > 0.
template <class A, bool is_max>
float extreme_kernel(float const* in, std::size_t n) {
    using B = fbatch<A>;
    constexpr std::size_t w = B::size;
    float const pad = is_max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    B m0(pad), m1(pad);
    auto nan = xsimd::isnan(B(0.0f));  // all false
    auto step = [&](B& m, B x) {
        nan = nan | xsimd::isnan(x);
        m = is_max ? xsimd::max(m, x) : xsimd::min(m, x);
    };
    std::size_t i = 0;
    for (; i + 2 * w <= n; i += 2 * w) {
        step(m0, B::load_unaligned(in + i));
        step(m1, B::load_unaligned(in + i + w));
    }
    for (; i + w <= n; i += w) step(m0, B::load_unaligned(in + i));
    if (i < n) step(m1, load_partial<A>(in + i, n - i, pad));
    if (xsimd::any(nan)) return std::numeric_limits<float>::quiet_NaN();
    return is_max ? horizontal_max<A>(xsimd::max(m0, m1)) : horizontal_min<A>(xsimd::min(m0, m1));
}

// First index i with in[i] == value (or in[i] is NaN when value is NaN); n when none.
template <class A>
std::size_t find_first_kernel(float const* in, std::size_t n, float value) {
    using B = fbatch<A>;
    constexpr std::size_t w = B::size;
    bool const find_nan = value != value;
    B const v(value);
    std::size_t i = 0;
    for (; i + w <= n; i += w) {
        B const x = B::load_unaligned(in + i);
        if (xsimd::any(find_nan ? xsimd::isnan(x) : (x == v))) break;
    }
    for (; i < n; ++i)
        if (find_nan ? in[i] != in[i] : in[i] == value) return i;
    return n;
}

// Column reductions of rows x cols (row stride `stride`): value[j] (double) and, for the arg
// reductions, index[j]. Each lane tracks its best value and row; a NaN, once taken, is kept.
template <class A>
void reduce_columns_kernel(Op op, float const* in, std::size_t rows, std::size_t cols, std::size_t stride,
                           double* value, std::int64_t* index) {
    using B = fbatch<A>;
    constexpr std::size_t w = B::size;
    if (op == Op::sum) {
        constexpr std::size_t block = 64;
        std::size_t j = 0;
        for (; j + w <= cols; j += w) {
            double acc[w] = {};
            for (std::size_t r0 = 0; r0 < rows; r0 += block) {
                std::size_t const r1 = rows - r0 < block ? rows : r0 + block;
                B s(0.0f);
                for (std::size_t r = r0; r < r1; ++r) s += B::load_unaligned(in + r * stride + j);
                alignas(64) float t[w];
                s.store_aligned(t);
                for (std::size_t l = 0; l < w; ++l) acc[l] += t[l];
            }
            for (std::size_t l = 0; l < w; ++l) value[j + l] = acc[l];
        }
        for (; j < cols; ++j) {
            double acc = 0.0;
            for (std::size_t r = 0; r < rows; ++r) acc += in[r * stride + j];
            value[j] = acc;
        }
        return;
    }
    bool const is_max = op == Op::max || op == Op::argmax;
    // Row numbers ride along as floats, exact below 2^24 rows; taller blocks take the scalar loop.
    std::size_t j = 0;
    if (rows < (std::size_t{1} << 24)) {
        for (; j + w <= cols; j += w) {
            B best = B::load_unaligned(in + j);
            B best_row(0.0f);
            for (std::size_t r = 1; r < rows; ++r) {
                B const x = B::load_unaligned(in + r * stride + j);
                auto const better = (is_max ? (x > best) : (x < best)) | (xsimd::isnan(x) & ~xsimd::isnan(best));
                best = xsimd::select(better, x, best);
                best_row = xsimd::select(better, B(static_cast<float>(r)), best_row);
            }
            alignas(64) float bv[w], br[w];
            best.store_aligned(bv);
            best_row.store_aligned(br);
            for (std::size_t l = 0; l < w; ++l) {
                value[j + l] = bv[l];
                if (index) index[j + l] = static_cast<std::int64_t>(br[l]);
            }
        }
    }
    for (; j < cols; ++j) {
        float best = in[j];
        std::size_t best_row = 0;
        for (std::size_t r = 1; r < rows && best == best; ++r) {
            float const x = in[r * stride + j];
            if (x != x || (is_max ? x > best : x < best)) {
                best = x;
                best_row = r;
            }
        }
        value[j] = best;
        if (index) index[j] = static_cast<std::int64_t>(best_row);
    }
}

}  // namespace rayo::cpu
