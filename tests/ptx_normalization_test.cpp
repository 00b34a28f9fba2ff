// The layer_norm / rms_norm generator: the shape of the code each layout emits, every kernel rayo
// may load (both norms for each config choose_row_config returns) assembled by ptxas for sm_80 and
// sm_90, and the kernels executed on the host by the PTX simulator (tests/support/ptx_simulator.hpp)
// through the backend's own op glue (src/cuda/ops/normalization_ops.cpp, compiled into this
// binary): every layout, aligned and misaligned views, with and without gamma/beta, against
// float64 references on fresh random data with poisoned outputs.
//
// Tolerances, |got - want| <= rel·|want| + abs (the simulator computes what the .rn instructions
// compute, so these are the GPU's results): layer_norm rel 1e-6, abs 1e-6; rms_norm rel 1e-6,
// abs 1e-7 (as in cuda_normalization_test.cpp).
#include "support/ptx_simulator.hpp"
#include "support/ptxas.hpp"

#include <rayo/ptx/kernels/normalization.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

// The backend's op glue, compiled here: rayo-ptx-tests links only the PTX builder and generators.
#include "cuda/ops/normalization_ops.cpp"  // NOLINT(bugprone-suspicious-include)
#include "support/row_references.hpp"

namespace rayo::test {
namespace {

using namespace rayo::ptx;
using namespace rayo::ptx::kernels;
using ptxsim::HostView;
using ptxsim::SimulatedRunner;

bool contains(std::string const& text, std::string const& piece) { return text.find(piece) != std::string::npos; }

TEST(PtxNormalization, RejectsConfigsItCannotBuild) {
    auto const bad = [](RowConfig row) { return NormConfig{.norm = Norm::rms_norm, .row = row}; };
    EXPECT_THROW((void)normalization(bad({RowLayout::group, 4, 32, 2048, 1})), BuildError);
    EXPECT_THROW((void)normalization(bad({RowLayout::block, 1, 1, 1024, 64})), BuildError);
    EXPECT_THROW((void)normalization(bad({RowLayout::block_loop, 4, 1, 512, 3})), BuildError);
}

TEST(PtxNormalization, EmitsTheLayoutsInstructions) {
    std::string const layer = normalization({.norm = Norm::layer_norm, .row = choose_row_config(4096, 4)})
                                  .emit(Target::sm_90);
    EXPECT_TRUE(contains(layer, ".param .u64 in,\n\t.param .u64 gamma,\n\t.param .u64 beta,\n\t.param .u64 out,\n"
                                "\t.param .u32 rows,\n\t.param .u32 cols,\n\t.param .f32 eps\n"));
    EXPECT_TRUE(contains(layer, "ld.global.nc.v4.f32")) << "gamma and beta through the read-only path";
    EXPECT_TRUE(contains(layer, "ld.global.v4.f32"));
    EXPECT_TRUE(contains(layer, "st.global.v4.f32"));
    EXPECT_TRUE(contains(layer, "sqrt.rn.f32"));
    EXPECT_TRUE(contains(layer, "rcp.rn.f32"));
    EXPECT_TRUE(contains(layer, "row_centred")) << "the second, centred statistics pass";
    EXPECT_FALSE(contains(layer, "atom")) << "deterministic: no atomics";

    std::string const rms = normalization({.norm = Norm::rms_norm, .row = choose_row_config(8, 4)}).emit(Target::sm_90);
    EXPECT_FALSE(contains(rms, "bar.sync"));
    EXPECT_FALSE(contains(rms, "shfl")) << "one lane per 8-float row";
    EXPECT_FALSE(contains(rms, "row_centred"));

    std::string const loop = normalization({.norm = Norm::layer_norm, .row = choose_row_config(100001, 4)})
                                 .emit(Target::sm_80);
    EXPECT_FALSE(contains(loop, ".v4.")) << "an odd row length: one float at a time";
    EXPECT_TRUE(contains(loop, "bra $L_"));
}

TEST(PtxNormalization, NamesSpellEveryParameter) {
    std::vector<std::string> names;
    for (RowConfig const& c : chosen_row_configs())
        for (Norm n : {Norm::layer_norm, Norm::rms_norm}) names.push_back(normalization_name({.norm = n, .row = c}));
    std::sort(names.begin(), names.end());
    EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "two configs share a name";
    EXPECT_EQ(normalization_name({.norm = Norm::rms_norm, .row = {RowLayout::group, 1, 4, 128, 2}}),
              "rms_norm_group_v1_g4_t128_i2");
}

struct NormCase {
    NormConfig config;
    Target target;
};

std::vector<NormCase> every_norm_kernel() {
    std::vector<RowConfig> rows = chosen_row_configs();
    // Two-float accesses: the generator takes them though rayo does not pick them.
    rows.push_back({RowLayout::group, 2, 8, 128, 2});
    rows.push_back({RowLayout::block, 2, 1, 256, 8});
    rows.push_back({RowLayout::block_loop, 2, 1, 256, 2});
    std::vector<NormCase> cases;
    for (RowConfig const& row : rows)
        for (Norm n : {Norm::layer_norm, Norm::rms_norm})
            for (Target t : {Target::sm_80, Target::sm_90}) cases.push_back({{.norm = n, .row = row}, t});
    return cases;
}

class PtxNormalizationKernels : public ::testing::TestWithParam<NormCase> {};

TEST_P(PtxNormalizationKernels, Assemble) {
    RAYO_SKIP_WITHOUT_PTXAS();
    expect_assembles(normalization(GetParam().config), GetParam().target);
}

INSTANTIATE_TEST_SUITE_P(Every, PtxNormalizationKernels, ::testing::ValuesIn(every_norm_kernel()),
                         [](::testing::TestParamInfo<NormCase> const& info) {
                             return normalization_name(info.param.config) + "_" +
                                    std::string(to_string(info.param.target));
                         });

// ---- execution in the simulator, through the glue

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
constexpr float eps = 1e-5f;

// The largest |got - want| / (rel·|want| + abs), and where.
struct Worst {
    double ratio = 0;
    std::size_t at = 0;
};
Worst worst_error(std::vector<float> const& got, std::vector<double> const& want, double rel, double abs) {
    Worst w;
    for (std::size_t i = 0; i < got.size(); ++i) {
        double const r = std::abs(double(got[i]) - want[i]) / (rel * std::abs(want[i]) + abs);
        if (!(r <= w.ratio)) w = {r, i};
    }
    return w;
}

struct Rows {
    std::size_t rows, cols;
};

// Every layout: one lane per row (300x8), lane groups (3x7, 5x31, 130x12), a warp per row
// (64x1000), a block holding the row (3x4096, 2x4097, 1x32768), the looping block (1x100000).
std::vector<Rows> simulated_shapes() {
    return {{1, 1}, {3, 7}, {5, 31}, {130, 12}, {300, 8}, {64, 1000}, {3, 4096}, {2, 4097}, {1, 32768}, {1, 100000}};
}

TEST(PtxNormalizationSimulated, MatchesFloat64ThroughTheGlue) {
    SimulatedRunner runner;
    for (Rows s : simulated_shapes())
        for (std::size_t offset : {0u, 1u}) {  // 1: views 4 bytes past a 16-byte boundary, the one-float kernels
            auto const seed = fresh_seed();
            SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols) + " offset " + std::to_string(offset) +
                         " seed " + std::to_string(seed));
            std::size_t const n = s.rows * s.cols;
            // Odd seeds put the rows' means at 1000, far above their spread.
            float const shift = seed % 2 ? 1000.0f : 0.0f;
            auto const in = random_floats(n, seed, shift - 4.0f, shift + 4.0f);
            auto const g = random_floats(s.cols, seed + 1, 0.5f, 1.5f);
            auto const b = random_floats(s.cols, seed + 2, -1.0f, 1.0f);
            HostView<float> x(runner, n, offset, DType::f32), y(runner, n, offset, DType::f32);
            HostView<float> gamma(runner, s.cols, 0, DType::f32), beta(runner, s.cols, 0, DType::f32);
            x.fill(in);
            gamma.fill(g);
            beta.fill(b);
            detail::TensorView const none{0, 0, 0, DType::f32};
            for (int variant = 0; variant < 4; ++variant) {
                bool const layer = variant < 2, affine = variant % 2 == 1;
                SCOPED_TRACE(std::string(layer ? "layer_norm" : "rms_norm") + (affine ? " with gamma/beta" : ""));
                y.fill(std::vector<float>(n, poison));
                cuda::ops::norm(runner, layer ? detail::NormOp::layer_norm : detail::NormOp::rms_norm, s.rows, s.cols,
                                eps, x.view(), affine ? gamma.view() : none, affine ? beta.view() : none, y.view());
                auto const want =
                    norm_ref(in, s.cols, layer, affine ? &g : nullptr, affine && layer ? &b : nullptr, eps);
                auto const got = y.values();
                Worst const w = worst_error(got, want, 1e-6, layer ? 1e-6 : 1e-7);
                EXPECT_LE(w.ratio, 1.0) << "at row " << w.at / s.cols << ", column " << w.at % s.cols << ": got "
                                        << got[w.at] << ", want " << want[w.at];
            }
        }
}

