// The layer_norm / rms_norm generator: the shape of the code each layout emits, every kernel rayo
// may load (both norms for each config choose_row_config returns) assembled by ptxas for sm_80 and
// sm_90, and what the backend's op glue (src/cuda/ops/normalization.cpp, compiled into this
// binary) launches. What the kernels compute is checked by the harness (tests/ops/), which runs
// them on the PTX simulator and on every CUDA device.
#include "support/family_ops.hpp"
#include "support/ptx_simulator.hpp"
#include "support/ptxas.hpp"

#include <rayo/ptx/kernels/normalization.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

// The backend's op glue, compiled here: rayo-ptx-tests links only the PTX builder and generators.
#include "cuda/ops/normalization.cpp"  // NOLINT(bugprone-suspicious-include)

namespace rayo::test {
namespace {

using namespace rayo::ptx;
using namespace rayo::ptx::kernels;
using ptxsim::HostView;
using ptxsim::SimulatedRunner;

bool contains(std::string const& text, std::string const& piece) { return text.find(piece) != std::string::npos; }

TEST(PtxNormalization, RejectsConfigsItCannotBuild) {
    auto const bad = [](RowConfig row) { return NormConfig{.op = Op::rms_norm, .row = row}; };
    EXPECT_THROW((void)normalization(bad({RowLayout::group, 4, 32, 2048, 1})), BuildError);
    EXPECT_THROW((void)normalization(bad({RowLayout::block, 1, 1, 1024, 64})), BuildError);
    EXPECT_THROW((void)normalization(bad({RowLayout::block_loop, 4, 1, 512, 3})), BuildError);
}

TEST(PtxNormalization, EmitsTheLayoutsInstructions) {
    std::string const layer =
        normalization({.op = Op::layer_norm, .row = choose_row_config(4096, 4)}).emit(Target::sm_90);
    EXPECT_TRUE(contains(layer,
                         ".param .u64 in,\n\t.param .u64 gamma,\n\t.param .u64 beta,\n\t.param .u64 out,\n"
                         "\t.param .u32 rows,\n\t.param .u32 cols,\n\t.param .f32 eps\n"));
    EXPECT_TRUE(contains(layer, "ld.global.nc.v4.f32")) << "gamma and beta through the read-only path";
    EXPECT_TRUE(contains(layer, "ld.global.v4.f32"));
    EXPECT_TRUE(contains(layer, "st.global.v4.f32"));
    EXPECT_TRUE(contains(layer, "sqrt.rn.f32"));
    EXPECT_TRUE(contains(layer, "rcp.rn.f32"));
    EXPECT_TRUE(contains(layer, "row_centred")) << "the second, centred statistics pass";
    EXPECT_FALSE(contains(layer, "atom")) << "deterministic: no atomics";

    std::string const rms = normalization({.op = Op::rms_norm, .row = choose_row_config(8, 4)}).emit(Target::sm_90);
    EXPECT_FALSE(contains(rms, "bar.sync"));
    EXPECT_FALSE(contains(rms, "shfl")) << "one lane per 8-float row";
    EXPECT_FALSE(contains(rms, "row_centred"));

    std::string const loop =
        normalization({.op = Op::layer_norm, .row = choose_row_config(100001, 4)}).emit(Target::sm_80);
    EXPECT_FALSE(contains(loop, ".v4.")) << "an odd row length: one float at a time";
    EXPECT_TRUE(contains(loop, "bra $L_"));
}

TEST(PtxNormalization, NamesSpellEveryParameter) {
    std::vector<std::string> names;
    for (RowConfig const& c : chosen_row_configs())
        for (Op n : ops_of(OpFamily::normalization)) names.push_back(normalization_name({.op = n, .row = c}));
    std::sort(names.begin(), names.end());
    EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "two configs share a name";
    EXPECT_EQ(normalization_name({.op = Op::rms_norm, .row = {RowLayout::group, 1, 4, 128, 2}}),
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
        for (Op n : ops_of(OpFamily::normalization))
            for (Target t : {Target::sm_80, Target::sm_90}) cases.push_back({{.op = n, .row = row}, t});
    // f16 and bf16 rows: every layout once (vector loads of 2, 4 or 8 bytes, widened and rounded).
    for (RowConfig const& row : rows)
        for (Op n : ops_of(OpFamily::normalization)) {
            cases.push_back({{.op = n, .row = row, .element = DType::f16}, Target::sm_80});
            cases.push_back({{.op = n, .row = row, .element = DType::bf16}, Target::sm_90});
        }
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

// ---- the op glue

void norm_glue(cuda::KernelRunner& runner, Op op, std::size_t rows, std::size_t cols, HostView<float> const& x,
               detail::TensorView const& gamma, HostView<float> const& y) {
    detail::TensorView const in[] = {x.matrix(rows, cols), gamma, detail::TensorView{}}, out[] = {y.matrix(rows, cols)};
    cuda::ops::run(runner, detail::op::Norm{op, 1e-5f}, {in, out});
}

TEST(PtxNormalizationGlue, KeysNameTheKernelAndTheTargetAndEmptyTensorsLaunchNothing) {
    SimulatedRunner runner(2, Target::sm_80);
    HostView<float> x(runner, 4 * 4096, 0, DType::f32), y(runner, 4 * 4096, 0, DType::f32);
    HostView<float> gamma(runner, 4096, 0, DType::f32);
    x.fill(std::vector<float>(4 * 4096, 0.5f));
    gamma.fill(std::vector<float>(4096, 2.0f));
    norm_glue(runner, Op::rms_norm, 4, 4096, x, gamma.view(), y);
    ASSERT_EQ(runner.launches().size(), 1u);
    EXPECT_EQ(runner.launches()[0].key, "norm/rms_norm_block_v4_g1_t256_i4/sm_80");
    EXPECT_EQ(runner.launches()[0].dims.grid[0], 4u);
    EXPECT_EQ(runner.launches()[0].dims.block[0], 256u);
    norm_glue(runner, Op::layer_norm, 0, 4096, x, detail::TensorView{}, y);
    norm_glue(runner, Op::layer_norm, 4, 0, x, detail::TensorView{}, y);
    EXPECT_EQ(runner.launches().size(), 1u);
    // Non-f32 data is not this kernel's: the dispatcher runs it on the CPU.
    detail::TensorView half = x.matrix(4, 4096);
    half.dtype = DType::f16;
    detail::TensorView const in[] = {half, detail::TensorView{}, detail::TensorView{}}, out[] = {y.matrix(4, 4096)};
    EXPECT_FALSE(cuda::ops::supports(runner, detail::op::Norm{Op::rms_norm, 1e-5f}, {in, out}).native);
}

}  // namespace
}  // namespace rayo::test
