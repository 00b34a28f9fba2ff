// Element-wise and binary ops on the Vulkan device against float64 references, on fresh random
// data with poisoned outputs, over the standard shapes plus a size past the dispatch limit.
// Tolerances, in ulps of the result:
//   exact (0.5): relu, leaky_relu, clip, abs, neg, add, sub, mul (IEEE operations)
//   1: sqrt and div (Vulkan allows 3 and 2.5 ulp; the shaders refine with one Newton step)
//   4: exp, log, tanh, sigmoid, silu, elu, gelu_tanh (ports of the CPU kernels, same bounds), and
//      gelu (erf form; the CPU computes it in double, the shader in float with the same decomposition)
// Subnormal results are held to the same ulps (2^-149 in that range) wherever the device keeps
// them (vulkan::subnormal_support: the DenormPreserve shader builds). Only on a device that cannot
// are they allowed to come back flushed to zero, and each test says so and counts them.
#include "support/vulkan_support.hpp"

#include <algorithm>
#include <functional>
#include <iostream>

namespace rayo::test {
namespace {

bool is_subnormal(double x) { return x != 0 && std::abs(x) < std::numeric_limits<float>::min(); }
float flush(float x) { return is_subnormal(x) ? std::copysign(0.0f, x) : x; }

// What a test accepts of float32 subnormals on `device`: exact (to the op's ulps) where its shaders
// preserve them; elsewhere also flushed ones (subnormal results as zero, subnormal inputs read as
// zero), each counted and reported when the test ends, so the leniency is never silent.
class SubnormalPolicy {
public:
    explicit SubnormalPolicy(Device device) : support_(vulkan::subnormal_support(device)), device_(device) {}
    ~SubnormalPolicy() {
        if (flushed_ == 0) return;
        std::cout << device_.name() << " flushes float32 subnormals (VK_KHR_shader_float_controls "
                  << (support_.float_controls ? "present" : "absent") << ", shaderDenormPreserveFloat32 "
                  << support_.denorm_preserve_f32 << ", denormBehaviorIndependence " << support_.denorm_independence
                  << "): " << flushed_ << " results accepted as flushed\n";
        ::testing::Test::RecordProperty("flushed_subnormal_results", static_cast<int>(flushed_));
    }
    SubnormalPolicy(SubnormalPolicy const&) = delete;
    SubnormalPolicy& operator=(SubnormalPolicy const&) = delete;