TEST(PtxNormalizationSimulated, InPlace) {
    SimulatedRunner runner;
    for (Rows s : {Rows{5, 31}, Rows{3, 4096}, Rows{1, 40000}}) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols) + " seed " + std::to_string(seed));
        auto const in = random_floats(s.rows * s.cols, seed, -4.0f, 4.0f);
        HostView<float> x(runner, in.size(), 0, DType::f32);
        x.fill(in);
        detail::TensorView const none{0, 0, 0, DType::f32};
        cuda::ops::norm(runner, detail::NormOp::layer_norm, s.rows, s.cols, eps, x.view(), none, none, x.view());
        auto const want = norm_ref(in, s.cols, true, nullptr, nullptr, eps);
        Worst const w = worst_error(x.values(), want, 1e-6, 1e-6);
        EXPECT_LE(w.ratio, 1.0) << "at element " << w.at;
    }
}

TEST(PtxNormalizationSimulated, GlueKeysNameTheKernelAndTheTargetAndEmptyTensorsLaunchNothing) {
    SimulatedRunner runner(2, Target::sm_80);
    HostView<float> x(runner, 4 * 4096, 0, DType::f32), y(runner, 4 * 4096, 0, DType::f32);
    HostView<float> gamma(runner, 4096, 0, DType::f32);
    x.fill(random_floats(4 * 4096, fresh_seed(), -1.0f, 1.0f));
    detail::TensorView const none{0, 0, 0, DType::f32};
    cuda::ops::norm(runner, detail::NormOp::rms_norm, 4, 4096, eps, x.view(), gamma.view(), none, y.view());
    ASSERT_EQ(runner.launches().size(), 1u);
    EXPECT_EQ(runner.launches()[0].key, "norm/rms_norm_block_v4_g1_t256_i4/sm_80");
    EXPECT_EQ(runner.launches()[0].dims.grid[0], 4u);
    EXPECT_EQ(runner.launches()[0].dims.block[0], 256u);
    cuda::ops::norm(runner, detail::NormOp::layer_norm, 0, 4096, eps, x.view(), none, none, y.view());
    cuda::ops::norm(runner, detail::NormOp::layer_norm, 4, 0, eps, x.view(), none, none, y.view());
    EXPECT_EQ(runner.launches().size(), 1u);
    // Non-f32 data is not this kernel's: the dispatcher runs it on the CPU.
    detail::TensorView half = x.view();
    half.dtype = DType::f16;
    EXPECT_THROW(cuda::ops::norm(runner, detail::NormOp::rms_norm, 4, 4096, eps, half, none, none, y.view()),
                 Unsupported);
}

}  // namespace
}  // namespace rayo::test
