// Reductions over the whole tensor and along every axis, against float64 references.
#include "support/test_support.hpp"

namespace rayo::test {
namespace {

struct Ref {
    std::vector<double> sum, abs_sum, max, min;
    std::vector<std::int64_t> argmax, argmin;
    Shape shape;
};

// Reference over axis `axis` (or everything when axis < 0) of `in` with shape `shape`.
Ref reference(std::vector<float> const& in, Shape const& shape, int axis) {
    std::size_t outer = 1, extent = in.size(), inner = 1;
    std::vector<std::int64_t> dims;
    if (axis >= 0) {
        extent = static_cast<std::size_t>(shape[static_cast<std::size_t>(axis)]);
        for (std::size_t i = 0; i < shape.rank(); ++i) {
            if (i < static_cast<std::size_t>(axis)) outer *= static_cast<std::size_t>(shape[i]);
            if (i > static_cast<std::size_t>(axis)) inner *= static_cast<std::size_t>(shape[i]);
            if (i != static_cast<std::size_t>(axis)) dims.push_back(shape[i]);
        }
    }
    Ref r;
    r.shape = Shape(dims);
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t j = 0; j < inner; ++j) {
            double s = 0, a = 0, mx = -INFINITY, mn = INFINITY;
            std::int64_t imx = 0, imn = 0;
            for (std::size_t e = 0; e < extent; ++e) {
                double const v = in[(o * extent + e) * inner + j];
                s += v;
                a += std::abs(v);
                if (v > mx) mx = v, imx = static_cast<std::int64_t>(e);
                if (v < mn) mn = v, imn = static_cast<std::int64_t>(e);
            }
            r.sum.push_back(s), r.abs_sum.push_back(a), r.max.push_back(mx), r.min.push_back(mn);
            r.argmax.push_back(imx), r.argmin.push_back(imn);
        }
    return r;
}

class Reductions : public ::testing::TestWithParam<CpuArch> {};

void check(Tensor<float> const& x, std::vector<float> const& in, int axis, bool keepdim) {
    Ref const r = reference(in, x.shape(), axis);
    auto const n = static_cast<double>(axis < 0 ? in.size() : static_cast<std::size_t>(x.shape()[static_cast<std::size_t>(axis)]));
    auto run = [&](auto all, auto along) { return axis < 0 ? all(x) : along(x, axis, keepdim); };
    auto const s = run([](auto& t) { return sum(t); }, [](auto& t, int a, bool k) { return sum(t, a, k); });
    auto const m = run([](auto& t) { return mean(t); }, [](auto& t, int a, bool k) { return mean(t, a, k); });
    auto const mx = run([](auto& t) { return max(t); }, [](auto& t, int a, bool k) { return max(t, a, k); });
    auto const mn = run([](auto& t) { return min(t); }, [](auto& t, int a, bool k) { return min(t, a, k); });
    auto const amx = run([](auto& t) { return argmax(t); }, [](auto& t, int a, bool k) { return argmax(t, a, k); });
    auto const amn = run([](auto& t) { return argmin(t); }, [](auto& t, int a, bool k) { return argmin(t, a, k); });
    ASSERT_EQ(s.numel(), r.sum.size());
    if (axis >= 0 && keepdim) {
        EXPECT_EQ(s.rank(), x.rank());
        EXPECT_EQ(s.shape()[static_cast<std::size_t>(axis)], 1);
    } else {
        EXPECT_EQ(s.shape(), r.shape);
    }
    auto const sv = s.to_vector(), mv = m.to_vector(), mxv = mx.to_vector(), mnv = mn.to_vector();
    auto const amxv = amx.to_vector(), amnv = amn.to_vector();
    for (std::size_t i = 0; i < r.sum.size(); ++i) {
        // Blocked accumulation: within 1e-6 of Σ|x| (float rounding of the result included).
        double const tol = 1e-6 * r.abs_sum[i] + 1e-30;
        ASSERT_NEAR(sv[i], r.sum[i], tol) << i;
        ASSERT_NEAR(mv[i], r.sum[i] / n, tol / n) << i;
        ASSERT_EQ(mxv[i], r.max[i]) << i;
        ASSERT_EQ(mnv[i], r.min[i]) << i;
        ASSERT_EQ(amxv[i], r.argmax[i]) << i;
        ASSERT_EQ(amnv[i], r.argmin[i]) << i;
    }
}

TEST_P(Reductions, WholeTensorAndEveryAxis) {
    ArchScope scope(GetParam());
    for (Shape const& shape : op_shapes()) {
        auto const seed = fresh_seed();
        SCOPED_TRACE("shape " + shape.to_string() + " seed " + std::to_string(seed));
        auto const in = random_floats(shape.numel(), seed, -100.0f, 100.0f);
        auto x = Tensor<float>::from(in, shape);
        check(x, in, -1, false);
        for (int axis = 0; axis < static_cast<int>(shape.rank()); ++axis) {
            SCOPED_TRACE("axis " + std::to_string(axis));
            check(x, in, axis, false);
            check(x, in, axis, true);
        }
    }
}

TEST_P(Reductions, LargeSumKeepsFloatAccuracy) {
    ArchScope scope(GetParam());
    std::size_t const n = (1u << 22) + 3;
    auto const in = random_floats(n, fresh_seed(), 0.0f, 1.0f);
    double want = 0;
    for (float v : in) want += v;
    EXPECT_NEAR(sum(Tensor<float>::from(in, {n})).item(), want, 2e-7 * want);
}

TEST_P(Reductions, NanPropagatesAndTiesTakeTheFirstIndex) {
    ArchScope scope(GetParam());
    float const nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> v(100, 1.0f);
    v[10] = 5.0f, v[70] = 5.0f, v[20] = -3.0f, v[90] = -3.0f;
    auto x = Tensor<float>::from(v, {100});
    EXPECT_EQ(argmax(x).item(), 10);
    EXPECT_EQ(argmin(x).item(), 20);
    v[42] = nan;
    v[77] = nan;
    x = Tensor<float>::from(v, {100});
    EXPECT_TRUE(std::isnan(max(x).item()));
    EXPECT_TRUE(std::isnan(min(x).item()));
    EXPECT_TRUE(std::isnan(sum(x).item()));
    EXPECT_EQ(argmax(x).item(), 42);
    EXPECT_EQ(argmin(x).item(), 42);
    auto const cols = argmax(x.reshape({10, 10}), 0).to_vector();
    EXPECT_EQ(cols[2], 4);  // column 2 holds the NaN at row 4
    EXPECT_TRUE(std::isnan(max(x.reshape({10, 10}), 1).to_vector()[4]));
    // Infinities are ordinary values.
    std::vector<float> w{1.0f, INFINITY, -INFINITY, 2.0f};
    auto t = Tensor<float>::from(w, {4});
    EXPECT_EQ(max(t).item(), INFINITY);
    EXPECT_EQ(argmin(t).item(), 2);
}

TEST_P(Reductions, EmptyExtent) {
    ArchScope scope(GetParam());
    auto e = Tensor<float>::empty({0});
    EXPECT_EQ(sum(e).item(), 0.0f);
    EXPECT_TRUE(std::isnan(mean(e).item()));
    auto z = Tensor<float>::empty({3, 0});
    auto s = sum(z, 1).to_vector();
    EXPECT_EQ(s, std::vector<float>(3, 0.0f));
    EXPECT_EQ(sum(z, 0).numel(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Cpu, Reductions, ::testing::ValuesIn(archs()), ArchParamName{});

}  // namespace
}  // namespace rayo::test
