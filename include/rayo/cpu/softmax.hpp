// Softmax and log-softmax along contiguous rows: subtract the row maximum first, so ±1e4 inputs
// neither overflow nor lose the result.
#pragma once

#include <cmath>
#include <cstddef>

#include "rayo/cpu/reduction.hpp"
#include "rayo/cpu/simd_loop.hpp"
#include "rayo/cpu/vector_math.hpp"

namespace rayo::cpu {

template <class A>
void softmax_rows_kernel(float const* in, float* out, std::size_t rows, std::size_t cols, bool log) {
    using B = fbatch<A>;
    for (std::size_t r = 0; r < rows; ++r) {
        float const* x = in + r * cols;
        float* y = out + r * cols;
        if (cols == 0) continue;
        B const m(extreme_kernel<A, true>(x, cols));
        double sum = 0.0;
        if (log) {
            sum = blocked_sum<A>(
                cols, [&](std::size_t i) { return math::exp(B::load_unaligned(x + i) - m); },
                [&](std::size_t i, std::size_t c) {
                    return math::exp(load_partial<A>(x + i, c, -std::numeric_limits<float>::infinity()) - m);
                });
            // y = (x - max) - log(sum): x - max is exact near the maximum, and one scalar log per row.
            B const lse(static_cast<float>(std::log(sum)));
            map_unary<A>(x, y, cols, [&](B v) { return (v - m) - lse; });
        } else {
            map_unary<A>(x, y, cols, [&](B v) { return math::exp(v - m); });
            sum = sum_kernel<A>(y, cols);
            B const inv(static_cast<float>(1.0 / sum));
            map_unary<A>(y, y, cols, [&](B v) { return v * inv; });
        }
    }
}

}  // namespace rayo::cpu
