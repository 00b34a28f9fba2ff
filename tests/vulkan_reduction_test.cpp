// Reductions and dot on the Vulkan device against float64 references: fresh random data, poisoned
// outputs, whole tensors and every axis of shapes from one element to 2^22, NaN/-inf/tie rules
// (first index wins, NaN propagates) as on the CPU, run-to-run determinism, and both the subgroup
// and the shared-memory paths where the device has subgroup arithmetic.
// Tolerances: sums and means within 1e-6·Σ|x| (as tests/reduction_test.cpp allows the CPU; the
// shaders accumulate double-float pairs), dot within 1e-6·Σ|a·b|; max/min and indices exact.
#include "support/vulkan_support.hpp"
#include "support/reduction_references.hpp"

#include <iostream>

namespace rayo::test {
namespace {

bool same_value(float got, double want) { return std::isnan(want) ? std::isnan(got) : got == want; }

class VulkanReductions : public VulkanTest {
protected:
    // Runs every reduction of `x` (values `v`) over `axis` into poisoned outputs and checks them.
    void check(std::vector<float> const& v, Shape const& shape, int axis) {
        SCOPED_TRACE("shape " + shape_name(shape) + ", axis " + std::to_string(axis));
        auto x = Tensor<float>::from(v, shape, device);
        ReductionReference const r = reduction_reference(v, shape, axis);
        Shape const out_shape = axis < 0 ? Shape{} : sum(x, axis).shape();
        auto f32_out = [&] { return poisoned(out_shape, device); };
        auto i64_out = [&] { return Tensor<std::int64_t>::full(out_shape, -7, device); };
        auto s = f32_out(), m = f32_out(), mx = f32_out(), mn = f32_out();
        auto amx = i64_out(), amn = i64_out();
        reset_stats();
        if (axis < 0) {
            sum(x, s), mean(x, m), max(x, mx), min(x, mn), argmax(x, amx), argmin(x, amn);
        } else {
            sum(x, axis, false, s), mean(x, axis, false, m), max(x, axis, false, mx), min(x, axis, false, mn);
            argmax(x, axis, false, amx), argmin(x, axis, false, amn);
        }
        auto const sv = s.to_vector(), mv = m.to_vector(), mxv = mx.to_vector(), mnv = mn.to_vector();
        auto const amxv = amx.to_vector(), amnv = amn.to_vector();
        EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
        ASSERT_EQ(sv.size(), r.sum.size());
        double const n = static_cast<double>(axis < 0 ? v.size() : static_cast<std::size_t>(shape[static_cast<std::size_t>(axis)]));
        for (std::size_t i = 0; i < r.sum.size(); ++i) {
            if (!std::isfinite(r.sum[i])) {
                ASSERT_TRUE(same_value(sv[i], r.sum[i])) << i << ": " << sv[i] << " vs " << r.sum[i];
                ASSERT_TRUE(same_value(mv[i], r.sum[i])) << i << ": " << mv[i] << " vs " << r.sum[i];
            } else {
                double const tol = 1e-6 * r.abs_sum[i] + 1e-30;
                ASSERT_NEAR(sv[i], r.sum[i], tol) << i;
                ASSERT_NEAR(mv[i], r.sum[i] / n, tol / n) << i;
            }
            ASSERT_TRUE(same_value(mxv[i], r.max[i])) << i << ": " << mxv[i] << " vs " << r.max[i];
            ASSERT_TRUE(same_value(mnv[i], r.min[i])) << i << ": " << mnv[i] << " vs " << r.min[i];
            ASSERT_EQ(amxv[i], r.argmax[i]) << i;
            ASSERT_EQ(amnv[i], r.argmin[i]) << i;
        }
    }
};

TEST_F(VulkanReductions, WholeTensorsOfEverySize) {
    std::cout << device.name() << (vulkan::has_subgroup_arithmetic(device) ? ": subgroup arithmetic\n" : ": no subgroup arithmetic\n");
    on_every_path([&] {
        for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{255}, std::size_t{4097}, std::size_t{1000003},
                              std::size_t{1} << 22}) {
            auto const seed = fresh_seed();
            SCOPED_TRACE("seed " + std::to_string(seed));
            check(random_floats(n, seed), Shape{static_cast<std::int64_t>(n)}, -1);
        }
    });
}