    [[nodiscard]] bool preserving() const noexcept { return support_.preserving; }
    // Whether `got` is `want` (from the exact inputs) within `max_ulp`, or, on a device that may
    // flush, `flushed_want` (the result of the inputs flushed) with subnormals read as zero: a
    // zero or subnormal result where that one is zero or subnormal (such a device compares
    // subnormal inputs as zero, so max and min may pass on either one's bits).
    [[nodiscard]] bool accepts(float got, double want, double max_ulp, double flushed_want) {
        if (ulp_error(got, want) <= max_ulp) return true;
        if (preserving()) return false;
        bool const flushed = (flush(got) == 0 && flush(static_cast<float>(flushed_want)) == 0) ||
                             ulp_error(got, flushed_want) <= max_ulp;
        flushed_ += flushed ? 1 : 0;
        return flushed;
    }
    [[nodiscard]] bool accepts(float got, double want, double max_ulp) { return accepts(got, want, max_ulp, want); }

private:
    vulkan::SubnormalSupport support_;
    Device device_;
    std::size_t flushed_ = 0;
};

struct OpCase {
    std::string name;
    std::function<void(Tensor<float> const&, Tensor<float> const&, Tensor<float> const&)> op;  // (a, b, out)
    std::function<double(double, double)> reference;
    float lo, hi;
    double max_ulp;
};

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::vector<OpCase> cases() {
    auto unary = [](std::string name, auto op, auto ref, float lo, float hi, double ulp) {
        return OpCase{std::move(name), [op](auto& a, auto&, auto& o) { op(a, o); },
                      [ref](double x, double) { return ref(x); }, lo, hi, ulp};
    };
    return {
        unary("relu", [](auto& x, auto& o) { relu(x, o); }, [](double x) { return x < 0 ? 0.0 : x; }, -4, 4, 0),
        unary("leaky_relu", [](auto& x, auto& o) { leaky_relu(x, 0.1f, o); }, [](double x) { return x < 0 ? x * double(0.1f) : x; }, -4, 4, 0.5),
        unary("elu", [](auto& x, auto& o) { elu(x, 0.7f, o); }, [](double x) { return x > 0 ? x : double(0.7f) * std::expm1(x); }, -8, 4, 4),
        unary("sigmoid", [](auto& x, auto& o) { sigmoid(x, o); }, sigmoid_ref, -20, 20, 4),
        unary("tanh", [](auto& x, auto& o) { tanh(x, o); }, [](double x) { return std::tanh(x); }, -10, 10, 4),
        unary("silu", [](auto& x, auto& o) { silu(x, o); }, [](double x) { return x * sigmoid_ref(x); }, -20, 20, 4),
        unary("gelu_tanh", [](auto& x, auto& o) { gelu(x, Gelu::tanh, o); },
              [](double x) { return x / (1.0 + std::exp(-2.0 * std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }, -9, 9, 4),
        unary("gelu", [](auto& x, auto& o) { gelu(x, Gelu::exact, o); },
              [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, -16, 16, 4),
        unary("clip", [](auto& x, auto& o) { clip(x, -1.5f, 2.5f, o); }, [](double x) { return std::min(std::max(x, -1.5), 2.5); }, -4, 4, 0),
        unary("exp", [](auto& x, auto& o) { exp(x, o); }, [](double x) { return std::exp(x); }, -80, 80, 4),
        unary("log", [](auto& x, auto& o) { log(x, o); }, [](double x) { return std::log(x); }, 1e-3f, 1e3f, 4),
        unary("sqrt", [](auto& x, auto& o) { sqrt(x, o); }, [](double x) { return std::sqrt(x); }, 0, 100, 1),
        unary("abs", [](auto& x, auto& o) { abs(x, o); }, [](double x) { return std::abs(x); }, -4, 4, 0),
        unary("neg", [](auto& x, auto& o) { neg(x, o); }, [](double x) { return -x; }, -4, 4, 0),
        {"add", [](auto& a, auto& b, auto& o) { add(a, b, o); }, [](double x, double y) { return x + y; }, -4, 4, 0.5},
        {"sub", [](auto& a, auto& b, auto& o) { sub(a, b, o); }, [](double x, double y) { return x - y; }, -4, 4, 0.5},
        {"mul", [](auto& a, auto& b, auto& o) { mul(a, b, o); }, [](double x, double y) { return x * y; }, -4, 4, 0.5},
        {"div", [](auto& a, auto& b, auto& o) { div(a, b, o); }, [](double x, double y) { return x / y; }, 0.5f, 4, 1},
        {"add_scalar", [](auto& a, auto&, auto& o) { add(a, 0.3f, o); }, [](double x, double) { return x + double(0.3f); }, -4, 4, 0.5},
        {"sub_scalar", [](auto& a, auto&, auto& o) { sub(a, 0.3f, o); }, [](double x, double) { return x - double(0.3f); }, -4, 4, 0.5},
        {"mul_scalar", [](auto& a, auto&, auto& o) { scale(a, 1.7f, o); }, [](double x, double) { return x * double(1.7f); }, -4, 4, 0.5},
        {"div_scalar", [](auto& a, auto&, auto& o) { div(a, 0.7f, o); }, [](double x, double) { return x / double(0.7f); }, -4, 4, 1},
    };
}

class VulkanOps : public VulkanTest, public ::testing::WithParamInterface<std::size_t> {};

TEST_P(VulkanOps, MatchFloat64ReferenceOnEveryShape) {
    OpCase const c = cases()[GetParam()];
    reset_stats();
    SubnormalPolicy subnormals(device);  // gelu's range reaches subnormal results
    auto shapes = op_shapes();
    shapes.push_back(Shape{65535 * 256 + 77});  // more groups than one dispatch may have: the grid-stride loop
    for (Shape const& shape : shapes) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(c.name + " shape " + shape.to_string() + " seed " + std::to_string(seed));
        auto const av = random_floats(shape.numel(), seed, c.lo, c.hi);
        auto const bv = random_floats(shape.numel(), seed + 1, c.lo, c.hi);
        auto a = Tensor<float>::from(av, shape, device);
        auto b = Tensor<float>::from(bv, shape, device);
        auto out = poisoned(shape, device);
        c.op(a, b, out);
        auto const got = out.to_vector();
        double worst = 0;
        std::size_t at = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
            double const want = c.reference(av[i], bv[i]);
            double const e = ulp_error(got[i], want);
            if (e > worst && !(e > c.max_ulp && subnormals.accepts(got[i], want, c.max_ulp))) worst = e, at = i;
        }
        EXPECT_LE(worst, c.max_ulp) << "at a = " << av[at] << ", b = " << bv[at] << ": got " << got[at];
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

INSTANTIATE_TEST_SUITE_P(Vulkan, VulkanOps, ::testing::Range<std::size_t>(0, cases().size()),
                         [](auto const& info) { return cases()[info.param].name; });

// The element-wise shaders read and write vec4s where every operand's offset is a multiple of 4
// elements (with a scalar tail of n % 4) and single floats otherwise. Views at offsets of both
// kinds, sizes around multiples of 4: each result against the reference, nothing written outside
// out's view, and both forms bit for bit equal (they apply the same per-element function).
class VulkanOpsViews : public VulkanTest, public ::testing::WithParamInterface<std::size_t> {};

TEST_P(VulkanOpsViews, VectorAndScalarFormsAgreeBitForBit) {
    OpCase const c = cases()[GetParam()];
    reset_stats();
    SubnormalPolicy subnormals(device);
    struct Offsets {
        std::size_t a, b, out;
    };
    // The first is the vec4 form at offset 0, the reference for the bitwise comparison.
    std::vector<Offsets> const offsets{{0, 0, 0}, {4, 8, 12}, {1, 1, 1}, {0, 0, 3}, {0, 2, 0}, {3, 0, 0}, {5, 6, 7}};
    constexpr std::size_t margin = 5;
    // `values` at `offset` in a larger tensor holding `fill` around them; the whole and the view.
    auto view = [&](std::vector<float> const& values, std::size_t offset, float fill) {
        std::vector<float> host(offset + values.size() + margin, fill);
        std::copy(values.begin(), values.end(), host.begin() + static_cast<std::ptrdiff_t>(offset));
        auto whole = Tensor<float>::from(host, {host.size()}, device);
        return std::pair{whole, whole.slice(static_cast<std::int64_t>(offset), static_cast<std::int64_t>(offset + values.size()))};
    };
    for (std::size_t n : {1, 3, 4, 5, 7, 8, 1027, 4099}) {
        auto const seed = fresh_seed();
        auto const av = random_floats(n, seed, c.lo, c.hi), bv = random_floats(n, seed + 1, c.lo, c.hi);
        std::vector<float> first;
        for (Offsets o : offsets) {
            SCOPED_TRACE(c.name + " of " + std::to_string(n) + " elements at offsets a " + std::to_string(o.a) + " b " +
                         std::to_string(o.b) + " out " + std::to_string(o.out) + ", seed " + std::to_string(seed));
            auto const [a_all, a] = view(av, o.a, 1.0f);
            auto const [b_all, b] = view(bv, o.b, 1.0f);
            auto const [out_all, out] = view(std::vector<float>(n, poison), o.out, poison);
            c.op(a, b, out);
            auto const all = out_all.to_vector();
            for (std::size_t i = 0; i < all.size(); ++i)
                if (i < o.out || i >= o.out + n) ASSERT_EQ(all[i], poison) << "written outside the view at " << i;
            std::vector<float> const got(all.begin() + static_cast<std::ptrdiff_t>(o.out),
                                         all.begin() + static_cast<std::ptrdiff_t>(o.out + n));
            for (std::size_t i = 0; i < n; ++i) {
                double const want = c.reference(av[i], bv[i]);
                EXPECT_TRUE(ulp_error(got[i], want) <= c.max_ulp || subnormals.accepts(got[i], want, c.max_ulp))
                    << "element " << i << ": a = " << av[i] << ", b = " << bv[i] << ": got " << got[i] << ", want " << want;
            }
            if (first.empty()) first = got;
            for (std::size_t i = 0; i < n; ++i)
                ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(first[i]))
                    << "element " << i << ": " << got[i] << " here, " << first[i] << " from the vec4 form at offset 0";
        }
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

INSTANTIATE_TEST_SUITE_P(Vulkan, VulkanOpsViews, ::testing::Range<std::size_t>(0, cases().size()),
                         [](auto const& info) { return cases()[info.param].name; });

using VulkanOpsSpecial = VulkanTest;

TEST_F(VulkanOpsSpecial, SpecialValuesMatchTheCpu) {
    float const inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    // -100 gives subnormal results (exp, sigmoid, silu); ±1e-40 are subnormal inputs.
    std::vector<float> const v{0.0f,  -0.0f,  inf,    -inf,    nan,  1e-30f, -1e-30f,
                               88.0f, -80.0f, 100.0f, -100.0f, 1.0f, 1e-40f, -1e-40f};
    std::vector<float> flushed_v(v.size());
    std::transform(v.begin(), v.end(), flushed_v.begin(), flush);
    auto x = Tensor<float>::from(v, {v.size()}, device);
    auto xc = x.to(Device::cpu());
    auto xf = Tensor<float>::from(flushed_v, {v.size()}, Device::cpu());  // as a flushing device reads x
    SubnormalPolicy subnormals(device);
    auto same = [&](auto op, std::string const& name, double ulps) {
        auto const got = op(x).to_vector(), want = op(xc).to_vector(), want_flushed = op(xf).to_vector();
        for (std::size_t i = 0; i < got.size(); ++i) {
            SCOPED_TRACE(name + " of " + std::to_string(v[i]) + " (element " + std::to_string(i) + ")");
            if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i]) || (!subnormals.preserving() && std::isnan(want_flushed[i])));
            else if (std::isinf(want[i]) || want[i] == 0) {
                bool const exact = got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i]);
                bool const as_flushed = got[i] == want_flushed[i] && std::signbit(got[i]) == std::signbit(want_flushed[i]);
                EXPECT_TRUE(exact || (!subnormals.preserving() && as_flushed)) << "got " << got[i] << ", want " << want[i];
            } else {
                EXPECT_TRUE(subnormals.accepts(got[i], want[i], ulps, want_flushed[i])) << "got " << got[i] << ", want " << want[i];
            }
        }
    };
    same([](auto const& t) { return exp(t); }, "exp", 2);
    same([](auto const& t) { return log(abs(t)); }, "log", 2);
    same([](auto const& t) { return tanh(t); }, "tanh", 2);
    same([](auto const& t) { return sigmoid(t); }, "sigmoid", 2);
    same([](auto const& t) { return relu(t); }, "relu", 0);
    same([](auto const& t) { return elu(t, 1.0f); }, "elu", 2);
    same([](auto const& t) { return silu(t); }, "silu", 2);
    same([](auto const& t) { return gelu(t, Gelu::tanh); }, "gelu_tanh", 2);
    same([](auto const& t) { return gelu(t); }, "gelu", 4);
    same([](auto const& t) { return sqrt(abs(t)); }, "sqrt", 0);
    same([](auto const& t) { return div(t, 3.0f); }, "div", 0.5);
}

TEST_F(VulkanOpsSpecial, GeluErfOverEveryRangeOfFloats) {
    // Dense sweeps of [-16, 16] and both tails (down to -15, where x·Φ(x) underflows), and tiny |x|.
    std::vector<float> v;
    for (float x = -16.0f; x <= 16.0f; x += 1.0f / 4096) v.push_back(x);
    for (float x = 1e-30f; x < 1.0f; x *= 1.37f) v.insert(v.end(), {x, -x});
    auto const r = random_floats(100000, fresh_seed(), -15.0f, 6.0f);
    v.insert(v.end(), r.begin(), r.end());
    auto x = Tensor<float>::from(v, {v.size()}, device);
    reset_stats();
    auto const got = gelu(x).to_vector();
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
    SubnormalPolicy subnormals(device);
    double worst = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
        double const want = 0.5 * double(v[i]) * std::erfc(-double(v[i]) / std::sqrt(2.0));
        // Subnormal results count like the others where the device keeps them; elsewhere a flushed
        // one (zero) is accepted, and counted.
        if (!subnormals.preserving() && is_subnormal(want)) {
            EXPECT_TRUE(subnormals.accepts(got[i], want, 4.0)) << "at x = " << v[i] << ": got " << got[i];
            continue;
        }
        if (double const e = ulp_error(got[i], want); e > worst) worst = e, at = i;
    }
    EXPECT_LE(worst, 4.0) << "at x = " << v[at] << ": got " << got[at];
    std::cout << "gelu (erf form): worst error " << worst << " ulp at x = " << v[at] << "\n";
}

