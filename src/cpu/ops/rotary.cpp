// rope on the CPU: each pair's frequency in double once per call, each token's cosines and sines in
// double (so the CPU's angles are exact to double precision), the rotation itself in f32 over the
// token's heads. Tokens are split over the thread pool; f16 and bf16 tokens are widened to f32 and
// narrowed back once. The rotation reads both values of a pair before writing either, so out may be x.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"

namespace rayo::cpu::ops {

Support supports(KernelRunner const&, op::Rope const&, OpViews const& v) {
    if (!v.in[0].is_contiguous() || !v.out[0].is_contiguous() || v.in[0].dtype != v.out[0].dtype ||
        !detail::is_floating(v.in[0].dtype))
        return Support::no("cpu: rope takes contiguous x and out of one floating type");
    return Support::yes();
}

namespace {

// freq_scale · freq_base^(−2p/n_dims) / factor[p] for each pair p, in double.
std::vector<double> pair_frequencies(op::Rope const& d, float const* factors) {
    std::vector<double> theta(d.n_dims / 2);
    double const log_base = std::log(static_cast<double>(d.freq_base));
    for (std::size_t p = 0; p < theta.size(); ++p) {
        double const f = std::exp(-2.0 * static_cast<double>(p) / static_cast<double>(d.n_dims) * log_base);
        theta[p] = static_cast<double>(d.freq_scale) * f / (factors ? static_cast<double>(factors[p]) : 1.0);
    }
    return theta;
}

// Rotates one token's heads from x to y (f32 rows of heads · head_dim; y may be x), with the pair
// cosines and sines of its position.
void rotate_token(op::Rope const& d, float const* x, float* y, float const* cosines, float const* sines) {
    std::size_t const half = d.n_dims / 2;
    std::size_t const first_step = d.halves ? 1 : 2, second_offset = d.halves ? half : 1;
    for (std::size_t h = 0; h < d.heads; ++h) {
        float const* in = x + h * d.head_dim;
        float* out = y + h * d.head_dim;
        for (std::size_t p = 0; p < half; ++p) {
            std::size_t const i = p * first_step, j = i + second_offset;
            float const a = in[i], b = in[j], c = cosines[p], s = sines[p];
            out[i] = a * c - b * s;
            out[j] = a * s + b * c;
        }
        if (in != out && d.n_dims < d.head_dim)
            std::memcpy(out + d.n_dims, in + d.n_dims, (d.head_dim - d.n_dims) * sizeof(float));
    }
}

// The cosines and sines of one position's angles.
void angles(std::vector<double> const& theta, std::int32_t position, float* cosines, float* sines) {
    for (std::size_t p = 0; p < theta.size(); ++p) {
        double const a = static_cast<double>(position) * theta[p];
        cosines[p] = static_cast<float>(std::cos(a));
        sines[p] = static_cast<float>(std::sin(a));
    }
}

}  // namespace

void run(KernelRunner& r, op::Rope const& d, OpViews const& v) {
    auto const& k = r.kernels();
    std::vector<double> const theta = pair_frequencies(d, d.has_factors ? data<float const>(v.in[2]) : nullptr);
    auto const* positions = data<std::int32_t const>(v.in[1]);
    std::size_t const row = d.heads * d.head_dim;
    DType const type = v.in[0].dtype;
    auto const* x = data<std::byte const>(v.in[0]);
    auto* y = data<std::byte>(v.out[0]);
    std::size_t const element = bytes_for(type, 1);
    std::size_t const grain = std::max<std::size_t>(1, elementwise_grain / std::max<std::size_t>(1, row));
    r.pool().parallel_for(d.tokens, grain, [&](std::size_t t0, std::size_t t1) {
        std::vector<float> cosines(theta.size()), sines(theta.size());
        std::vector<float> staged(type == DType::f32 ? 0 : row);
        for (std::size_t t = t0; t < t1; ++t) {
            angles(theta, positions[t % d.positions], cosines.data(), sines.data());
            std::byte const* from = x + t * row * element;
            std::byte* to = y + t * row * element;
            if (type == DType::f32) {
                rotate_token(d, reinterpret_cast<float const*>(from), reinterpret_cast<float*>(to), cosines.data(),
                             sines.data());
                continue;
            }
            k.widen(type, from, staged.data(), row);
            rotate_token(d, staged.data(), staged.data(), cosines.data(), sines.data());
            k.narrow(type, staged.data(), to, row);
        }
    });
}

}  // namespace rayo::cpu::ops
