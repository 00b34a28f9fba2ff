// Element-wise and binary ops on the CUDA device (the PTX kernels of rayo/ptx/kernels/elementwise.hpp)
// against float64 references, on fresh random data with poisoned outputs: every standard shape,
// 1 element, odd sizes and sizes that are no multiple of 4 (the vector tail), views whose offset is
// not 16-byte aligned (the head, and the scalar variant when input and output alignments differ),
// a size large enough for the grid-stride loop, sweeps over the whole float range, and special
// values against the CPU backend. Each op must run on the GPU (no CPU fallback).
//
// Tolerances, in ulps of the float nearest the exact result:
//   0: relu, clip, abs, neg (exact); 0.5: leaky_relu, add, sub, mul, sqrt (sqrt.rn), div (div.rn)
//   4: exp, log, tanh, sigmoid, silu, elu, gelu_tanh, gelu (erf) — the transcendental budget. The
//      kernels' own bounds are tighter (exp 1.02, log 0.85, tanh 3.04, sigmoid 3.17, silu 2.40,
//      elu 1.94, gelu_tanh 2.33 as the CPU; gelu 3.04 on a host model); each test prints the
//      worst error it measured.
#include "support/cuda_support.hpp"

#include <bit>
#include <cstdio>
#include <functional>

namespace rayo::test {
namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float nan = std::numeric_limits<float>::quiet_NaN();

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct OpCase {
    std::string name;
    std::function<void(FTensor const&, FTensor const&)> op;  // (x, out)
    std::function<double(double)> reference;
    float lo, hi;  // random inputs
    double max_ulp;
};

std::vector<OpCase> cases() {
    auto gelu_tanh_ref = [](double x) {
        if (x == -INFINITY) return -0.0;
        return x / (1.0 + std::exp(-2.0 * std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    };
    auto gelu_ref = [](double x) { return x == -INFINITY ? -0.0 : 0.5 * x * std::erfc(-x / std::sqrt(2.0)); };
    auto silu_ref = [](double x) { return x == -INFINITY ? -0.0 : x / (1.0 + std::exp(-x)); };
    return {
        {"relu", [](auto& x, auto& o) { relu(x, o); }, [](double x) { return x < 0 ? 0.0 : x; }, -4, 4, 0},
        {"leaky_relu", [](auto& x, auto& o) { leaky_relu(x, 0.1f, o); },
         [](double x) { return x < 0 ? x * double(0.1f) : x; }, -4, 4, 0.5},
        {"elu", [](auto& x, auto& o) { elu(x, 0.7f, o); },
         [](double x) { return x > 0 ? x : double(0.7f) * std::expm1(x); }, -8, 4, 4},
        {"sigmoid", [](auto& x, auto& o) { sigmoid(x, o); }, sigmoid_ref, -20, 20, 4},
        {"tanh", [](auto& x, auto& o) { tanh(x, o); }, [](double x) { return std::tanh(x); }, -10, 10, 4},
        {"silu", [](auto& x, auto& o) { silu(x, o); }, silu_ref, -20, 20, 4},
        {"gelu_tanh", [](auto& x, auto& o) { gelu(x, Gelu::tanh, o); }, gelu_tanh_ref, -9, 9, 4},
        {"gelu", [](auto& x, auto& o) { gelu(x, Gelu::exact, o); }, gelu_ref, -9, 9, 4},
        {"clip", [](auto& x, auto& o) { clip(x, -1.5f, 2.5f, o); },
         [](double x) { return std::min(std::max(x, -1.5), 2.5); }, -4, 4, 0},
        {"exp", [](auto& x, auto& o) { exp(x, o); }, [](double x) { return std::exp(x); }, -80, 80, 4},
        {"log", [](auto& x, auto& o) { log(x, o); }, [](double x) { return std::log(x); }, 1e-3f, 1e3f, 4},
        {"sqrt", [](auto& x, auto& o) { sqrt(x, o); }, [](double x) { return std::sqrt(x); }, 0, 100, 0.5},
        {"abs", [](auto& x, auto& o) { abs(x, o); }, [](double x) { return std::abs(x); }, -4, 4, 0},
        {"neg", [](auto& x, auto& o) { neg(x, o); }, [](double x) { return -x; }, -4, 4, 0},
    };
}

// ulp_error, and a zero result must carry the reference's sign.
double signed_ulp_error(float got, double want) {
    if (want == 0.0 && got == 0.0 && std::signbit(got) != std::signbit(want))
        return std::numeric_limits<double>::infinity();
    return ulp_error(got, want);
}

struct Worst {
    double ulp = 0;
    float x = 0, got = 0;
};
Worst worst_error(std::vector<float> const& in, std::vector<float> const& got,
                  std::function<double(double)> const& ref) {
    Worst w;
    for (std::size_t i = 0; i < in.size(); ++i) {
        double const e = signed_ulp_error(got[i], ref(in[i]));
        if (!(e <= w.ulp)) w = {e, in[i], got[i]};
    }
    return w;
}

// A 1-D view of n elements starting `offset` elements into a fresh device buffer (offset 1..3:
// not 16-byte aligned), filled with `values` (or poison when empty).
FTensor view_at(Device device, std::vector<float> const& values, std::size_t n, std::size_t offset) {
    std::vector<float> host(n + offset + 3, poison);
    std::copy(values.begin(), values.end(), host.begin() + static_cast<std::ptrdiff_t>(offset));
    auto const total = static_cast<std::int64_t>(host.size());
    return FTensor::from(host, {total}, device)
        .slice(static_cast<std::int64_t>(offset), static_cast<std::int64_t>(offset + n));
}

class CudaElementwise : public CudaTest, public ::testing::WithParamInterface<std::size_t> {};

TEST_P(CudaElementwise, MatchFloat64ReferenceOnEveryShape) {
    OpCase const c = cases()[GetParam()];
    reset_stats();
    auto shapes = op_shapes();
    shapes.push_back(Shape{3});
    shapes.push_back(Shape{(std::int64_t{1} << 22) + 77});  // more than one grid's worth: the grid-stride loop
    Worst overall;
    for (Shape const& shape : shapes) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(c.name + " shape " + shape.to_string() + " seed " + std::to_string(seed));
        auto const in = random_floats(shape.numel(), seed, c.lo, c.hi);
        auto x = FTensor::from(in, shape, device);
        auto out = poisoned(shape, device);
        c.op(x, out);
        Worst const w = worst_error(in, out.to_vector(), c.reference);
        EXPECT_LE(w.ulp, c.max_ulp) << "at x = " << w.x << ": got " << w.got;
        if (w.ulp > overall.ulp) overall = w;
    }
    std::printf("[ measured ] %s: max %.3f ulp (at x = %a)\n", c.name.c_str(), overall.ulp,
                static_cast<double>(overall.x));
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

TEST_P(CudaElementwise, UnalignedViewsAndInPlace) {
    OpCase const c = cases()[GetParam()];
    reset_stats();
    for (std::size_t n : {1u, 2u, 5u, 63u, 1001u, 100003u})
        for (std::size_t in_offset : {0u, 1u, 2u, 3u})
            for (std::size_t out_offset : {in_offset, (in_offset + 1) % 4}) {
                auto const seed = fresh_seed();
                SCOPED_TRACE(c.name + " n " + std::to_string(n) + " offsets " + std::to_string(in_offset) + "/" +
                             std::to_string(out_offset) + " seed " + std::to_string(seed));
                auto const in = random_floats(n, seed, c.lo, c.hi);
                auto x = view_at(device, in, n, in_offset);
                auto out = view_at(device, {}, n, out_offset);
                c.op(x, out);
                Worst const w = worst_error(in, out.to_vector(), c.reference);
                EXPECT_LE(w.ulp, c.max_ulp) << "at x = " << w.x << ": got " << w.got;
                if (in_offset == out_offset) {  // and in place
                    c.op(x, x);
                    Worst const wi = worst_error(in, x.to_vector(), c.reference);
                    EXPECT_LE(wi.ulp, c.max_ulp) << "in place, at x = " << wi.x << ": got " << wi.got;
                }
            }
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaElementwise, ::testing::Range<std::size_t>(0, cases().size()),
                         [](auto const& info) { return cases()[info.param].name; });

using CudaElementwiseRange = CudaTest;

// Every 4099th float (all exponents, both signs, subnormals, infinities, NaNs) plus a dense grid
// where the functions change form: the bounds hold over the whole range.
TEST_F(CudaElementwiseRange, TranscendentalBoundsHoldOverAllFloats) {
    std::vector<float> sweep;
    for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 4099)
        sweep.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
    for (float x = -16.0f; x < 16.0f; x += 1.0f / 4096) sweep.push_back(x);
    auto x = FTensor::from(sweep, {sweep.size()}, device);
    reset_stats();
    for (OpCase const& c : cases()) {
        SCOPED_TRACE(c.name);
        auto out = poisoned(x.shape(), device);
        c.op(x, out);
        Worst const w = worst_error(sweep, out.to_vector(), c.reference);
        // The exact ops over every float too (sqrt of negatives: NaN, like the reference).
        EXPECT_LE(w.ulp, std::max(c.max_ulp, 0.5))
            << "at x = " << std::hexfloat << w.x << std::defaultfloat << " (" << w.x << "): got " << w.got;
        std::printf("[ measured ] %s over all floats: max %.3f ulp (at x = %a)\n", c.name.c_str(), w.ulp,
                    static_cast<double>(w.x));
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

// Special values as the CPU backend gives them (subnormal results included: CUDA keeps them).
TEST_F(CudaElementwiseRange, SpecialValuesMatchTheCpu) {
    std::vector<float> const v{0.0f,    -0.0f,  inf,    -inf,   nan,    -nan,    1e-40f,  -1e-40f, 1e-30f,
                               -1e-30f, 88.0f,  88.8f,  -80.0f, -87.5f, -103.0f, -110.0f, 100.0f,  -100.0f,
                               1.0f,    -9.99f, -12.5f, -14.3f, -14.4f, 6.0f,    1e30f,   -1e30f};
    auto x = FTensor::from(v, {v.size()}, device);
    auto xc = x.to(Device::cpu());
    reset_stats();
    auto same = [&](OpCase const& c) {
        auto out = poisoned(x.shape(), device), want_t = poisoned(x.shape());
        c.op(x, out);
        c.op(xc, want_t);
        auto const got = out.to_vector(), want = want_t.to_vector();
        for (std::size_t i = 0; i < got.size(); ++i) {
            if (std::isnan(want[i])) {
                EXPECT_TRUE(std::isnan(got[i])) << c.name << " at x = " << v[i];
            } else if (std::isinf(want[i]) || want[i] == 0) {
                EXPECT_EQ(got[i], want[i]) << c.name << " at x = " << v[i];
                EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << c.name << " sign at x = " << v[i];
            } else {
                // The CPU's own error and the kernel's add up at most.
                EXPECT_LE(ulp_error(got[i], static_cast<double>(want[i])), 2 * std::max(c.max_ulp, 0.5))
                    << c.name << " at x = " << v[i] << ": " << got[i] << " vs " << want[i];
            }
        }
    };
    for (OpCase const& c : cases()) same(c);
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

// ---- binary

struct BinaryCase {
    std::string name;
    std::function<void(FTensor const&, FTensor const&, FTensor const&)> op;  // (a, b, out)
    std::function<void(FTensor const&, float, FTensor const&)> scalar_op;    // (a, s, out)
    std::function<double(double, double)> reference;
    float lo, hi;
};

std::vector<BinaryCase> binary_cases() {
    return {
        {"add", [](auto& a, auto& b, auto& o) { add(a, b, o); }, [](auto& a, float s, auto& o) { add(a, s, o); },
         [](double x, double y) { return x + y; }, -4, 4},
        {"sub", [](auto& a, auto& b, auto& o) { sub(a, b, o); }, [](auto& a, float s, auto& o) { sub(a, s, o); },
         [](double x, double y) { return x - y; }, -4, 4},
        {"mul", [](auto& a, auto& b, auto& o) { mul(a, b, o); }, [](auto& a, float s, auto& o) { scale(a, s, o); },
         [](double x, double y) { return x * y; }, -4, 4},
        {"div", [](auto& a, auto& b, auto& o) { div(a, b, o); }, [](auto& a, float s, auto& o) { div(a, s, o); },
         [](double x, double y) { return x / y; }, 0.5f, 4},
    };
}

class CudaBinary : public CudaTest, public ::testing::WithParamInterface<std::size_t> {};

TEST_P(CudaBinary, TensorAndScalarOperandsOnEveryShapeAndAlignment) {
    BinaryCase const c = binary_cases()[GetParam()];
    reset_stats();
    auto shapes = op_shapes();
    shapes.push_back(Shape{(std::int64_t{1} << 22) + 77});
    for (Shape const& shape : shapes) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(c.name + " shape " + shape.to_string() + " seed " + std::to_string(seed));
        auto const av = random_floats(shape.numel(), seed, c.lo, c.hi),
                   bv = random_floats(shape.numel(), seed + 1, c.lo, c.hi);
        auto a = FTensor::from(av, shape, device), b = FTensor::from(bv, shape, device);
        auto out = poisoned(shape, device);
        c.op(a, b, out);
        auto const got = out.to_vector();
        for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_LE(ulp_error(got[i], c.reference(av[i], bv[i])), 0.5) << i << ": " << av[i] << ", " << bv[i];
        float const s = 0.7f;
        auto out_s = poisoned(shape, device);
        c.scalar_op(a, s, out_s);
        auto const got_s = out_s.to_vector();
        for (std::size_t i = 0; i < got_s.size(); ++i)
            ASSERT_LE(ulp_error(got_s[i], c.reference(av[i], s)), 0.5) << i << ": " << av[i];
    }
    // Views at every alignment: equal offsets take the vector body, different ones the scalar loop.
    for (std::size_t n : {1u, 6u, 1001u, 70001u})
        for (auto [oa, ob, oo] :
             {std::tuple<std::size_t, std::size_t, std::size_t>{1, 1, 1}, {3, 3, 3}, {0, 1, 0}, {2, 2, 3}}) {
            auto const seed = fresh_seed();
            SCOPED_TRACE(c.name + " n " + std::to_string(n) + " offsets " + std::to_string(oa) + "/" +
                         std::to_string(ob) + "/" + std::to_string(oo) + " seed " + std::to_string(seed));
            auto const av = random_floats(n, seed, c.lo, c.hi), bv = random_floats(n, seed + 1, c.lo, c.hi);
            auto a = view_at(device, av, n, oa), b = view_at(device, bv, n, ob), out = view_at(device, {}, n, oo);
            c.op(a, b, out);
            auto const got = out.to_vector();
            for (std::size_t i = 0; i < n; ++i) ASSERT_LE(ulp_error(got[i], c.reference(av[i], bv[i])), 0.5) << i;
            c.scalar_op(a, -1.3f, out);
            auto const got_s = out.to_vector();
            for (std::size_t i = 0; i < n; ++i) ASSERT_LE(ulp_error(got_s[i], c.reference(av[i], -1.3f)), 0.5) << i;
        }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaBinary, ::testing::Range<std::size_t>(0, binary_cases().size()),
                         [](auto const& info) { return binary_cases()[info.param].name; });

}  // namespace
}  // namespace rayo::test
