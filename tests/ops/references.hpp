// Float64 references of the harness's ops, written from each op's definition (docs/ops.md), not
// from rayo's kernels. Special values follow the documented semantics: NaN in gives NaN; limits
// where the formula would give NaN (gelu(-inf) = -0, say).
#pragma once

#include <rayo/shape.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace rayo::test::ops {

inline double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double silu_ref(double x) { return std::isinf(x) && x < 0 ? -0.0 : x * sigmoid_ref(x); }
// x·Φ(x); at -inf the limit -0, where x·(something -> 0) would be NaN.
inline double gelu_ref(double x) { return std::isinf(x) && x < 0 ? -0.0 : 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
// ½x(1 + tanh u) written as x / (1 + e^(−2u)): the same value without the cancellation of 1 + tanh u
// for negative x, which would make the reference itself wrong.
inline double gelu_tanh_ref(double x) {
    double const u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    return std::isinf(x) && x < 0 ? -0.0 : x / (1.0 + std::exp(-2.0 * u));
}

// The float a device that flushes subnormals reads for x.
inline float flush(float x) {
    return x != 0 && std::abs(x) < std::numeric_limits<float>::min() ? std::copysign(0.0f, x) : x;
}

// softmax or log_softmax of each row of `cols` values.
inline std::vector<double> softmax_ref(std::vector<float> const& in, std::size_t cols, bool log) {
    std::vector<double> out(in.size());
    for (std::size_t r = 0; r * cols < in.size(); ++r) {
        double m = -INFINITY, s = 0;
        for (std::size_t c = 0; c < cols; ++c) m = std::max(m, double(in[r * cols + c]));
        for (std::size_t c = 0; c < cols; ++c) s += std::exp(double(in[r * cols + c]) - m);
        for (std::size_t c = 0; c < cols; ++c) {
            double const z = double(in[r * cols + c]) - m;
            out[r * cols + c] = log ? z - std::log(s) : std::exp(z) / s;
        }
    }
    return out;
}

// layer_norm (layer) or rms_norm of each row, before any gamma and beta: the normalised values.
inline std::vector<double> normalised_ref(std::vector<float> const& in, std::size_t cols, bool layer, double eps) {
    std::vector<double> out(in.size());
    for (std::size_t r = 0; r * cols < in.size(); ++r) {
        double mean = 0, var = 0;
        for (std::size_t c = 0; c < cols; ++c) mean += in[r * cols + c];
        mean /= double(cols);
        for (std::size_t c = 0; c < cols; ++c) {
            double const d = in[r * cols + c] - (layer ? mean : 0.0);
            var += d * d;
        }
        double const rs = 1.0 / std::sqrt(var / double(cols) + eps);
        for (std::size_t c = 0; c < cols; ++c) out[r * cols + c] = (in[r * cols + c] - (layer ? mean : 0.0)) * rs;
    }
    return out;
}

// The reductions over one axis (or everything, axis < 0) with the documented rules for max/min
// and their indices: the first index of the extreme wins, and the first NaN wins over everything.
struct ReductionReference {
    std::vector<double> sum, abs_sum;
    std::vector<float> max, min;
    std::vector<std::int64_t> argmax, argmin;
};

inline ReductionReference reduction_ref(std::vector<float> const& in, Shape const& shape, int axis) {
    std::size_t outer = 1, extent = in.size(), inner = 1;
    if (axis >= 0) {
        extent = static_cast<std::size_t>(shape[static_cast<std::size_t>(axis)]);
        for (std::size_t i = 0; i < shape.rank(); ++i) {
            if (i < static_cast<std::size_t>(axis)) outer *= static_cast<std::size_t>(shape[i]);
            if (i > static_cast<std::size_t>(axis)) inner *= static_cast<std::size_t>(shape[i]);
        }
    }
    ReductionReference r;
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t j = 0; j < inner; ++j) {
            double s = 0, a = 0;
            float mx = 0, mn = 0;
            std::int64_t imx = 0, imn = 0;
            for (std::size_t e = 0; e < extent; ++e) {
                float const v = in[(o * extent + e) * inner + j];
                s += v;
                a += std::abs(static_cast<double>(v));
                if (e == 0) {
                    mx = mn = v;
                    continue;
                }
                auto const i = static_cast<std::int64_t>(e);
                if (!std::isnan(mx) && (std::isnan(v) || v > mx)) mx = v, imx = i;
                if (!std::isnan(mn) && (std::isnan(v) || v < mn)) mn = v, imn = i;
            }
            r.sum.push_back(s), r.abs_sum.push_back(a), r.max.push_back(mx), r.min.push_back(mn);
            r.argmax.push_back(imx), r.argmin.push_back(imn);
        }
    return r;
}

// out[i, j] = Σ_p a(i, p)·b(p, j), with Σ_p |a(i, p)·b(p, j)| as each element's scale; b is
// [k, n], or [n, k] when b_transposed.
struct ProductReference {
    std::vector<double> value, magnitude;
};

inline ProductReference product_ref(std::vector<double> const& a, std::vector<double> const& b, std::size_t m,
                                    std::size_t n, std::size_t k, bool b_transposed) {
    ProductReference r{std::vector<double>(m * n), std::vector<double>(m * n)};
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            double v = 0, mag = 0;
            for (std::size_t p = 0; p < k; ++p) {
                double const t = a[i * k + p] * (b_transposed ? b[j * k + p] : b[p * n + j]);
                v += t;
                mag += std::abs(t);
            }
            r.value[i * n + j] = v;
            r.magnitude[i * n + j] = mag;
        }
    return r;
}

}  // namespace rayo::test::ops
