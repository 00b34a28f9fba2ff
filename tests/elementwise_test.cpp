// Element-wise and binary ops: every op x every CPU instruction set x the standard shapes against a
// float64 reference; special values; ulp sweeps for the transcendental functions.
#include "support/test_support.hpp"

#include <functional>

namespace rayo::test {
namespace {

struct UnaryCase {
    std::string name;
    std::function<Tensor<float>(Tensor<float> const&)> op;
    std::function<void(Tensor<float> const&, Tensor<float> const&)> op_out;
    std::function<double(double)> reference;
    float lo, hi;       // input range for random data
    double max_ulp;     // tolerance in ulps of the result
};

// At x = −∞ the references give the limit, −0, where x·(something → 0) would be NaN.
double gelu_erf_ref(double x) { return std::isinf(x) && x < 0 ? -0.0 : 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
// ½x(1 + tanh u) written as x / (1 + e^(−2u)): the same value without the cancellation of 1 + tanh u
// for negative x, which would make the reference itself wrong.
double gelu_tanh_ref(double x) {
    double const u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    return std::isinf(x) && x < 0 ? -0.0 : x / (1.0 + std::exp(-2.0 * u));
}
double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double silu_ref(double x) { return std::isinf(x) && x < 0 ? -0.0 : x * sigmoid_ref(x); }

std::vector<UnaryCase> unary_cases() {
    return {
        {"relu", [](auto& x) { return relu(x); }, [](auto& x, auto& o) { relu(x, o); }, [](double x) { return x < 0 ? 0.0 : x; }, -4, 4, 0},
        {"leaky_relu", [](auto& x) { return leaky_relu(x, 0.1f); }, [](auto& x, auto& o) { leaky_relu(x, 0.1f, o); },
         [](double x) { return x < 0 ? x * double(0.1f) : x; }, -4, 4, 0.5},
        {"elu", [](auto& x) { return elu(x, 0.7f); }, [](auto& x, auto& o) { elu(x, 0.7f, o); },
         [](double x) { return x > 0 ? x : double(0.7f) * std::expm1(x); }, -8, 4, 4},
        {"sigmoid", [](auto& x) { return sigmoid(x); }, [](auto& x, auto& o) { sigmoid(x, o); }, sigmoid_ref, -20, 20, 4},
        {"tanh", [](auto& x) { return tanh(x); }, [](auto& x, auto& o) { tanh(x, o); }, [](double x) { return std::tanh(x); }, -10, 10, 4},
        {"silu", [](auto& x) { return silu(x); }, [](auto& x, auto& o) { silu(x, o); }, silu_ref, -20, 20, 4},
        {"swish", [](auto& x) { return swish(x); }, [](auto& x, auto& o) { swish(x, o); }, silu_ref, -20, 20, 4},
        {"gelu_erf", [](auto& x) { return gelu(x); }, [](auto& x, auto& o) { gelu(x, Gelu::exact, o); }, gelu_erf_ref, -9, 9, 4},
        {"gelu_tanh", [](auto& x) { return gelu(x, Gelu::tanh); }, [](auto& x, auto& o) { gelu(x, Gelu::tanh, o); }, gelu_tanh_ref, -9, 9, 4},
        {"clip", [](auto& x) { return clip(x, -1.5f, 2.5f); }, [](auto& x, auto& o) { clip(x, -1.5f, 2.5f, o); },
         [](double x) { return std::min(std::max(x, -1.5), 2.5); }, -4, 4, 0},
        {"exp", [](auto& x) { return exp(x); }, [](auto& x, auto& o) { exp(x, o); }, [](double x) { return std::exp(x); }, -80, 80, 4},
        {"log", [](auto& x) { return log(x); }, [](auto& x, auto& o) { log(x, o); }, [](double x) { return std::log(x); }, 1e-3f, 1e3f, 4},
        {"sqrt", [](auto& x) { return sqrt(x); }, [](auto& x, auto& o) { sqrt(x, o); }, [](double x) { return std::sqrt(x); }, 0, 100, 0.5},
        {"abs", [](auto& x) { return abs(x); }, [](auto& x, auto& o) { abs(x, o); }, [](double x) { return std::abs(x); }, -4, 4, 0},
        {"neg", [](auto& x) { return neg(x); }, [](auto& x, auto& o) { neg(x, o); }, [](double x) { return -x; }, -4, 4, 0},
    };
}

double max_ulp_error(std::vector<float> const& in, std::vector<float> const& got, std::function<double(double)> const& ref,
                     std::size_t* worst = nullptr) {
    double worst_err = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
        double const e = ulp_error(got[i], ref(static_cast<double>(in[i])));
        if (e > worst_err) {
            worst_err = e;
            if (worst) *worst = i;
        }
    }
    return worst_err;
}

class UnaryOps : public ::testing::TestWithParam<std::tuple<CpuArch, std::size_t>> {};

TEST_P(UnaryOps, MatchFloat64ReferenceOnEveryShape) {
    auto const [arch, case_index] = GetParam();
    ArchScope scope(arch);
    UnaryCase const c = unary_cases()[case_index];
    for (Shape const& shape : op_shapes()) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(c.name + " shape " + shape.to_string() + " seed " + std::to_string(seed));
        auto const in = random_floats(shape.numel(), seed, c.lo, c.hi);
        auto x = Tensor<float>::from(in, shape);
        auto y = c.op(x);
        ASSERT_EQ(y.shape(), shape);
        std::size_t worst = 0;
        EXPECT_LE(max_ulp_error(in, y.to_vector(), c.reference, &worst), c.max_ulp) << "at x = " << in[worst];
        // out-parameter form into a poisoned tensor, and in place
        auto out = poisoned(shape);
        c.op_out(x, out);
        EXPECT_LE(max_ulp_error(in, out.to_vector(), c.reference), c.max_ulp);
        c.op_out(x, x);
        EXPECT_LE(max_ulp_error(in, x.to_vector(), c.reference), c.max_ulp);
    }
}

INSTANTIATE_TEST_SUITE_P(Cpu, UnaryOps,
                         ::testing::Combine(::testing::ValuesIn(archs()), ::testing::Range<std::size_t>(0, unary_cases().size())),
                         [](auto const& info) {
                             return arch_id(std::get<0>(info.param)) + "_" + unary_cases()[std::get<1>(info.param)].name;
                         });

// Special values: ±0, ±Inf, NaN, subnormals, and values at the edges of the float range.
class SpecialValues : public ::testing::TestWithParam<CpuArch> {};

std::vector<float> special_inputs() {
    float const inf = std::numeric_limits<float>::infinity();
    float const nan = std::numeric_limits<float>::quiet_NaN();
    float const den = std::numeric_limits<float>::denorm_min();
    float const fmin = std::numeric_limits<float>::min();
    float const fmax = std::numeric_limits<float>::max();
    return {0.0f, -0.0f, inf, -inf, nan, -nan, den, -den, 3 * den, fmin, -fmin, fmax, -fmax, 1e-30f, -1e-30f,
            88.72f, 88.73f, -87.0f, -103.0f, -104.0f, 1e4f, -1e4f, 20.0f, -20.0f, 9.0f, -9.0f, 0.5f, -0.5f};
}

TEST_P(SpecialValues, MatchReference) {
    ArchScope scope(GetParam());
    auto const in = special_inputs();
    auto x = Tensor<float>::from(in, {in.size()});
    for (auto const& c : unary_cases()) {
        SCOPED_TRACE(c.name);
        auto const got = c.op(x).to_vector();
        for (std::size_t i = 0; i < in.size(); ++i) {
            double const want = c.reference(static_cast<double>(in[i]));
            if (c.name == "log" && in[i] == 0.0f) {  // log(±0) = -inf
                EXPECT_EQ(got[i], -std::numeric_limits<float>::infinity());
                continue;
            }
            EXPECT_LE(ulp_error(got[i], want), std::max(c.max_ulp, 0.5)) << "x = " << in[i] << " got " << got[i] << " want " << want;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Cpu, SpecialValues, ::testing::ValuesIn(archs()),
                         ArchParamName{});

// Dense ulp sweeps over the float range each function claims (docs/ops.md): every 251st bit pattern.
struct Sweep {
    std::string name;
    std::function<Tensor<float>(Tensor<float> const&)> op;
    std::function<double(double)> reference;
    float lo, hi;
};

class UlpSweep : public ::testing::TestWithParam<CpuArch> {};

TEST_P(UlpSweep, TranscendentalsWithin4UlpOverClaimedRange) {
    ArchScope scope(GetParam());
    std::vector<Sweep> const sweeps = {
        {"exp", [](auto& x) { return exp(x); }, [](double x) { return std::exp(x); }, -std::numeric_limits<float>::max(), std::numeric_limits<float>::max()},
        {"log", [](auto& x) { return log(x); }, [](double x) { return std::log(x); }, 0.0f, std::numeric_limits<float>::max()},
        {"tanh", [](auto& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, -std::numeric_limits<float>::max(), std::numeric_limits<float>::max()},
        {"sigmoid", [](auto& x) { return sigmoid(x); }, sigmoid_ref, -std::numeric_limits<float>::max(), std::numeric_limits<float>::max()},
        {"silu", [](auto& x) { return silu(x); }, silu_ref, -80.0f, std::numeric_limits<float>::max()},
        {"elu", [](auto& x) { return elu(x, 1.0f); }, [](double x) { return x > 0 ? x : std::expm1(x); }, -std::numeric_limits<float>::max(), std::numeric_limits<float>::max()},
        {"gelu_erf", [](auto& x) { return gelu(x); }, gelu_erf_ref, -10.0f, std::numeric_limits<float>::max()},
        {"gelu_tanh", [](auto& x) { return gelu(x, Gelu::tanh); }, gelu_tanh_ref, -10.0f, std::numeric_limits<float>::max()},
    };
    // All bit patterns with a stride, both signs: covers subnormals, normals and the extremes.
    std::vector<float> all;
    for (std::uint64_t bits = 0; bits < 0x7f800000u; bits += 251) {
        all.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
        all.push_back(-std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
    }
    for (auto const& s : sweeps) {
        std::vector<float> in;
        for (float v : all)
            if (v >= s.lo && v <= s.hi) in.push_back(v);
        auto const got = s.op(Tensor<float>::from(in, {in.size()})).to_vector();
        std::size_t worst = 0;
        double const err = max_ulp_error(in, got, s.reference, &worst);
        EXPECT_LE(err, 4.0) << s.name << ": worst at x = " << in[worst] << " (got " << got[worst] << ")";
    }
}

INSTANTIATE_TEST_SUITE_P(Cpu, UlpSweep, ::testing::ValuesIn(archs()),
                         ArchParamName{});

// Binary ops, tensor-tensor and tensor-scalar, plus scale and dot.
class BinaryOps : public ::testing::TestWithParam<CpuArch> {};

TEST_P(BinaryOps, MatchFloat64Reference) {
    ArchScope scope(GetParam());
    struct Case {
        std::string name;
        Tensor<float> (*tt)(Tensor<float> const&, Tensor<float> const&);
        Tensor<float> (*ts)(Tensor<float> const&, float);
        double (*ref)(double, double);
    };
    Case const cases[] = {
        {"add", &add, &add, [](double a, double b) { return a + b; }},
        {"sub", &sub, &sub, [](double a, double b) { return a - b; }},
        {"mul", &mul, &mul, [](double a, double b) { return a * b; }},
        {"div", &div, &div, [](double a, double b) { return a / b; }},
    };
    for (Shape const& shape : op_shapes()) {
        auto const seed = fresh_seed();
        SCOPED_TRACE("shape " + shape.to_string() + " seed " + std::to_string(seed));
        auto const av = random_floats(shape.numel(), seed);
        auto bv = random_floats(shape.numel(), seed + 1);
        for (auto& v : bv) v = v >= 0 ? v + 0.5f : v - 0.5f;  // keep divisors away from 0
        auto a = Tensor<float>::from(av, shape);
        auto b = Tensor<float>::from(bv, shape);
        float const s = 1.75f;
        for (auto const& c : cases) {
            SCOPED_TRACE(c.name);
            auto const tt = c.tt(a, b).to_vector();
            auto const ts = c.ts(a, s).to_vector();
            for (std::size_t i = 0; i < av.size(); ++i) {
                ASSERT_LE(ulp_error(tt[i], static_cast<float>(c.ref(av[i], bv[i]))), 0.0) << i;  // correctly rounded
                ASSERT_LE(ulp_error(ts[i], static_cast<float>(c.ref(av[i], s))), 0.0) << i;
            }
        }
        auto out = poisoned(shape);
        mul(a, b, out);
        auto const sc = scale(a, -3.0f).to_vector();
        auto const mo = out.to_vector();
        double want_dot = 0, abs_dot = 0;
        for (std::size_t i = 0; i < av.size(); ++i) {
            EXPECT_EQ(mo[i], av[i] * bv[i]);
            EXPECT_EQ(sc[i], av[i] * -3.0f);
            want_dot += static_cast<double>(av[i]) * bv[i];
            abs_dot += std::abs(static_cast<double>(av[i]) * bv[i]);
        }
        // Blocked float accumulation: error within a few ε of Σ|a·b|.
        EXPECT_NEAR(dot(a, b).item(), want_dot, 1e-5 * abs_dot + 1e-30);
        EXPECT_EQ(dot(a, b).rank(), 0u);
        // in place: a += b
        auto a2 = a.clone();
        add(a2, b, a2);
        auto const ip = a2.to_vector();
        for (std::size_t i = 0; i < av.size(); ++i) ASSERT_EQ(ip[i], av[i] + bv[i]);
    }
}

INSTANTIATE_TEST_SUITE_P(Cpu, BinaryOps, ::testing::ValuesIn(archs()),
                         ArchParamName{});

}  // namespace
}  // namespace rayo::test
