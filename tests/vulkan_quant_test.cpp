// K-quant ops on the Vulkan device: dequantization of q4_k / q6_k / q8_k bit for bit equal to
// the CPU's; quantization to q8_k byte for byte equal to the CPU's (q4_k / q6_k quantization is
// refused by the device and runs on the CPU, visibly); linear with q4_k / q6_k weights within
// ‖y − ref‖/‖ref‖ <= 1e-3 of float64 on the dequantized weights and the unquantized x, on
// activation-like data (an outlier channel 40x larger, an all-zero block), for the integer GEMV
// (m <= 16: q8_k activations plus their q8_k residual, measured ~1e-5) and the GEMM over
// dequantized weight tiles (m > 16: f32, ~1e-7).
#include "support/vulkan_support.hpp"

#include <rayo/quant.hpp>
#include <rayo/settings.hpp>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <random>

namespace rayo::test {
namespace {

class VulkanQuant : public VulkanTest {};

// Mixed data: normal values, a block of tiny ones, an all-zero block, a large block.
std::vector<float> mixed_values(std::size_t n, std::uint32_t seed) {
    auto v = random_floats(n, seed, -3.0f, 3.0f);
    for (std::size_t i = 0; i < n; ++i) {
        std::size_t const block = i / 256;
        if (block % 4 == 1) v[i] *= 1e-6f;
        if (block % 7 == 2) v[i] = 0.0f;
        if (block % 5 == 3) v[i] *= 1e4f;
    }
    return v;
}

template <QuantBlock B>
void expect_dequantize_equals_cpu(Device device, std::size_t rows, std::size_t cols) {
    auto const seed = fresh_seed();
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
    auto const blocks = quantize<B>(Tensor<float>::from(mixed_values(rows * cols, seed), {rows, cols})).to_vector();
    auto const want = dequantize(Tensor<B>::from(blocks, {rows, cols})).to_vector();
    reset_stats();
    auto out = poisoned({rows, cols}, device);
    dequantize(Tensor<B>::from(blocks, {rows, cols}, device), out);
    auto const got = out.to_vector();
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
    ASSERT_EQ(got.size(), want.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && differ++ < 5)
            ADD_FAILURE() << "value " << i << ": got " << got[i] << ", the CPU " << want[i];
    EXPECT_EQ(differ, 0u);
}

TEST_F(VulkanQuant, DequantizeIsBitExactWithTheCpu) {
    for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{1, 256}, {3, 1024}, {37, 512}}) {
        expect_dequantize_equals_cpu<q4_k>(device, rows, cols);
        expect_dequantize_equals_cpu<q6_k>(device, rows, cols);
        expect_dequantize_equals_cpu<q8_k>(device, rows, cols);
    }
}

TEST_F(VulkanQuant, QuantizeToQ8KIsByteExactWithTheCpu) {
    for (std::size_t rows : {1u, 5u, 64u}) {
        auto const seed = fresh_seed();
        std::size_t const cols = 1024;
        SCOPED_TRACE("rows " + std::to_string(rows) + " seed " + std::to_string(seed));
        auto values = mixed_values(rows * cols, seed);
        values[3] = std::abs(values[3]) * 100.0f;  // a tie in magnitude: the first one sets the scale
        values[7] = -values[3];
        auto const want = quantize<q8_k>(Tensor<float>::from(values, {rows, cols})).to_vector();
        reset_stats();
        auto out = Tensor<q8_k>::from(std::vector<q8_k>(rows * cols / 256, q8_k{123.0f, {}, {}}), {rows, cols}, device);
        quantize(Tensor<float>::from(values, {rows, cols}, device), out);
        auto const got = out.to_vector();
        EXPECT_EQ(stats().cpu_fallbacks, 0u);
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t b = 0; b < got.size(); ++b)
            EXPECT_EQ(std::memcmp(&got[b], &want[b], sizeof(q8_k)), 0)
                << "block " << b << ": d " << got[b].d << " vs " << want[b].d;
    }
}

TEST_F(VulkanQuant, WeightQuantizationFallsBackToTheCpuVisibly) {
    auto const values = random_floats(2 * 256, fresh_seed());
    auto const want = quantize<q4_k>(Tensor<float>::from(values, {2, 256})).to_vector();
    reset_stats();
    auto got = quantize<q4_k>(Tensor<float>::from(values, {2, 256}, device));
    EXPECT_EQ(got.device().id(), device.id());
    EXPECT_GE(stats().cpu_fallbacks, 1u) << "q4_k quantization should have run on the CPU";
    auto const g = got.to_vector();
    EXPECT_EQ(std::memcmp(g.data(), want.data(), sizeof(q4_k) * 2), 0);
}

template <class W>
double quantized_linear_error(Device device, std::size_t m, std::size_t n, std::size_t k) {
    auto const seed = fresh_seed();
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " seed " + std::to_string(seed));
    auto const xv = activation_like(m, k, seed);
    auto const w = quantize<W>(Tensor<float>::from(random_floats(n * k, seed + 1, -1.0f, 1.0f), {n, k}));
    auto const wv = dequantize(w).to_vector();
    reset_stats();
    auto out = poisoned({m, n}, device);
    linear(Tensor<float>::from(xv, {m, k}, device), w.to(device), out);
    auto const got = out.to_vector();
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
    std::vector<double> want(m * n);
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            double sum = 0;
            for (std::size_t p = 0; p < k; ++p) sum += double(xv[i * k + p]) * double(wv[j * k + p]);
            want[i * n + j] = sum;
        }
    return relative_l2(got, want);
}

TEST_F(VulkanQuant, KQuantLinearMeetsItsStatedAccuracy) {
    double worst_gemv = 0, worst_gemm = 0;
    for (std::size_t m : {1u, 3u, 16u, 64u})
        for (std::size_t k : {256u, 4096u})
            for (std::size_t n : {7u, 300u}) {
                double const e4 = quantized_linear_error<q4_k>(device, m, n, k);
                double const e6 = quantized_linear_error<q6_k>(device, m, n, k);
                EXPECT_LE(e4, 1e-3) << "q4_k m " << m << " n " << n << " k " << k;
                EXPECT_LE(e6, 1e-3) << "q6_k m " << m << " n " << n << " k " << k;
                (m <= 16 ? worst_gemv : worst_gemm) = std::max({m <= 16 ? worst_gemv : worst_gemm, e4, e6});
            }
    std::cout << "worst relative error: GEMV " << worst_gemv << ", GEMM " << worst_gemm << '\n';
}

TEST_F(VulkanQuant, KQuantGemvWithSingleQ8KActivations) {
    // ggml's single q8_k of x (no residual): the large channel sets its block's scale, ~5e-3.
    auto const saved = kquant_activations();
    set_kquant_activations(KQuantActivations::q8_k);
    EXPECT_LE(quantized_linear_error<q4_k>(device, 3, 50, 1024), 1e-1);
    EXPECT_LE(quantized_linear_error<q6_k>(device, 3, 50, 1024), 1e-1);
    set_kquant_activations(saved);
}

}  // namespace
}  // namespace rayo::test