TEST_F(VulkanReductions, EveryAxis) {
    std::vector<Shape> const shapes{{1, 1}, {3, 7}, {64, 1000}, {1, 100000}, {100000, 8}, {5, 3, 7}, {2, 3000, 5},
                                    {300000, 3}};
    on_every_path([&] {
        for (Shape const& shape : shapes) {
            auto const seed = fresh_seed();
            SCOPED_TRACE("seed " + std::to_string(seed));
            auto const v = random_floats(shape.numel(), seed);
            for (int axis = 0; axis < static_cast<int>(shape.rank()); ++axis) check(v, shape, axis);
        }
    });
}

TEST_F(VulkanReductions, NanInfinityAndTiesFollowTheCpu) {
    on_every_path([&] {
        auto const seed = fresh_seed();
        SCOPED_TRACE("seed " + std::to_string(seed));
        std::mt19937 rng(seed);
        float const inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
        for (Shape const& shape : {Shape{64, 1000}, Shape{9, 70001}, Shape{3000, 17}}) {
            // Few distinct values (many ties), -inf rows, ±inf, and scattered NaNs.
            std::vector<float> v(shape.numel());
            for (auto& x : v) x = static_cast<float>(static_cast<int>(rng() % 9) - 4);
            std::size_t const cols = static_cast<std::size_t>(shape[1]);
            for (std::size_t i = 0; i < cols; ++i) v[i] = -inf;                      // row 0: all -inf
            for (std::size_t i = 0; i < cols; ++i) v[cols + i] = i % 3 ? -inf : inf;  // row 1: ±inf
            for (std::size_t k = 0; k < 5; ++k) v[rng() % v.size()] = nan;
            v[2 * cols + cols / 2] = nan;  // row 2: a NaN
            v[2 * cols + cols - 1] = nan;
            for (int axis = -1; axis < 2; ++axis) check(v, shape, axis);
        }
    });
}

TEST_F(VulkanReductions, DotProducts) {
    on_every_path([&] {
        for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{4097}, std::size_t{1000003}, std::size_t{1} << 22}) {
            auto const seed = fresh_seed();
            SCOPED_TRACE("n " + std::to_string(n) + ", seed " + std::to_string(seed));
            auto const av = random_floats(n, seed), bv = random_floats(n, seed + 1);
            auto a = Tensor<float>::from(av, {n}, device), b = Tensor<float>::from(bv, {n}, device);
            auto out = poisoned(Shape{}, device);
            reset_stats();
            dot(a, b, out);
            float const got = out.item();
            EXPECT_EQ(stats().cpu_fallbacks, 0u);
            double want = 0, scale = 0;
            for (std::size_t i = 0; i < n; ++i) {
                want += double(av[i]) * double(bv[i]);
                scale += std::abs(double(av[i]) * double(bv[i]));
            }
            EXPECT_NEAR(got, want, 1e-6 * scale + 1e-30);
        }
    });
}

TEST_F(VulkanReductions, SameBitsEveryRun) {
    auto const v = random_floats(std::size_t{1} << 22, fresh_seed());
    auto x = Tensor<float>::from(v, {v.size()}, device);
    auto y = Tensor<float>::from(v, {1024, 4096}, device);
    float const first = sum(x).item();
    auto const rows = sum(y, 1).to_vector(), cols = sum(y, 0).to_vector();
    for (int run = 0; run < 3; ++run) {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(sum(x).item()), std::bit_cast<std::uint32_t>(first));
        EXPECT_EQ(sum(y, 1).to_vector(), rows);
        EXPECT_EQ(sum(y, 0).to_vector(), cols);
    }
}

}  // namespace
}  // namespace rayo::test
