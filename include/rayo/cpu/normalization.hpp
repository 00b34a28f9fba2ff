// layer_norm and rms_norm along contiguous rows. Row statistics accumulate in double (two passes
// for the variance), the per-element work is vectorised.
#pragma once

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

template <class A>
void layer_norm_rows_kernel(float const* in, float const* gamma, float const* beta, float eps, float* out,
                            std::size_t rows, std::size_t cols) {
    using B = fbatch<A>;
    for (std::size_t r = 0; r < rows; ++r) {
        float const* x = in + r * cols;
        double const mean = sum_kernel<A>(x, cols) / static_cast<double>(cols);
        B const m(static_cast<float>(mean));
        double const var = blocked_sum<A>(
                               cols,
                               [&](std::size_t i) {
                                   B const d = B::load_unaligned(x + i) - m;
                                   return d * d;
                               },
                               [&](std::size_t i, std::size_t c) {
                                   B const d = load_partial<A>(x + i, c, static_cast<float>(mean)) - m;
                                   return d * d;
                               }) /
                           static_cast<double>(cols);
        double const rstd = 1.0 / std::sqrt(var + static_cast<double>(eps));
        float const c = static_cast<float>(mean);
        affine_row<A>(x, c, static_cast<float>(rstd), static_cast<float>((static_cast<double>(c) - mean) * rstd), gamma,
                      beta, out + r * cols, cols);
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
