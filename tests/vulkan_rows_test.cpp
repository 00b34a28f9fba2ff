// softmax, log_softmax, layer_norm and rms_norm on the Vulkan device against float64 references:
// fresh random data, poisoned outputs, rows short and long (1x1 to 4096x4096, 1x100000,
// 100000x8), gamma/beta present and absent, -inf/NaN rows as on the CPU, both reduction paths.
// Tolerances (|got - want|): softmax 1e-6·want (exp's 4 ulp plus the scaling); log_softmax
// 2e-6·(|want| + 1); norms 4e-6·(|n·gamma| + |beta|) + 1e-6, n the normalised value (a few
// ulp of the terms before beta is added).
#include "support/vulkan_support.hpp"

namespace rayo::test {
namespace {

struct RowShape {
    std::size_t rows, cols;
};
std::vector<RowShape> const row_shapes{{1, 1}, {3, 7}, {64, 1000}, {4096, 4096}, {1, 100000}, {100000, 8}, {5, 257}};

using VulkanRows = VulkanTest;

TEST_F(VulkanRows, SoftmaxAndLogSoftmax) {
    on_every_path([&] {
        for (auto [rows, cols] : row_shapes) {
            auto const seed = fresh_seed();
            SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + ", seed " + std::to_string(seed));
            auto const v = random_floats(rows * cols, seed, -8.0f, 8.0f);
            auto x = Tensor<float>::from(v, {rows, cols}, device);
            auto p = poisoned({rows, cols}, device), lp = poisoned({rows, cols}, device);
            reset_stats();
            softmax(x, -1, p);
            log_softmax(x, -1, lp);
            auto const pv = p.to_vector(), lpv = lp.to_vector();
            EXPECT_EQ(stats().cpu_fallbacks, 0u);
            for (std::size_t r = 0; r < rows; ++r) {
                float const* row = v.data() + r * cols;
                double const m = *std::max_element(row, row + cols);
                double s = 0;
                for (std::size_t i = 0; i < cols; ++i) s += std::exp(row[i] - m);
                double const lse = std::log(s);
                for (std::size_t i = 0; i < cols; ++i) {
                    double const want_log = (row[i] - m) - lse, want = std::exp(want_log);
                    ASSERT_NEAR(pv[r * cols + i], want, 1e-6 * want) << r << ", " << i;
                    ASSERT_NEAR(lpv[r * cols + i], want_log, 2e-6 * (std::abs(want_log) + 1)) << r << ", " << i;
                }
            }
        }
    });
}

TEST_F(VulkanRows, InfinityAndNanRowsFollowTheCpu) {
    float const inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    std::size_t const cols = 300;
    auto v = random_floats(6 * cols, fresh_seed());
    for (std::size_t i = 0; i < cols; ++i) v[i] = -inf;                  // row 0: all -inf
    for (std::size_t i = 0; i < cols; i += 2) v[cols + i] = -inf;        // row 1: half -inf
    v[2 * cols + 17] = nan;                                              // row 2: one NaN
    v[3 * cols + 5] = inf;                                               // row 3: +inf
    v[4 * cols + 9] = 1e30f;                                             // row 4: huge values
    v[4 * cols + 10] = -1e30f;
    auto x = Tensor<float>::from(v, {6, cols}, device);
    auto xc = x.to(Device::cpu());
    on_every_path([&] {
        reset_stats();
        std::vector<std::pair<std::vector<float>, std::vector<float>>> const results{
            {softmax(x).to_vector(), softmax(xc).to_vector()},
            {log_softmax(x).to_vector(), log_softmax(xc).to_vector()},
            {layer_norm(x).to_vector(), layer_norm(xc).to_vector()},
            {rms_norm(x).to_vector(), rms_norm(xc).to_vector()}};
        EXPECT_EQ(stats().cpu_fallbacks, 0u);
        for (std::size_t k = 0; k < results.size(); ++k) {
            auto const& [got, want] = results[k];
            for (std::size_t i = 0; i < got.size(); ++i) {
                SCOPED_TRACE("op " + std::to_string(k) + ", element " + std::to_string(i));
                if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << got[i];
                else if (std::isinf(want[i])) EXPECT_EQ(got[i], want[i]);
                else EXPECT_NEAR(got[i], want[i], 4e-6 * (std::abs(want[i]) + 1));
            }
        }
    });
}

TEST_F(VulkanRows, LayerNormAndRmsNorm) {
    on_every_path([&] {
        for (auto [rows, cols] : row_shapes) {
            for (bool affine : {false, true}) {
                auto const seed = fresh_seed();
                SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + (affine ? " with" : " without") +
                             " gamma/beta, seed " + std::to_string(seed));
                // An offset mean (3) checks the centring; the CPU's eps defaults.
                auto const v = random_floats(rows * cols, seed, -1.0f, 7.0f);
                auto const gv = random_floats(cols, seed + 1, -2.0f, 2.0f), bv = random_floats(cols, seed + 2);
                auto x = Tensor<float>::from(v, {rows, cols}, device);
                auto g = Tensor<float>::from(gv, {cols}, device), b = Tensor<float>::from(bv, {cols}, device);
                auto ln = poisoned({rows, cols}, device), rn = poisoned({rows, cols}, device);
                float const ln_eps = 1e-5f, rn_eps = 1e-6f;
                reset_stats();
                if (affine) {
                    layer_norm(x, g, b, ln_eps, ln);
                    rms_norm(x, g, rn_eps, rn);
                } else {
                    layer_norm(x, ln_eps, ln);
                    rms_norm(x, rn_eps, rn);
                }
                auto const lnv = ln.to_vector(), rnv = rn.to_vector();
                EXPECT_EQ(stats().cpu_fallbacks, 0u);
                for (std::size_t r = 0; r < rows; ++r) {
                    float const* row = v.data() + r * cols;
                    double mean = 0, sq = 0, var = 0;
                    for (std::size_t i = 0; i < cols; ++i) mean += row[i], sq += double(row[i]) * row[i];
                    mean /= double(cols);
                    for (std::size_t i = 0; i < cols; ++i) var += (row[i] - mean) * (row[i] - mean);
                    var /= double(cols);
                    double const rstd = 1.0 / std::sqrt(var + ln_eps), rs = 1.0 / std::sqrt(sq / double(cols) + rn_eps);
                    for (std::size_t i = 0; i < cols; ++i) {
                        double const gi = affine ? gv[i] : 1.0, bi = affine ? bv[i] : 0.0;
                        double const n = (row[i] - mean) * rstd, want = n * gi + bi;
                        ASSERT_NEAR(lnv[r * cols + i], want, 4e-6 * (std::abs(n * gi) + std::abs(bi)) + 1e-6) << r << ", " << i;
                        double const want_rms = row[i] * rs * gi;
                        ASSERT_NEAR(rnv[r * cols + i], want_rms, 4e-6 * std::abs(want_rms) + 1e-6) << r << ", " << i;
                    }
                }
            }
        }
    });
}

}  // namespace
}  // namespace rayo::test
