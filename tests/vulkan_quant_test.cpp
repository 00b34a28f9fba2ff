// linear with block-quantized weights (q4_k, q6_k, and q5_k, q8_0, q4_0) on a Vulkan device along
// the paths the harness (tests/ops/) does not choose by itself, against float64 on the dequantized
// weights and the unquantized x, on
// activation-like data (an outlier channel 40x larger, an all-zero block), as ‖y − ref‖/‖ref‖
// within the harness's Vulkan tolerance: the GEMM with the weights decoded into an f32 copy first or
// in the tiled GEMM's loads; every variant of the f32 GEMV (m <= 16, x read as f32, weights decoded
// in registers) on both reduction paths and for views of x, w and y at offsets; the one-row q4_k
// GEMV's integer-dot-product build, where the device has the feature (lavapipe has it,
// unaccelerated), which quantizes x to 24-bit integers per 16 values; and the activation setting
// of the CPU and CUDA backends, which the Vulkan GEMV ignores. And dequantize / embedding of q5_k,
// q8_0 and q4_0 views that start 2 bytes past a word, bit for bit the CPU's.
#include "ops/tolerances.hpp"
#include "support/vulkan_support.hpp"

#include <rayo/quant.hpp>
#include <rayo/settings.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>

namespace rayo::test {
namespace {

class VulkanQuant : public VulkanTest {
protected:
    // Runs `body` with the one-row q4_k GEMV's f32 build and, where the device has 4x8-bit integer
    // dot products, its integer build; then restores the default choice.
    template <class F>
    void on_every_gemv_build(F&& body) {
        std::vector<bool> builds{false};
        if (vulkan::has_integer_dot_product(device)) builds.push_back(true);
        for (bool integer : builds) {
            SCOPED_TRACE(integer ? "integer-dot-product build" : "f32 build");
            vulkan::use_integer_dot_product(device, integer);
            body();
        }
        vulkan::use_integer_dot_product(device, std::nullopt);
    }
};

// The GEMV's bounds (see the top): f32 products and sums of exactly decoded weights. Cases with a
// handful of outputs, where one y can be small by cancellation and its relative error large by
// chance, are held to the error per magnitude of their terms instead, ‖y − ref‖ / ‖Σ_p |x·w|‖
// (measured up to 1.6e-7 on lavapipe): what f32 summation promises whatever the cancellation.
double const linear_tolerance = ops::tolerance(Op::linear, DType::q4_k, DeviceKind::vulkan).rel;
constexpr double gemv_magnitude_tolerance = 1e-6;

struct LinearCase {
    std::size_t m, n, k;
    std::size_t x_skip = 0, w_skip = 0, y_skip = 0;
    bool bias = false;  // linear(x, w, bias)
};

std::string describe(LinearCase const& c) {
    return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + " (x at +" +
           std::to_string(c.x_skip) + ", w at row " + std::to_string(c.w_skip) + ", y at row " +
           std::to_string(c.y_skip) + (c.bias ? ", with bias)" : ")");
}

struct LinearError {
    double relative;   // ‖y − ref‖ / ‖ref‖
    double magnitude;  // ‖y − ref‖ / ‖Σ_p |x·w|‖
};

template <class W>
LinearError quantized_linear_error(Device device, LinearCase c) {
    auto const seed = fresh_seed();
    SCOPED_TRACE(std::string(to_string(dtype_of<W>)) + " " + describe(c) + " seed " + std::to_string(seed));
    auto const xv = activation_like(c.m, c.k, seed);
    std::vector<float> x_buffer(c.x_skip + c.m * c.k, 3.0f);
    std::copy(xv.begin(), xv.end(), x_buffer.begin() + static_cast<std::ptrdiff_t>(c.x_skip));
    auto const rows = static_cast<std::int64_t>(c.w_skip + c.n);
    auto const w_all = quantize<W>(
        Tensor<float>::from(random_floats((c.w_skip + c.n) * c.k, seed + 1, -1.0f, 1.0f), {c.w_skip + c.n, c.k}));
    auto const w = w_all.slice(static_cast<std::int64_t>(c.w_skip), rows);
    auto const wv = dequantize(w).to_vector();
    auto const bias_values = random_floats(c.n, seed + 2, -2.0f, 2.0f);
    reset_stats();
    auto const x = Tensor<float>::from(x_buffer, {x_buffer.size()}, device)
                       .slice(static_cast<std::int64_t>(c.x_skip), static_cast<std::int64_t>(x_buffer.size()))
                       .reshape({c.m, c.k});
    auto y_all = poisoned({c.y_skip + c.m + 1, c.n}, device);
    auto y = y_all.slice(static_cast<std::int64_t>(c.y_skip), static_cast<std::int64_t>(c.y_skip + c.m));
    auto const w_device = w_all.to(device).slice(static_cast<std::int64_t>(c.w_skip), rows);
    if (c.bias)
        linear_into(x, w_device, Tensor<float>::from(bias_values, {c.n}, device), y);
    else
        linear_into(x, w_device, y);
    auto const all = y_all.to_vector();
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
    for (std::size_t i = 0; i < all.size(); ++i)
        if (i / c.n < c.y_skip || i / c.n >= c.y_skip + c.m) {
            EXPECT_EQ(all[i], poison) << "y element " << i << " outside the output view was written";
            if (all[i] != poison) break;
        }
    std::vector<float> const got(all.begin() + static_cast<std::ptrdiff_t>(c.y_skip * c.n),
                                 all.begin() + static_cast<std::ptrdiff_t>((c.y_skip + c.m) * c.n));
    std::vector<double> want(c.m * c.n), magnitude(c.m * c.n);
    for (std::size_t i = 0; i < c.m; ++i)
        for (std::size_t j = 0; j < c.n; ++j) {
            double sum = 0, size = 0;
            for (std::size_t p = 0; p < c.k; ++p) {
                double const t = double(xv[i * c.k + p]) * double(wv[j * c.k + p]);
                sum += t;
                size += std::abs(t);
            }
            if (c.bias) {
                sum += bias_values[j];
                size += std::abs(double(bias_values[j]));
            }
            want[i * c.n + j] = sum;
            magnitude[i * c.n + j] = size;
        }
    double error = 0, scale = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        error += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        scale += magnitude[i] * magnitude[i];
    }
    return {relative_l2(got, want), std::sqrt(error / scale)};
}

// One weight type on one case, held to `bound` as a relative error or, with `magnitude`, to
// gemv_magnitude_tolerance per term magnitude; returns the error of the measure used.
template <QuantBlock B>
double checked_error(Device device, LinearCase c, double bound, bool magnitude) {
    LinearError const e = quantized_linear_error<B>(device, c);
    double const measured = magnitude ? e.magnitude : e.relative;
    EXPECT_LE(measured, magnitude ? gemv_magnitude_tolerance : bound)
        << to_string(dtype_of<B>) << " " << describe(c) << " (relative error " << e.relative << ")";
    return measured;
}

// q4_k and q6_k on one case: the larger error.
double both_types_error(Device device, LinearCase c, double bound, bool magnitude = false) {
    return std::max(checked_error<q4_k>(device, c, bound, magnitude), checked_error<q6_k>(device, c, bound, magnitude));
}

// The same for q8_0 and q4_0 (blocks of 32: k need only be a multiple of 32) and, where k is a
// multiple of 256, q5_k.
double new_types_error(Device device, LinearCase c, double bound, bool magnitude = false) {
    double worst =
        std::max(checked_error<q8_0>(device, c, bound, magnitude), checked_error<q4_0>(device, c, bound, magnitude));
    if (c.k % quant_block_values == 0) worst = std::max(worst, checked_error<q5_k>(device, c, bound, magnitude));
    return worst;
}

// The GEMM's two ways to decode the weights: into an f32 copy multiplied by the f32 GEMM (the
// default; 1024 x 1024 takes its large tiles, 64 x 300 its small one) and in the tiled GEMM's loads.
TEST_F(VulkanQuant, KQuantGemmDecodesFirstOrInItsTiles) {
    for (bool decode_first : {true, false}) {
        SCOPED_TRACE(decode_first ? "decoded first" : "decoded in the tiles");
        vulkan::use_decoded_kquant_gemm(device, decode_first);
        both_types_error(device, {64, 300, 512}, linear_tolerance);
        both_types_error(device, {1024, 1024, 512}, linear_tolerance);
    }
    vulkan::use_decoded_kquant_gemm(device, true);
}

// The GEMV's shapes: every count of rows of x up to 16 that changes its variant (1-2: per-unit
// scaling; 3-8: per-weight values, 4 weight rows a workgroup; 9-16: 2 weight rows), weight row
// counts that leave a workgroup partly empty, one block a row (a 210-byte q6_k row: every other
// row only 2-byte aligned), three or five blocks (blocks alternate alignment inside a row), and
// rows of 32 and 64 blocks (128- and 256-invocation workgroups when there are few rows), on the
// subgroup and shared-memory paths. One row of x with q4_k weights takes the spanning GEMV where
// subgroups are used: rows of 9 blocks (a workgroup's last subgroup partly past the row) and of
// 128 blocks with 601 rows (workgroups of several steps of rows, the last one partial), in both
// of its builds.
TEST_F(VulkanQuant, KQuantGemvCoversItsShapes) {
    double worst = 0;
    on_every_path([&] {
        for (LinearCase c :
             {LinearCase{2, 5, 256}, LinearCase{3, 6, 768}, LinearCase{8, 13, 512}, LinearCase{9, 3, 256},
              LinearCase{16, 5, 1280}, LinearCase{2, 4, 8192}, LinearCase{5, 3, 16384}, LinearCase{16, 2, 16384}})
            worst = std::max(worst, both_types_error(device, c, linear_tolerance, true));
        on_every_gemv_build([&] {
            for (LinearCase c :
                 {LinearCase{1, 1, 256}, LinearCase{1, 9, 768}, LinearCase{1, 37, 2304}, LinearCase{1, 601, 32768}})
                worst = std::max(worst, both_types_error(device, c, linear_tolerance, true));
        });
    });
    std::cout << "worst GEMV error per term magnitude " << worst << '\n';
}

// x, w and y as views at offsets: x not 16-byte aligned (scalar loads) or aligned, weights from
// row 1 or 3 of a larger tensor (q6_k rows of one block then start 2-byte aligned), y a middle
// slice of a poisoned tensor whose other rows must stay untouched.
TEST_F(VulkanQuant, KQuantGemvTakesViews) {
    on_every_path([&] {
        for (LinearCase c :
             {LinearCase{2, 7, 512, 3, 3, 2}, LinearCase{3, 6, 768, 4, 1, 1}, LinearCase{16, 3, 256, 2, 1, 3}})
            both_types_error(device, c, linear_tolerance, true);
        on_every_gemv_build([&] {
            for (LinearCase c :
                 {LinearCase{1, 5, 256, 1, 1, 1}, LinearCase{1, 4, 16384, 5, 1, 0}, LinearCase{1, 4, 16384, 4, 3, 2}})
                both_types_error(device, c, linear_tolerance, true);
        });
    });
}

// The integer-dot-product build runs where asked: its results differ from the f32 build's (both
// meet the bounds above), so the switch reaches the shader and the tests above cover both.
TEST_F(VulkanQuant, KQuantGemvIntegerDotBuildRunsWhereAsked) {
    if (!vulkan::has_integer_dot_product(device)) GTEST_SKIP() << "the device has no 4x8-bit integer dot products";
    std::size_t const n = 40, k = 2048;
    auto const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto const x = Tensor<float>::from(activation_like(1, k, seed), {1, k}, device);
    auto const w = quantize<q4_k>(Tensor<float>::from(random_floats(n * k, seed + 1, -1.0f, 1.0f), {n, k})).to(device);
    std::vector<std::vector<float>> results;
    for (bool integer : {true, false}) {
        vulkan::use_integer_dot_product(device, integer);
        auto y = poisoned({1, n}, device);
        linear_into(x, w, y);
        results.push_back(y.to_vector());
    }
    EXPECT_NE(std::memcmp(results[0].data(), results[1].data(), n * sizeof(float)), 0)
        << "the integer build gave the f32 build's bits: did it run?";
    vulkan::use_integer_dot_product(device, std::nullopt);
}

// The Vulkan GEMV reads x as f32 (or, in the integer build, as 24-bit integers of its own):
// rayo::kquant_activations(), which picks how the CPU and CUDA
// backends quantize x, does not change its results.
TEST_F(VulkanQuant, KQuantGemvIgnoresTheActivationSetting) {
    using Scope = SettingScope<KQuantActivations, &kquant_activations, &set_kquant_activations>;
    std::size_t const m = 3, n = 50, k = 1024;
    auto const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto const x = Tensor<float>::from(activation_like(m, k, seed), {m, k}, device);
    auto const w = quantize<q4_k>(Tensor<float>::from(random_floats(n * k, seed + 1, -1.0f, 1.0f), {n, k})).to(device);
    std::vector<std::vector<float>> results;
    for (auto mode : {KQuantActivations::q8_k_residual, KQuantActivations::q8_k}) {
        Scope scope(mode);
        auto y = poisoned({m, n}, device);
        linear_into(x, w, y);
        results.push_back(y.to_vector());
    }
    EXPECT_EQ(std::memcmp(results[0].data(), results[1].data(), m * n * sizeof(float)), 0);
}

// q5_k, q8_0 and q4_0 through both ways the GEMM decodes the weights (into an f32 copy first, or
// in the tiled GEMM's loads); q8_0 / q4_0 rows of an odd block count (2080 = 65 blocks of 32, so
// every other row starts 2 bytes past a word) and weights from row 1 of a larger tensor.
TEST_F(VulkanQuant, NewTypesGemmDecodesFirstOrInItsTiles) {
    for (bool decode_first : {true, false}) {
        SCOPED_TRACE(decode_first ? "decoded first" : "decoded in the tiles");
        vulkan::use_decoded_kquant_gemm(device, decode_first);
        new_types_error(device, {64, 300, 512}, linear_tolerance);
        new_types_error(device, {33, 70, 2080, 0, 1, 0}, linear_tolerance);
        new_types_error(device, {17, 9, 96, 3, 1, 1, true}, linear_tolerance);
    }
    vulkan::use_decoded_kquant_gemm(device, true);
}

// The GEMV's units of q5_k (q4_k's with the fifth bit), q8_0 and q4_0 (one 32-value block each)
// at every variant: 1-2 rows of x (per-unit scaling), 3-8 and 9-16 (per-weight values), rows of
// one to 512 blocks of 32 (an odd count: blocks alternate 2-byte and 4-byte alignment), workgroups
// partly past the weight rows, 64 q5_k blocks a row (256-invocation workgroups), on the subgroup
// and shared-memory paths; q5_k takes the general GEMV for one row of x too.
TEST_F(VulkanQuant, NewTypesGemvCoversItsShapes) {
    double worst = 0;
    on_every_path([&] {
        for (LinearCase c : {LinearCase{1, 1, 32}, LinearCase{1, 9, 96}, LinearCase{2, 5, 256}, LinearCase{1, 37, 2304},
                             LinearCase{3, 6, 2080}, LinearCase{8, 13, 512}, LinearCase{9, 3, 288},
                             LinearCase{16, 5, 1280}, LinearCase{2, 4, 16384}, LinearCase{5, 3, 16384}})
            worst = std::max(worst, new_types_error(device, c, linear_tolerance, true));
    });
    std::cout << "worst GEMV error per term magnitude " << worst << '\n';
}

// x, w and y as views at offsets (x not 16-byte aligned, weights from row 1 or 3: q8_0 / q4_0 rows
// of odd block counts then start 2 bytes past a word), and linear's bias added as y is written.
TEST_F(VulkanQuant, NewTypesGemvTakesViewsAndBias) {
    on_every_path([&] {
        for (LinearCase c :
             {LinearCase{1, 5, 96, 1, 1, 1}, LinearCase{2, 7, 512, 3, 3, 2}, LinearCase{3, 6, 2080, 4, 1, 1},
              LinearCase{16, 3, 160, 2, 3, 3}, LinearCase{1, 9, 256, 0, 0, 0, true},
              LinearCase{4, 11, 2080, 1, 1, 1, true}, LinearCase{12, 5, 768, 0, 3, 0, true}})
            new_types_error(device, c, linear_tolerance, true);
    });
}

// dequantize of q5_k, q8_0 and q4_0 on the device gives the CPU's floats bit for bit, for a tensor
// and for a slice from row 1 (q8_0 / q4_0 rows of 3 blocks: 2 bytes past a word), arbitrary bytes
// included (scales that are subnormal, Inf or NaN); so does embedding of such a table. Nothing
// falls back to the CPU.
template <class B>
void check_dequantize_bit_exact(Device device, std::size_t blocks_per_row) {
    std::size_t const rows = 7, values = block_values_of<B> * blocks_per_row;
    auto const seed = fresh_seed();
    SCOPED_TRACE(std::string(to_string(dtype_of<B>)) + " seed " + std::to_string(seed));
    std::vector<B> blocks =
        quantize<B>(Tensor<float>::from(random_floats(rows * values, seed), {rows, values})).to_vector();
    std::mt19937 rng(seed + 1);
    for (std::size_t b = 0; b < blocks.size(); b += 3) {  // every third block arbitrary bytes
        auto* bytes = reinterpret_cast<unsigned char*>(&blocks[b]);
        for (std::size_t i = 0; i < sizeof(B); ++i) bytes[i] = static_cast<unsigned char>(rng());
    }
    auto const host = Tensor<B>::from(blocks, {rows, values});
    auto const on_device = host.to(device);
    auto const ids = std::vector<std::int32_t>{4, 1, 1, 6, 0};
    reset_stats();
    // The floats' bits, with every NaN as one (a NaN scale's payload is the device's own).
    auto const bits = [](Tensor<float> const& t) {
        std::vector<float> const v = t.to_vector();
        std::vector<std::uint32_t> u(v.size());
        for (std::size_t i = 0; i < v.size(); ++i)
            u[i] = std::isnan(v[i]) ? 0x7FC00000u : std::bit_cast<std::uint32_t>(v[i]);
        return u;
    };
    EXPECT_EQ(bits(dequantize(on_device)), bits(dequantize(host)));
    EXPECT_EQ(bits(dequantize(on_device.slice(1, rows))), bits(dequantize(host.slice(1, rows))));
    auto const id_tensor = Tensor<std::int32_t>::from(ids, {ids.size()}, device);
    EXPECT_EQ(bits(embedding(on_device, id_tensor)),
              bits(embedding(host, Tensor<std::int32_t>::from(ids, {ids.size()}))));
    std::vector<std::int32_t> const last{5};
    EXPECT_EQ(bits(embedding(on_device.slice(1, rows), Tensor<std::int32_t>::from(last, {1}, device))),
              bits(embedding(host.slice(1, rows), Tensor<std::int32_t>::from(last, {1}))));
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

TEST_F(VulkanQuant, NewTypesDequantizeBitExactlyOnViews) {
    check_dequantize_bit_exact<q8_0>(device, 3);
    check_dequantize_bit_exact<q4_0>(device, 3);
    check_dequantize_bit_exact<q5_k>(device, 2);
}

}  // namespace
}  // namespace rayo::test
