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

// y = ((x - c)·s + t)·gamma + beta over one row (gamma, beta optional). Centring on the float
// mean c first and adding the small correction t keeps rows with |mean| >> std accurate.
template <class A>
inline void affine_row(float const* x, float c, float s, float t, float const* gamma, float const* beta, float* y,
                       std::size_t n) {
    using B = fbatch<A>;
    constexpr std::size_t w = B::size;
    B const vc(c), vs(s), vt(t);
    std::size_t i = 0;
    auto one = [&](std::size_t, B v, B g, B b) { return xsimd::fma(xsimd::fma(v - vc, vs, vt), g, b); };
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

template <class A>
inline CentredSums centred_sums(float const* x, std::size_t n, float c) {
    using B = fbatch<A>;
    constexpr std::size_t w = B::size;
    constexpr std::size_t block = 1024;
    B const vc(c);
    CentredSums total;
    std::size_t i = 0;
    while (i < n) {
        std::size_t const end = n - i >= block ? i + block : n;
        B s(0.0f), q(0.0f);
        for (; i + w <= end; i += w) {
            B const d = B::load_unaligned(x + i) - vc;
            s += d;
            q = xsimd::fma(d, d, q);
        }
        if (i < end) {
            B const d = load_partial<A>(x + i, end - i, c) - vc;
            s += d;
            q = xsimd::fma(d, d, q);
            i = end;
        }
        total.first += static_cast<double>(xsimd::hadd(s));
        total.second += static_cast<double>(xsimd::hadd(q));
    }
    return total;
}

template <class A>
void layer_norm_rows_kernel(float const* in, float const* gamma, float const* beta, float eps, float* out,
                            std::size_t rows, std::size_t cols) {
    for (std::size_t r = 0; r < rows; ++r) {
        float const* x = in + r * cols;
        auto const n = static_cast<double>(cols);
        float const c = static_cast<float>(sum_kernel<A>(x, cols) / n);
        CentredSums const sums = centred_sums<A>(x, cols, c);
        double const shift = sums.first / n;  // mean − c
        double const var = std::max(sums.second / n - shift * shift, 0.0);
        double const rstd = 1.0 / std::sqrt(var + static_cast<double>(eps));
        affine_row<A>(x, c, static_cast<float>(rstd), static_cast<float>(-shift * rstd), gamma, beta, out + r * cols,
                      cols);
    }
}

template <class A>
void rms_norm_rows_kernel(float const* in, float const* gamma, float eps, float* out, std::size_t rows, std::size_t cols) {
    for (std::size_t r = 0; r < rows; ++r) {
        float const* x = in + r * cols;
        double const ms = dot_kernel<A>(x, x, cols) / static_cast<double>(cols);
        double const rs = 1.0 / std::sqrt(ms + static_cast<double>(eps));
        affine_row<A>(x, 0.0f, static_cast<float>(rs), 0.0f, gamma, nullptr, out + r * cols, cols);
    }
}

}  // namespace rayo::cpu
