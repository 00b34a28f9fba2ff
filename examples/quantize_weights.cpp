// Quantizes a weight matrix to GGUF's q4_k with a progress line, then uses it in linear() and
// compares the result with the f32 weights' — what a model converter and its first run do.
//   rayo-quantize-weights [ROWS COLS]     (default 4096 x 4096; COLS a multiple of 256)
#include <rayo/rayo.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "progress_line.hpp"

namespace {

// A positive count from the command line, or 0.
std::int64_t count_argument(char const* text) {
    std::int64_t value = 0;
    auto const [end, error] = std::from_chars(text, text + std::strlen(text), value);
    return error == std::errc{} && *end == '\0' && value > 0 ? value : 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::int64_t const rows = argc > 2 ? count_argument(argv[1]) : 4096,
                       cols = argc > 2 ? count_argument(argv[2]) : 4096;
    if (argc == 2 || argc > 3 || rows == 0 || cols == 0 || cols % 256 != 0 || rows > (std::int64_t{1} << 31) / cols) {
        std::fprintf(
            stderr,
            "usage: rayo-quantize-weights [ROWS COLS]: positive, COLS a multiple of 256, at most 2^31 values\n");
        return 2;
    }
    try {
        rayo::Device const device = rayo::Device::best();
        std::mt19937 rng(7);
        std::normal_distribution<float> normal(0.0f, 0.02f);
        std::vector<float> host(static_cast<std::size_t>(rows * cols));
        for (float& v : host) v = normal(rng);
        auto const w = rayo::Tensor<float>::from(host, {rows, cols}, device);

        auto const q = rayo::quantize<rayo::q4_k>(
            w, rayo_examples::progress_line("quantizing " + w.shape().to_string() + " to q4_k on " + device.id()));

        std::vector<float> x_host(static_cast<std::size_t>(cols));
        for (float& v : x_host) v = normal(rng) * 50.0f;
        auto const x = rayo::Tensor<float>::from(x_host, {1, cols}, device);
        auto const exact = rayo::linear(x, w).to_vector(), quantized = rayo::linear(x, q).to_vector();
        double err = 0, norm = 0;
        for (std::size_t i = 0; i < exact.size(); ++i) {
            err += (exact[i] - quantized[i]) * double(exact[i] - quantized[i]);
            norm += exact[i] * double(exact[i]);
        }
        std::printf(
            "%zu MB of f32 weights -> %zu MB of q4_k; linear(x, w): relative error %.4f (q4_k keeps ~4.5 bits a "
            "weight)\n",
            w.bytes() >> 20, q.bytes() >> 20, std::sqrt(err / norm));
        return std::sqrt(err / norm) < 0.1 ? 0 : 1;
    } catch (std::exception const& e) {
        std::fprintf(stderr, "rayo-quantize-weights: %s\n", e.what());
        return 2;
    }
}
