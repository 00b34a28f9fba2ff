// Reductions and dot products on the CUDA device (the PTX kernels of rayo/ptx/kernels/reduction.hpp)
// against float64 references: the whole tensor and every axis of the standard shapes, 1 element,
// odd sizes, views whose offset is not 16-byte aligned, and sizes that take the two-pass path
// (a long axis split into parts whose partial results a second kernel combines). Every op must run
// on the GPU (no CPU fallback), and repeated runs must give the same bits.
//
// Tolerances: sum and mean within 1e-6·Σ|x| of the exact value (the CPU's bound; the kernels
// accumulate in f64), dot within 1e-6·Σ|a·b|; max, min, argmax, argmin exact — NaN wins and the
// first index of the extreme (or of the first NaN) is reported, as on the CPU.
#include "support/cuda_support.hpp"
#include "support/reduction_references.hpp"

#include <bit>

namespace rayo::test {
namespace {

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void check(FTensor const& x, std::vector<float> const& in, int axis, bool keepdim) {
    ReductionReference const r = reduction_reference(in, x.shape(), axis);
    auto const n =
        static_cast<double>(axis < 0 ? in.size() : static_cast<std::size_t>(x.shape()[static_cast<std::size_t>(axis)]));
    auto run = [&](auto all, auto along) { return axis < 0 ? all(x) : along(x, axis, keepdim); };
    auto const s = run([](auto& t) { return sum(t); }, [](auto& t, int a, bool k) { return sum(t, a, k); }).to_vector();
    auto const m =
        run([](auto& t) { return mean(t); }, [](auto& t, int a, bool k) { return mean(t, a, k); }).to_vector();
    auto const mx =
        run([](auto& t) { return max(t); }, [](auto& t, int a, bool k) { return max(t, a, k); }).to_vector();
    auto const mn =
        run([](auto& t) { return min(t); }, [](auto& t, int a, bool k) { return min(t, a, k); }).to_vector();
    auto const amx =
        run([](auto& t) { return argmax(t); }, [](auto& t, int a, bool k) { return argmax(t, a, k); }).to_vector();
    auto const amn =
        run([](auto& t) { return argmin(t); }, [](auto& t, int a, bool k) { return argmin(t, a, k); }).to_vector();
    ASSERT_EQ(s.size(), r.sum.size());
    for (std::size_t i = 0; i < r.sum.size(); ++i) {
        double const tol = 1e-6 * r.abs_sum[i] + 1e-30;
        if (std::isfinite(r.sum[i])) {
            ASSERT_NEAR(s[i], r.sum[i], tol) << i;
            ASSERT_NEAR(m[i], r.sum[i] / n, tol / n) << i;
        } else {
            ASSERT_TRUE(same_float(s[i], static_cast<float>(r.sum[i]))) << i << ": " << s[i];
        }
        ASSERT_TRUE(same_float(mx[i], r.max[i])) << i << ": " << mx[i] << " vs " << r.max[i];
        ASSERT_TRUE(same_float(mn[i], r.min[i])) << i << ": " << mn[i] << " vs " << r.min[i];
        ASSERT_EQ(amx[i], r.argmax[i]) << i;
        ASSERT_EQ(amn[i], r.argmin[i]) << i;
    }
}

// A tensor of `shape` whose data starts `offset` elements into its buffer (offset 1..3: not
// 16-byte aligned): a slice of a longer 1-D tensor, reshaped.
FTensor view_at(Device device, std::vector<float> const& values, Shape const& shape, std::size_t offset) {
    std::vector<float> host(values.size() + offset + 5, poison);
    std::copy(values.begin(), values.end(), host.begin() + static_cast<std::ptrdiff_t>(offset));
    auto const total = static_cast<std::int64_t>(host.size());
    auto const begin = static_cast<std::int64_t>(offset);
    return FTensor::from(host, {total}, device)
        .slice(begin, begin + static_cast<std::int64_t>(values.size()))
        .reshape(std::vector<std::int64_t>(shape.dims().begin(), shape.dims().end()));
}

using CudaReduction = CudaTest;

TEST_F(CudaReduction, WholeTensorAndEveryAxis) {
    reset_stats();
    auto shapes = op_shapes();
    // A long row (split into parts), few long columns (split too), many short rows, a tall block.
    for (Shape s : {Shape{3}, Shape{2, 100003}, Shape{100003, 3}, Shape{200000, 5}, Shape{64, 4097}, Shape{7, 3, 2049}})
        shapes.push_back(s);
    for (Shape const& shape : shapes)
        for (std::size_t offset : {0u, 1u, 3u}) {
            auto const seed = fresh_seed();
            SCOPED_TRACE("shape " + shape.to_string() + " offset " + std::to_string(offset) + " seed " +
                         std::to_string(seed));
            auto const in = random_floats(shape.numel(), seed, -100.0f, 100.0f);
            auto x = view_at(device, in, shape, offset);
            check(x, in, -1, false);
            for (int axis = 0; axis < static_cast<int>(shape.rank()); ++axis) {
                SCOPED_TRACE("axis " + std::to_string(axis));
                check(x, in, axis, false);
                check(x, in, axis, true);
            }
        }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

TEST_F(CudaReduction, LargeSumKeepsFloatAccuracyAndIsBitwiseRepeatable) {
    reset_stats();
    for (std::size_t n : {(std::size_t{1} << 22) + 3, (std::size_t{1} << 26) + 1}) {
        auto const in = random_floats(n, fresh_seed(), 0.0f, 1.0f);
        double want = 0;
        for (float v : in) want += v;
        auto x = FTensor::from(in, {n}, device);
        float const first = sum(x).item();
        EXPECT_NEAR(first, want, 2e-7 * want) << n;
        for (int run = 0; run < 3; ++run) {
            EXPECT_EQ(std::bit_cast<std::uint32_t>(sum(x).item()), std::bit_cast<std::uint32_t>(first)) << n;
            EXPECT_EQ(argmax(x).item(), argmax(x).item());
        }
        // Along an axis of a view of the same data, too.
        auto rows =
            x.slice(0, static_cast<std::int64_t>(n - n % 1024)).reshape({static_cast<std::int64_t>(n / 1024), 1024});
        auto const s0 = sum(rows, 0).to_vector(), s1 = sum(rows, 0).to_vector();
        EXPECT_EQ(s0, s1);
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

TEST_F(CudaReduction, NanPropagatesAndTiesTakeTheFirstIndex) {
    reset_stats();
    float const nan = std::numeric_limits<float>::quiet_NaN();
    for (std::size_t n : {100u, 5000u, 300010u}) {
        SCOPED_TRACE("n " + std::to_string(n));
        std::vector<float> v(n, 1.0f);
        // Equal extremes far apart (in different parts of a split row).
        v[10] = 5.0f, v[n - 3] = 5.0f, v[20] = -3.0f, v[n / 2] = -3.0f;
        auto x = FTensor::from(v, {n}, device);
        EXPECT_EQ(argmax(x).item(), 10);
        EXPECT_EQ(argmin(x).item(), 20);
        check(x, v, -1, false);
        v[n / 3] = nan, v[n - 7] = nan;
        x = FTensor::from(v, {n}, device);
        EXPECT_TRUE(std::isnan(max(x).item()));
        EXPECT_TRUE(std::isnan(min(x).item()));
        EXPECT_TRUE(std::isnan(sum(x).item()));
        EXPECT_EQ(argmax(x).item(), static_cast<std::int64_t>(n / 3));
        EXPECT_EQ(argmin(x).item(), static_cast<std::int64_t>(n / 3));
        check(x.reshape({static_cast<std::int64_t>(n / 10), 10}), v, 0, false);
        check(x.reshape({static_cast<std::int64_t>(n / 10), 10}), v, 1, false);
    }
    // Infinities are ordinary values; a run of -inf has its argmax at 0.
    std::vector<float> w{1.0f, INFINITY, -INFINITY, 2.0f};
    auto t = FTensor::from(w, {4}, device);
    EXPECT_EQ(max(t).item(), INFINITY);
    EXPECT_EQ(argmin(t).item(), 2);
    auto ninf = FTensor::full({1000}, -INFINITY, device);
    EXPECT_EQ(argmax(ninf).item(), 0);
    EXPECT_EQ(max(ninf).item(), -INFINITY);
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

TEST_F(CudaReduction, EmptyExtent) {
    auto e = FTensor::empty({0}, device);
    EXPECT_EQ(sum(e).item(), 0.0f);
    EXPECT_TRUE(std::isnan(mean(e).item()));
    auto z = FTensor::empty({3, 0}, device);
    EXPECT_EQ(sum(z, 1).to_vector(), std::vector<float>(3, 0.0f));
    EXPECT_EQ(sum(z, 0).numel(), 0u);
    auto z3 = FTensor::empty({2, 0, 5}, device);
    EXPECT_EQ(sum(z3, 1).to_vector(), std::vector<float>(10, 0.0f));
}

TEST_F(CudaReduction, DotOnEverySizeAndAlignment) {
    reset_stats();
    for (std::size_t n : {1u, 3u, 7u, 64u, 1000u, 4097u, 100003u, (1u << 22) + 5u})
        for (auto [oa, ob] : {std::pair<std::size_t, std::size_t>{0, 0}, {1, 1}, {1, 2}, {3, 0}}) {
            auto const seed = fresh_seed();
            SCOPED_TRACE("n " + std::to_string(n) + " offsets " + std::to_string(oa) + "/" + std::to_string(ob) +
                         " seed " + std::to_string(seed));
            auto const av = random_floats(n, seed, -2.0f, 2.0f), bv = random_floats(n, seed + 1, -2.0f, 2.0f);
            Shape const shape{static_cast<std::int64_t>(n)};
            auto a = view_at(device, av, shape, oa), b = view_at(device, bv, shape, ob);
            double want = 0, abs_sum = 0;
            for (std::size_t i = 0; i < n; ++i) {
                double const p = static_cast<double>(av[i] * bv[i]);  // products rounded to f32, as on the CPU
                want += p, abs_sum += std::abs(p);
            }
            float const got = dot(a, b).item();
            EXPECT_NEAR(got, want, 1e-6 * abs_sum + 1e-30);
            EXPECT_EQ(std::bit_cast<std::uint32_t>(dot(a, b).item()), std::bit_cast<std::uint32_t>(got))
                << "repeatable";
        }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

}  // namespace
}  // namespace rayo::test
