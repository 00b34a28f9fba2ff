// The element-wise kernel generators: every variant the CUDA backend can launch emitted and
// assembled by ptxas for sm_80 and sm_90, a few checks of the text, and the kernels executed on the
// host by the PTX simulator (tests/support/ptx_simulator.hpp) through the backend's own op glue
// (src/cuda/ops/elementwise_ops.cpp, compiled into this binary), against float64 references on
// fresh random data with poisoned outputs, unaligned views and sweeps over the whole float range.
//
// Tolerances, in ulps of the float nearest the exact result (the simulator computes what the .rn
// instructions compute, and rcp.approx as the correctly rounded reciprocal):
//   exact: relu, clip, abs, neg (0); leaky_relu, add, sub, mul, sqrt, div (0.5, one rounding)
//   the CPU's algorithms, bit for bit its FMA path, with its measured bounds plus a little:
//     exp 1.05, log 0.9, tanh 3.1, sigmoid 3.2, silu 2.45, elu 2.0, gelu_tanh 2.4
//   gelu_erf (f32 algorithm of its own): 3.1 (3.04 measured at x = -0.1392 on a host model of its
//   instructions over every float with |x| < 20, rcp.approx exact or one ulp off either way)
#include "support/ptx_simulator.hpp"
#include "support/ptxas.hpp"

#include <rayo/ptx/kernels/elementwise.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

// The backend's op glue, compiled here: rayo-ptx-tests links only the PTX builder and generators.
#include "cuda/ops/elementwise_ops.cpp"  // NOLINT(bugprone-suspicious-include)

