// Float64 references of the row-wise ops (softmax, log_softmax, layer_norm, rms_norm over the last
// axis), shared by the CPU, CUDA and PTX-interpreter tests. Header-only, no rayo dependency.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace rayo::test {

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

// layer_norm (layer) or rms_norm of each row, then ·gamma and +beta where given.
inline std::vector<double> norm_ref(std::vector<float> const& in, std::size_t cols, bool layer,
                                    std::vector<float> const* gamma, std::vector<float> const* beta, double eps) {
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
        for (std::size_t c = 0; c < cols; ++c) {
            double y = (in[r * cols + c] - (layer ? mean : 0.0)) * rs;
            if (gamma) y *= (*gamma)[c];
            if (beta) y += (*beta)[c];
            out[r * cols + c] = y;
        }
    }
    return out;
}

}  // namespace rayo::test
