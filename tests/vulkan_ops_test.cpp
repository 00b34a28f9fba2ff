// Element-wise and binary ops on the Vulkan device against float64 references, on fresh random
// data with poisoned outputs, over the standard shapes plus a size past the dispatch limit.
// Tolerances, in ulps of the result:
//   exact (0.5): relu, leaky_relu, clip, abs, neg, add, sub, mul (IEEE operations)
//   1: sqrt and div (Vulkan allows 3 and 2.5 ulp; the shaders refine with one Newton step)
//   4: exp, log, tanh, sigmoid, silu, elu, gelu_tanh (ports of the CPU kernels, same bounds), and
//      gelu (erf form; the CPU computes it in double, the shader in float with the same decomposition)
#include "support/vulkan_support.hpp"

#include <functional>
#include <iostream>

namespace rayo::test {
namespace {

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
            double const e = ulp_error(got[i], c.reference(av[i], bv[i]));
            if (e > worst) worst = e, at = i;
        }
        EXPECT_LE(worst, c.max_ulp) << "at a = " << av[at] << ", b = " << bv[at] << ": got " << got[at];
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

INSTANTIATE_TEST_SUITE_P(Vulkan, VulkanOps, ::testing::Range<std::size_t>(0, cases().size()),
                         [](auto const& info) { return cases()[info.param].name; });

using VulkanOpsSpecial = VulkanTest;

TEST_F(VulkanOpsSpecial, SpecialValuesMatchTheCpu) {
    float const inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    // Subnormal results are left out: Vulkan devices may flush them to zero.
    std::vector<float> const v{0.0f, -0.0f, inf, -inf, nan, 1e-30f, -1e-30f, 88.0f, -80.0f, 100.0f, -100.0f, 1.0f};
    auto x = Tensor<float>::from(v, {v.size()}, device);
    auto xc = x.to(Device::cpu());
    auto same = [](std::vector<float> const& got, std::vector<float> const& want, std::string const& op, double ulps) {
        for (std::size_t i = 0; i < got.size(); ++i) {
            if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << op << " at " << i;
            else if (std::isinf(want[i]) || want[i] == 0) {
                EXPECT_EQ(got[i], want[i]) << op << " at " << i;
                EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << op << " sign at " << i;
            } else EXPECT_LE(ulp_error(got[i], want[i]), ulps) << op << " at " << i << ": " << got[i] << " vs " << want[i];
        }
    };
    same(exp(x).to_vector(), exp(xc).to_vector(), "exp", 2);
    same(log(abs(x)).to_vector(), log(abs(xc)).to_vector(), "log", 2);
    same(tanh(x).to_vector(), tanh(xc).to_vector(), "tanh", 2);
    same(sigmoid(x).to_vector(), sigmoid(xc).to_vector(), "sigmoid", 2);
    same(relu(x).to_vector(), relu(xc).to_vector(), "relu", 0);
    same(elu(x, 1.0f).to_vector(), elu(xc, 1.0f).to_vector(), "elu", 2);
    same(silu(x).to_vector(), silu(xc).to_vector(), "silu", 2);
    same(gelu(x, Gelu::tanh).to_vector(), gelu(xc, Gelu::tanh).to_vector(), "gelu_tanh", 2);
    same(gelu(x).to_vector(), gelu(xc).to_vector(), "gelu", 4);
    same(sqrt(abs(x)).to_vector(), sqrt(abs(xc)).to_vector(), "sqrt", 0);
    same(div(x, 3.0f).to_vector(), div(xc, 3.0f).to_vector(), "div", 0.5);
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
    double worst = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
        double const want = 0.5 * double(v[i]) * std::erfc(-double(v[i]) / std::sqrt(2.0));
        // Subnormal results: Vulkan devices may flush them, so only their absolute size is checked.
        if (std::abs(want) < std::numeric_limits<float>::min()) {
            EXPECT_LE(std::abs(got[i]), std::numeric_limits<float>::min()) << v[i];
            continue;
        }
        if (double const e = ulp_error(got[i], want); e > worst) worst = e, at = i;
    }
    EXPECT_LE(worst, 4.0) << "at x = " << v[at] << ": got " << got[at];
    std::cout << "gelu (erf form): worst error " << worst << " ulp at x = " << v[at] << "\n";
}

}  // namespace
}  // namespace rayo::test
