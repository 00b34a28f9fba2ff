// layer_norm and rms_norm along contiguous rows. Row statistics accumulate in double (the mean,
// then the sums of the values centred on it), the per-element work is vectorised.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "rayo/cpu/reduction.hpp"
#include "rayo/cpu/simd_loop.hpp"

namespace rayo::cpu {

// y = ((x·k - c)·s + t)·gamma + beta over one row (gamma, beta optional). Centring on the float
// mean c first and adding the small correction t keeps rows with |mean| >> std accurate. k is 1,
// or for rows of huge values a power of two that keeps x·k - c finite (row_scale); x·k - c is
// then one rounding of the exact difference, as x - c is.
template <class A>
inline void affine_row(float const* x, float c, float s, float t, float const* gamma, float const* beta, float* y,
                       std::size_t n, float k = 1.0f) {
    using B = fbatch<A>;
    constexpr std::size_t w = B::size;
    B const vc(c), vs(s), vt(t), vk(k), neg_c(-c);
    std::size_t i = 0;
    auto one = [&](std::size_t, B v, B g, B b) {
        B const d = k == 1.0f ? v - vc : xsimd::fma(v, vk, neg_c);
        return xsimd::fma(xsimd::fma(d, vs, vt), g, b);
    };
    for (; i + w <= n; i += w) {
        B const g = gamma ? B::load_unaligned(gamma + i) : B(1.0f);
        B const b = beta ? B::load_unaligned(beta + i) : B(0.0f);
        one(i, B::load_unaligned(x + i), g, b).store_unaligned(y + i);
    }
    if (i < n) {
        std::size_t const c = n - i;
        B const g = gamma ? load_partial<A>(gamma + i, c, 1.0f) : B(1.0f);
        B const b = beta ? load_partial<A>(beta + i, c, 0.0f) : B(0.0f);
        alignas(64) float tmp[w];
        one(i, load_partial<A>(x + i, c, 0.0f), g, b).store_aligned(tmp);
        std::memcpy(y + i, tmp, c * sizeof(float));
    }
}

// Σ(x − c) and Σ(x − c)² over one row, in runs of floats added into doubles (as blocked_sum).
// With c the row's mean rounded to float, x − c is exact for the values near it, so the first sum
// corrects the mean and the second is the variance's numerator without cancellation.
struct CentredSums {
    double first = 0.0, second = 0.0;
};

// With k != 1 (row_scale) the sums are of x·k - c.
template <class A>
inline CentredSums centred_sums(float const* x, std::size_t n, float c, float k = 1.0f) {
    using B = fbatch<A>;
    constexpr std::size_t w = B::size;
    constexpr std::size_t block = 1024;
    B const vc(c), vk(k), neg_c(-c);
    auto centred = [&](B v) { return k == 1.0f ? v - vc : xsimd::fma(v, vk, neg_c); };
    CentredSums total;
    std::size_t i = 0;
    while (i < n) {
        std::size_t const end = n - i >= block ? i + block : n;
        B s(0.0f), q(0.0f);
        for (; i + w <= end; i += w) {
            B const d = centred(B::load_unaligned(x + i));
            s += d;
            q = xsimd::fma(d, d, q);
        }
        if (i < end && k == 1.0f) {
            B const d = load_partial<A>(x + i, end - i, c) - vc;  // the padding centres to 0
            s += d;
            q = xsimd::fma(d, d, q);
            i = end;
        }
        float tail_s = 0.0f, tail_q = 0.0f;  // scaled rows: c/k could overflow as padding
        for (; i < end; ++i) {
            float const d = std::fma(x[i], k, -c);
            tail_s += d;
            tail_q = std::fma(d, d, tail_q);
        }
        total.first += static_cast<double>(tail_s);
        total.second += static_cast<double>(tail_q);
        total.first += static_cast<double>(xsimd::hadd(s));
        total.second += static_cast<double>(xsimd::hadd(q));
    }
    return total;
}

// For a row whose float sums or squares overflowed: 1 when the row holds ±Inf or NaN (its result
// is NaN then, as documented), else the power of two that brings its largest magnitude to
// [2^39, 2^40): squares of 2^41 and sums of 1024 of them stay far below FLT_MAX, and scaling by a
// power of two loses nothing of the values that matter next to the largest.
template <class A>
inline float row_scale(float const* x, std::size_t n) {
    float const m = std::max(extreme_kernel<A, true>(x, n), -extreme_kernel<A, false>(x, n));
    if (!std::isfinite(m)) return 1.0f;
    return std::ldexp(1.0f, 39 - std::ilogb(m));
}

template <class A>
void layer_norm_rows_kernel(float const* in, float const* gamma, float const* beta, float eps, float* out,
                            std::size_t rows, std::size_t cols) {
    for (std::size_t r = 0; r < rows; ++r) {
        float const* x = in + r * cols;
        auto const n = static_cast<double>(cols);
        float k = 1.0f;
        double sum = sum_kernel<A>(x, cols);
        float c = static_cast<float>(sum / n);
        CentredSums sums{};
        if (std::isfinite(c)) sums = centred_sums<A>(x, cols, c);
        if (!std::isfinite(c) || !std::isfinite(sums.second)) {  // huge values: again, scaled by k
            k = row_scale<A>(x, cols);
            if (k != 1.0f) {
                sum = blocked_sum<A>(
                    cols, [&](std::size_t i) { return fbatch<A>::load_unaligned(x + i) * fbatch<A>(k); },
                    [&](std::size_t i, std::size_t m) { return load_partial<A>(x + i, m, 0.0f) * fbatch<A>(k); });
                c = static_cast<float>(sum / n);
                sums = centred_sums<A>(x, cols, c, k);
            } else {
                sums = centred_sums<A>(x, cols, c);
            }
        }
        // In units of x·k: the statistics and 1/σ of x·k, whose normalised values are x's.
        double const shift = sums.first / n;  // mean − c
        double const var = std::max(sums.second / n - shift * shift, 0.0);
        double const rstd = 1.0 / std::sqrt(var + static_cast<double>(eps) * k * k);
        affine_row<A>(x, c, static_cast<float>(rstd), static_cast<float>(-shift * rstd), gamma, beta, out + r * cols,
                      cols, k);
    }
}

template <class A>
void rms_norm_rows_kernel(float const* in, float const* gamma, float eps, float* out, std::size_t rows,
                          std::size_t cols) {
    for (std::size_t r = 0; r < rows; ++r) {
        float const* x = in + r * cols;
        double ms = dot_kernel<A>(x, x, cols) / static_cast<double>(cols);
        float k = 1.0f;
        if (!std::isfinite(ms) && (k = row_scale<A>(x, cols)) != 1.0f) {  // huge values: squares of x·k
            fbatch<A> const vk(k);
            ms = blocked_sum<A>(
                     cols,
                     [&](std::size_t i) {
                         auto const v = fbatch<A>::load_unaligned(x + i) * vk;
                         return v * v;
                     },
                     [&](std::size_t i, std::size_t m) {
                         auto const v = load_partial<A>(x + i, m, 0.0f) * vk;
                         return v * v;
                     }) /
                 static_cast<double>(cols);
        }
        // x·k/√(E[(x·k)²] + eps·k²) = x/√(E[x²] + eps)
        double const rs = static_cast<double>(k) / std::sqrt(ms + static_cast<double>(eps) * k * k);
        affine_row<A>(x, 0.0f, static_cast<float>(rs), 0.0f, gamma, nullptr, out + r * cols, cols);
    }
}

}  // namespace rayo::cpu