// The shaders built both ways run their DenormPreserve build exactly where the device reports it
// can (shaderDenormPreserveFloat32, with an independence that lets float32 be set alone).
TEST_F(VulkanOpsSpecial, ShadersKeepSubnormalsWhereTheDeviceAllowsIt) {
    auto const support = vulkan::subnormal_support(device);
    std::cout << device.name() << ": VK_KHR_shader_float_controls " << (support.float_controls ? "present" : "absent")
              << ", shaderDenormPreserveFloat32 " << support.denorm_preserve_f32 << ", denormBehaviorIndependence "
              << support.denorm_independence << ": ops run the "
              << (support.preserving ? "DenormPreserve shader builds" : "default shader builds (subnormals may flush)")
              << "\n";
    EXPECT_EQ(support.device_preserves,
              support.float_controls && support.denorm_preserve_f32 && support.denorm_independence != "none");
    EXPECT_EQ(support.preserving, support.device_preserves) << "nothing turned the DenormPreserve builds off";

    // exp runs the unary shader, which has both builds: its pipeline is counted under the build used.
    (void)exp(Tensor<float>::from(std::vector<float>{-100.0f}, {1}, device)).to_vector();
    auto const after = vulkan::subnormal_support(device);
    if (support.device_preserves) EXPECT_GT(after.preserving_pipelines, 0u) << "exp did not run the DenormPreserve build";
    else EXPECT_EQ(after.preserving_pipelines, 0u) << "a DenormPreserve build ran on a device that cannot preserve";
}