namespace rayo::test {
namespace {

using namespace rayo::ptx;
using namespace rayo::ptx::kernels;
using ptxsim::HostView;
using ptxsim::SimulatedRunner;

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float nan = std::numeric_limits<float>::quiet_NaN();

// ---- ptxas

std::vector<UnaryKind> all_unary() {
    std::vector<UnaryKind> v;
    for (int op = 0; op <= static_cast<int>(UnaryKind::neg); ++op) v.push_back(static_cast<UnaryKind>(op));
    return v;
}

TEST(PtxElementwise, EveryUnaryVariantAssembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (UnaryKind op : all_unary())
        for (bool vectorized : {true, false})
            for (Target target : {Target::sm_80, Target::sm_90}) {
                SCOPED_TRACE(std::string(to_string(op)) + (vectorized ? " v4 " : " scalar ") +
                             std::string(to_string(target)));
                expect_assembles(unary({.op = op, .vectorized = vectorized, .unroll = 4}), target);
            }
    // The other loop shapes the generator offers.
    for (unsigned unroll : {1u, 2u})
        for (UnaryKind op : {UnaryKind::gelu_erf, UnaryKind::silu, UnaryKind::relu})
            expect_assembles(unary({.op = op, .vectorized = true, .unroll = unroll}), Target::sm_90);
}

TEST(PtxElementwise, EveryBinaryVariantAssembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (int op = 0; op < 4; ++op)
        for (bool scalar : {false, true})
            for (bool vectorized : {true, false})
                for (Target target : {Target::sm_80, Target::sm_90}) {
                    BinaryKernelConfig const c{
                        .op = static_cast<BinaryKind>(op), .scalar_operand = scalar, .vectorized = vectorized};
                    SCOPED_TRACE(binary(c).name() + " " + std::string(to_string(target)));
                    expect_assembles(binary(c), target);
                }
}

// ---- text

TEST(PtxElementwise, VectorBodyUses16ByteAccessesAndTheScalarVariantNone) {
    std::string const v4 = unary({.op = UnaryKind::gelu_erf}).emit(Target::sm_90);
    EXPECT_NE(v4.find("ld.global.v4.f32"), std::string::npos);
    EXPECT_NE(v4.find("st.global.v4.f32"), std::string::npos);
    EXPECT_NE(v4.find("ld.global.f32"), std::string::npos) << "scalar head and tail";
    std::string const scalar = unary({.op = UnaryKind::gelu_erf, .vectorized = false}).emit(Target::sm_90);
    EXPECT_EQ(scalar.find(".v4."), std::string::npos);
    std::string const add = binary({.op = BinaryKind::add}).emit(Target::sm_80);
    EXPECT_NE(add.find("ld.global.v4.f32"), std::string::npos);
    EXPECT_NE(add.find(".maxntid 256, 1, 1"), std::string::npos);
}

TEST(PtxElementwise, IeeeOpsAndExactConstants) {
    // div and sqrt are the correctly rounded forms; exp uses no ex2.approx (a polynomial, as the CPU).
    EXPECT_NE(binary({.op = BinaryKind::div}).emit(Target::sm_90).find("div.rn.f32"), std::string::npos);
    EXPECT_NE(unary({.op = UnaryKind::sqrt}).emit(Target::sm_90).find("sqrt.rn.f32"), std::string::npos);
    std::string const exp_text = unary({.op = UnaryKind::exp}).emit(Target::sm_90);
    EXPECT_EQ(exp_text.find("ex2.approx"), std::string::npos);
    EXPECT_NE(exp_text.find("0f3FB8AA3B"), std::string::npos) << "log2(e) as its exact f32 bits";
    EXPECT_NE(exp_text.find("max.NaN.f32"), std::string::npos);
    EXPECT_EQ(unary({.op = UnaryKind::relu}).name(), "rayo_unary_relu_v4_u4");
    EXPECT_EQ(binary({.op = BinaryKind::mul, .scalar_operand = true, .vectorized = false, .unroll = 2}).name(),
              "rayo_binary_mul_scalar_scalar_u2");
}

TEST(PtxElementwise, RejectsBadShapesAndMissingParameters) {
    EXPECT_THROW((void)unary({.unroll = 3}), BuildError);
    EXPECT_THROW((void)binary({.block_threads = 100}), BuildError);
    Kernel k("no_alpha");
    Reg x = k.param(Type::f32, "x");
    EXPECT_THROW((void)emit_unary(k, UnaryKind::leaky_relu, x), BuildError);
}

// ---- execution in the simulator, through the op glue

double ulp_error(float got, double want) {
    if (std::isnan(want)) return std::isnan(got) ? 0.0 : std::numeric_limits<double>::infinity();
    if (std::isnan(got)) return std::numeric_limits<double>::infinity();
    float const rounded = static_cast<float>(want);
    if (std::isinf(rounded))
        return got == rounded
                   ? 0.0
                   : (std::abs(got) == std::numeric_limits<float>::max() ? 1.0
                                                                         : std::numeric_limits<double>::infinity());
    if (std::isinf(got)) return std::numeric_limits<double>::infinity();
    // Zero results must carry the reference's sign.
    if (want == 0.0 && got == 0.0 && std::signbit(got) != std::signbit(want))
        return std::numeric_limits<double>::infinity();
    int exponent = 0;
    std::frexp(std::max(std::abs(static_cast<double>(rounded)), static_cast<double>(std::numeric_limits<float>::min())),
               &exponent);
    return std::abs(static_cast<double>(got) - want) / std::ldexp(1.0, exponent - 24);
}

std::uint32_t fresh_seed() {
    static std::random_device rd;
    return rd();
}

std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo, float hi) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

constexpr float poison = -1.2345678e30f;
constexpr float alpha = 0.7f;
constexpr float clip_lo = -1.5f, clip_hi = 2.5f;

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct UnaryCase {
    detail::UnaryOp op;
    detail::UnaryParams params;
    std::function<double(double)> reference;
    float lo, hi;  // random inputs
    double max_ulp;
};

std::vector<UnaryCase> unary_cases() {
    using detail::UnaryOp;
    auto gelu_tanh_ref = [](double x) {
        if (x == -INFINITY) return -0.0;
        return x / (1.0 + std::exp(-2.0 * std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    };
    auto gelu_erf_ref = [](double x) { return x == -INFINITY ? -0.0 : 0.5 * x * std::erfc(-x / std::sqrt(2.0)); };
    auto silu_ref = [](double x) { return x == -INFINITY ? -0.0 : x / (1.0 + std::exp(-x)); };
    return {
        {UnaryOp::relu, {}, [](double x) { return x < 0 ? 0.0 : x; }, -4, 4, 0},
        {UnaryOp::leaky_relu, {alpha}, [](double x) { return x < 0 ? x * double(alpha) : x; }, -4, 4, 0.5},
        {UnaryOp::elu, {alpha}, [](double x) { return x > 0 ? x : double(alpha) * std::expm1(x); }, -8, 4, 2.0},
        {UnaryOp::sigmoid, {}, sigmoid_ref, -20, 20, 3.2},
        {UnaryOp::tanh, {}, [](double x) { return std::tanh(x); }, -10, 10, 3.1},
        {UnaryOp::silu, {}, silu_ref, -20, 20, 2.45},
        {UnaryOp::gelu_tanh, {}, gelu_tanh_ref, -9, 9, 2.4},
        {UnaryOp::gelu_erf, {}, gelu_erf_ref, -9, 9, 3.1},
        {UnaryOp::clip,
         {clip_lo, clip_hi},
         [](double x) { return x < clip_lo ? double(clip_lo) : (x > clip_hi ? double(clip_hi) : x); },
         -4,
         4,
         0},
        {UnaryOp::exp, {}, [](double x) { return std::exp(x); }, -80, 80, 1.05},
        {UnaryOp::log, {}, [](double x) { return std::log(x); }, 1e-3f, 1e3f, 0.9},
        {UnaryOp::sqrt, {}, [](double x) { return std::sqrt(x); }, 0, 100, 0.5},
        {UnaryOp::abs, {}, [](double x) { return std::abs(x); }, -4, 4, 0},
        {UnaryOp::neg, {}, [](double x) { return -x; }, -4, 4, 0},
    };
}

// Runs `op` over `in` through the glue with in and out views at the given element offsets (from a
// 256-byte boundary); returns out. Checks that every output was written.
std::vector<float> run_unary(SimulatedRunner& runner, UnaryCase const& c, std::vector<float> const& in,
                             std::size_t in_offset, std::size_t out_offset) {
    HostView<float> x(runner, in.size(), in_offset, DType::f32), y(runner, in.size(), out_offset, DType::f32);
    x.fill(in);
    y.fill(std::vector<float>(in.size(), poison));
    cuda::ops::unary(runner, c.op, c.params, x.view(), y.view());
    return y.values();
}

// The largest error over `in`, with where it happened.
struct Worst {
    double ulp = 0;
    float input = 0, got = 0;
};
Worst worst_error(UnaryCase const& c, std::vector<float> const& in, std::vector<float> const& got) {
    Worst w;
    for (std::size_t i = 0; i < in.size(); ++i) {
        double const e = ulp_error(got[i], c.reference(in[i]));
        if (!(e <= w.ulp)) w = {e, in[i], got[i]};
    }
    return w;
}

class UnaryOps : public ::testing::TestWithParam<std::size_t> {};

TEST_P(UnaryOps, MatchFloat64ReferenceOnEveryShapeAndAlignment) {
    UnaryCase const c = unary_cases()[GetParam()];
    SimulatedRunner runner;
    // Sizes around the vector width and the launch's threads; offsets 0..3 put the head at 0..3
    // elements; different in/out offsets take the scalar variant.
    struct Layout {
        std::size_t in_offset, out_offset;
    };
    for (std::size_t n : {1u, 3u, 7u, 64u, 1000u, 4097u, 20011u})
        for (Layout l : {Layout{0, 0}, Layout{1, 1}, Layout{3, 3}, Layout{2, 2}, Layout{0, 1}, Layout{3, 0}}) {
            auto const seed = fresh_seed();
            SCOPED_TRACE(std::string(detail::to_string(c.op)) + " n " + std::to_string(n) + " offsets " +
                         std::to_string(l.in_offset) + "/" + std::to_string(l.out_offset) + " seed " +
                         std::to_string(seed));
            auto const in = random_floats(n, seed, c.lo, c.hi);
            auto const got = run_unary(runner, c, in, l.in_offset, l.out_offset);
            Worst const w = worst_error(c, in, got);
            EXPECT_LE(w.ulp, c.max_ulp) << "at x = " << w.input << ": got " << w.got;
        }
    // The glue took both variants.
    bool v4 = false, scalar = false;
    for (auto const& l : runner.launches()) {
        v4 |= l.key.find("/v4/") != std::string::npos;
        scalar |= l.key.find("/scalar/") != std::string::npos;
    }
    EXPECT_TRUE(v4 && scalar);
}

TEST_P(UnaryOps, InPlace) {
    UnaryCase const c = unary_cases()[GetParam()];
    SimulatedRunner runner;
    auto const in = random_floats(1001, fresh_seed(), c.lo, c.hi);
    HostView<float> x(runner, in.size(), 1, DType::f32);
    x.fill(in);
    cuda::ops::unary(runner, c.op, c.params, x.view(), x.view());
    Worst const w = worst_error(c, in, x.values());
    EXPECT_LE(w.ulp, c.max_ulp) << "at x = " << w.input << ": got " << w.got;
}

INSTANTIATE_TEST_SUITE_P(Simulated, UnaryOps, ::testing::Range<std::size_t>(0, unary_cases().size()),
                         [](auto const& info) { return std::string(detail::to_string(unary_cases()[info.param].op)); });

// Special values: NaN in gives NaN; infinities, zeros (with their signs) and subnormal results as
// the CPU documents them.
TEST(PtxElementwiseSimulated, SpecialValuesMatchTheReferences) {
    std::vector<float> const in{0.0f,
                                -0.0f,
                                inf,
                                -inf,
                                nan,
                                -nan,
                                1e-40f,
                                -1e-40f,
                                1e-45f,
                                -1e-45f,
                                1e-30f,
                                -1e-30f,
                                87.5f,
                                88.8f,
                                -87.5f,
                                -103.0f,
                                -104.5f,
                                100.0f,
                                -100.0f,
                                1e30f,
                                -1e30f,
                                std::numeric_limits<float>::max(),
                                -std::numeric_limits<float>::max(),
                                9.125f,
                                -9.2f,
                                -9.99f,
                                -12.5f,
                                -13.5f,
                                -14.3f,
                                -14.4f,
                                -15.0f,
                                6.0f,
                                15.0f,
                                1.0f,
                                -1.0f};
    SimulatedRunner runner;
    for (UnaryCase const& c : unary_cases()) {
        SCOPED_TRACE(std::string(detail::to_string(c.op)));
        auto const got = run_unary(runner, c, in, 0, 0);
        for (std::size_t i = 0; i < in.size(); ++i) {
            double const want = c.reference(in[i]);
            // sqrt/log of negatives and every op on NaN: NaN.
            if (std::isnan(want)) {
                EXPECT_TRUE(std::isnan(got[i])) << "x = " << in[i] << ": got " << got[i];
                continue;
            }
            EXPECT_LE(ulp_error(got[i], want), std::max(c.max_ulp, 0.5))
                << "x = " << in[i] << ": got " << got[i] << ", want " << want;
        }
    }
}

// Every float in steps over the whole bit range (and densely where the functions change form):
// the bounds hold for large |x|, subnormal results and the tails.
TEST(PtxElementwiseSimulated, TranscendentalBoundsHoldOverTheWholeRange) {
    std::vector<float> sweep;
    for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 16381)
        sweep.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
    for (float x = -16.0f; x < 16.0f; x += 1.0f / 1024) sweep.push_back(x);
    SimulatedRunner runner;
    for (UnaryCase const& c : unary_cases()) {
        if (c.max_ulp <= 0.5) continue;  // the IEEE ops are checked above
        SCOPED_TRACE(std::string(detail::to_string(c.op)));
        auto const got = run_unary(runner, c, sweep, 0, 0);
        Worst const w = worst_error(c, sweep, got);
        EXPECT_LE(w.ulp, c.max_ulp) << "at x = " << w.input << " (" << std::hexfloat << w.input << std::defaultfloat
                                    << "): got " << w.got;
        RecordProperty(std::string(detail::to_string(c.op)) + "_max_ulp", std::to_string(w.ulp));
    }
}

TEST(PtxElementwiseSimulated, EluWithAlphaOneAndClipWithCrossedBounds) {
    SimulatedRunner runner;
    auto const in = random_floats(3001, fresh_seed(), -20.0f, 5.0f);
    UnaryCase const elu{detail::UnaryOp::elu, {1.0f}, [](double x) { return x > 0 ? x : std::expm1(x); }, 0, 0, 1.0};
    Worst const w = worst_error(elu, in, run_unary(runner, elu, in, 2, 2));
    EXPECT_LE(w.ulp, 1.0) << "at x = " << w.input;
    // lo > hi gives hi everywhere (min(max(x, lo), hi), as torch.clamp).
    UnaryCase const clip{detail::UnaryOp::clip, {1.0f, -1.0f}, [](double) { return -1.0; }, 0, 0, 0};
    for (float v : run_unary(runner, clip, in, 0, 0)) EXPECT_EQ(v, -1.0f);
}

struct BinaryCase {
    detail::BinaryOp op;
    std::function<double(double, double)> reference;
    float lo, hi;
};

class BinaryOps : public ::testing::TestWithParam<int> {};

TEST_P(BinaryOps, TensorAndScalarOperandsOnEveryAlignment) {
    using detail::BinaryOp;
    std::vector<BinaryCase> const cases{{BinaryOp::add, [](double x, double y) { return x + y; }, -4, 4},
                                        {BinaryOp::sub, [](double x, double y) { return x - y; }, -4, 4},
                                        {BinaryOp::mul, [](double x, double y) { return x * y; }, -4, 4},
                                        {BinaryOp::div, [](double x, double y) { return x / y; }, 0.5f, 4}};
    BinaryCase const& c = cases[static_cast<std::size_t>(GetParam())];
    SimulatedRunner runner;
    struct Layout {
        std::size_t a, b, out;
    };
    for (std::size_t n : {1u, 5u, 64u, 1003u, 9000u})
        for (Layout l : {Layout{0, 0, 0}, Layout{1, 1, 1}, Layout{3, 3, 3}, Layout{0, 1, 0}, Layout{2, 2, 3}}) {
            auto const seed = fresh_seed();
            SCOPED_TRACE(std::string(detail::to_string(c.op)) + " n " + std::to_string(n) + " offsets " +
                         std::to_string(l.a) + "/" + std::to_string(l.b) + "/" + std::to_string(l.out) + " seed " +
                         std::to_string(seed));
            auto const av = random_floats(n, seed, c.lo, c.hi), bv = random_floats(n, seed + 1, c.lo, c.hi);
            HostView<float> a(runner, n, l.a, DType::f32), b(runner, n, l.b, DType::f32),
                out(runner, n, l.out, DType::f32);
            a.fill(av);
            b.fill(bv);
            out.fill(std::vector<float>(n, poison));
            cuda::ops::binary(runner, c.op, a.view(), b.view(), out.view());
            auto const got = out.values();
            for (std::size_t i = 0; i < n; ++i)
                ASSERT_LE(ulp_error(got[i], c.reference(av[i], bv[i])), 0.5) << i << ": " << av[i] << ", " << bv[i];
            float const s = 0.7f;
            out.fill(std::vector<float>(n, poison));
            cuda::ops::binary_scalar(runner, c.op, a.view(), s, out.view());
            auto const got_scalar = out.values();
            for (std::size_t i = 0; i < n; ++i)
                ASSERT_LE(ulp_error(got_scalar[i], c.reference(av[i], s)), 0.5) << i << ": " << av[i];
        }
}

INSTANTIATE_TEST_SUITE_P(Simulated, BinaryOps, ::testing::Range(0, 4), [](auto const& info) {
    return std::string(detail::to_string(static_cast<detail::BinaryOp>(info.param)));
});

TEST(PtxElementwiseSimulated, GlueKeysNameTheVariantAndTheTargetAndEmptyTensorsLaunchNothing) {
    SimulatedRunner runner(3, Target::sm_80);
    HostView<float> x(runner, 10, 0, DType::f32), y(runner, 10, 1, DType::f32);
    x.fill(std::vector<float>(10, 1.0f));
    cuda::ops::unary(runner, detail::UnaryOp::gelu_erf, {}, x.view(), x.view());
    cuda::ops::unary(runner, detail::UnaryOp::gelu_erf, {}, x.view(), y.view());
    ASSERT_EQ(runner.launches().size(), 2u);
    EXPECT_EQ(runner.launches()[0].key, "unary/gelu_erf/f32/v4/u4/b256/sm_80");
    EXPECT_EQ(runner.launches()[1].key, "unary/gelu_erf/f32/scalar/u4/b256/sm_80");
    detail::TensorView empty = x.view();
    empty.numel = 0;
    cuda::ops::unary(runner, detail::UnaryOp::exp, {}, empty, empty);
    EXPECT_EQ(runner.launches().size(), 2u);
    // The grid covers the tensor, 1024 vectors (or elements) a block, up to the grid's limit; the
    // grid-stride loop takes the rest.
    EXPECT_EQ(cuda::ops::launch_shape(std::size_t{1} << 28, true).grid[0], 65536u);
    EXPECT_EQ(cuda::ops::launch_shape(std::size_t{1} << 28, false).grid[0], 262144u);
    EXPECT_EQ(cuda::ops::launch_shape((std::size_t{1} << 28) + 1, true).grid[0], 65537u);
    EXPECT_EQ(cuda::ops::launch_shape(5, true).grid[0], 1u);
    EXPECT_EQ(cuda::ops::launch_shape(std::size_t{1} << 44, false).grid[0], 0x7fffffffu);
    detail::TensorView ints = x.view();
    ints.dtype = DType::i32;
    EXPECT_THROW(cuda::ops::unary(runner, detail::UnaryOp::relu, {}, ints, ints), Unsupported);
}

}  // namespace
}  // namespace rayo::test