// Results (and inputs) below 2^-126 against float64 references, through each shader family that
// has a DenormPreserve build: element-wise, binary, reductions and dot, softmax, matmul.
TEST_F(VulkanOpsSpecial, SubnormalResultsSurvive) {
    reset_stats();
    SubnormalPolicy subnormals(device);
    auto one = [&](float value) { return Tensor<float>::from(std::vector<float>{value}, {1}, device); };
    auto check = [&](std::string const& what, Tensor<float> const& result, double want, double max_ulp, double flushed_want) {
        float const got = result.to_vector().at(0);
        EXPECT_TRUE(subnormals.accepts(got, want, max_ulp, flushed_want)) << what << ": got " << got << ", want " << want;
        if (subnormals.preserving() && is_subnormal(want))
            EXPECT_EQ(std::fpclassify(got), FP_SUBNORMAL) << what << ": got " << got << ", want " << want;
    };
    double const sqrt_2_over_pi = std::sqrt(2.0 / M_PI);
    float const tiny = 1e-40f, small = 1e-20f;  // tiny is subnormal, small·small is
    double const t = tiny, s = small;

    check("exp(-100)", exp(one(-100.0f)), std::exp(-100.0), 1, std::exp(-100.0));
    check("exp(-103)", exp(one(-103.0f)), std::exp(-103.0), 1, std::exp(-103.0));  // 2^-149, the smallest
    check("sigmoid(-100)", sigmoid(one(-100.0f)), 1 / (1 + std::exp(100.0)), 2, 0);
    check("silu(-100)", silu(one(-100.0f)), -100 / (1 + std::exp(100.0)), 2, 0);
    check("gelu(-13.5)", gelu(one(-13.5f)), 0.5 * -13.5 * std::erfc(13.5 / std::sqrt(2.0)), 4, 0);
    double const g = -10.3f;
    check("gelu_tanh(-10.3)", gelu(one(-10.3f), Gelu::tanh),
          g / (1 + std::exp(-2 * sqrt_2_over_pi * (g + 0.044715 * g * g * g))), 4, 0);
    check("relu(-1e-40)", relu(one(-tiny)), 0.0, 0, 0.0);
    check("relu(1e-40)", relu(one(tiny)), t, 0, 0.0);
    check("neg(1e-40)", neg(one(tiny)), -t, 0, 0.0);
    check("tanh(1e-40)", tanh(one(tiny)), t, 1, 0.0);
    check("sqrt(1e-40)", sqrt(one(tiny)), std::sqrt(t), 1, 0.0);
    check("mul(1e-20, 1e-20)", mul(one(small), one(small)), s * s, 0.5, s * s);
    check("scale(1e-20, 1e-20)", scale(one(small), small), s * s, 0.5, s * s);
    check("add(1e-40, 1e-40)", add(one(tiny), one(tiny)), 2 * t, 0.5, 0.0);
    check("div(1e-30, 1e10)", div(one(1e-30f), one(1e10f)), double(1e-30f) / double(1e10f), 1, double(1e-30f) / double(1e10f));

    std::vector<float> const tinies{1e-40f, 2e-40f, 3e-40f};
    double const tinies_sum = double(1e-40f) + double(2e-40f) + double(3e-40f);
    auto v = Tensor<float>::from(tinies, {3}, device);
    check("sum of subnormals", sum(v), tinies_sum, 1, 0.0);
    check("max of subnormals", max(v), double(3e-40f), 0, 0.0);
    std::vector<float> const smalls{1e-20f, 2e-20f};
    double const smalls_dot = double(1e-20f) * double(1e-20f) + double(2e-20f) * double(1e-20f);
    auto a = Tensor<float>::from(smalls, {2}, device);
    auto b = Tensor<float>::from(std::vector<float>{1e-20f, 1e-20f}, {2}, device);
    check("dot of small vectors", dot(a, b), smalls_dot, 2, smalls_dot);
    check("matmul of small matrices", matmul(a.reshape({1, 2}), b.reshape({2, 1})).reshape({1}), smalls_dot, 2, smalls_dot);
    auto logits = Tensor<float>::from(std::vector<float>{0.0f, -100.0f}, {1, 2}, device);
    double const e = std::exp(-100.0);
    check("softmax([0, -100])[1]", softmax(logits, -1).reshape({2}).slice(1, 2), e / (1 + e), 4, 0.0);
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

// With the DenormPreserve builds turned off every op runs its default build (which may flush on
// this device), so that path is exercised on devices that could preserve too.
TEST_F(VulkanOpsSpecial, DefaultShaderBuildsStillRun) {
    struct DefaultBuilds {
        Device device;
        ~DefaultBuilds() { vulkan::use_denorm_preserve(device, true); }
    } const restore{device};
    vulkan::use_denorm_preserve(device, false);
    auto const support = vulkan::subnormal_support(device);
    EXPECT_FALSE(support.preserving);
    auto x = Tensor<float>::from(std::vector<float>{-100.0f, 0.0f, 1.0f}, {3}, device);
    auto const got = exp(x).to_vector();
    std::cout << device.name() << ", default shader build: exp(-100) = " << got[0]
              << (got[0] == 0.0f ? " (flushed)" : " (kept)") << "\n";
    EXPECT_TRUE(got[0] == 0.0f || ulp_error(got[0], std::exp(-100.0)) <= 1.0) << got[0];  // 0 where the device flushes
    EXPECT_EQ(got[1], 1.0f);
    EXPECT_LE(ulp_error(got[2], std::exp(1.0)), 4.0);
    EXPECT_GT(vulkan::subnormal_support(device).default_mode_pipelines, 0u);
}

}  // namespace
}  // namespace rayo::test
