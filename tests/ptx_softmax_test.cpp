// The softmax / log_softmax generator: the layout rayo picks per row length, the shape of the code
// each layout emits, every kernel rayo may load (softmax and log_softmax for each config
// choose_row_config returns) assembled by ptxas for sm_80 and sm_90, and the kernels executed on
// the host by the PTX simulator (tests/support/ptx_simulator.hpp) through the backend's own op
// glue (src/cuda/ops/softmax_ops.cpp, compiled into this binary): every layout, aligned and
// misaligned views, rows offset by +1000, -inf entries, all -inf and NaN rows, in place.
//
// Tolerances, |got - want| <= rel·|want| + abs: softmax rel 4e-6, abs 1e-37; log_softmax rel 1e-6,
// abs 4e-6 (as in cuda_softmax_test.cpp; the simulator's ex2.approx is exact, the GPU's is within
// about 2 ulp, which the tolerances leave room for).
#include "support/ptx_simulator.hpp"
#include "support/ptxas.hpp"

#include <rayo/ptx/kernels/softmax.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

// The backend's op glue, compiled here: rayo-ptx-tests links only the PTX builder and generators.
#include "cuda/ops/softmax_ops.cpp"  // NOLINT(bugprone-suspicious-include)
#include "support/row_references.hpp"

namespace rayo::test {
namespace {

using namespace rayo::ptx;
using namespace rayo::ptx::kernels;
using ptxsim::HostView;
using ptxsim::SimulatedRunner;

bool contains(std::string const& text, std::string const& piece) { return text.find(piece) != std::string::npos; }

// The choice is constexpr: a caller can precompute it.
static_assert(choose_row_config(4096, 4) == RowConfig{RowLayout::block, 4, 1, 256, 4});

TEST(PtxRowLayout, ChoosesByRowLengthAndAlignment) {
    // Short rows: a group of lanes per row, at least two vectors per lane where the row has them.
    EXPECT_EQ(choose_row_config(1, 4), (RowConfig{RowLayout::group, 1, 1, 128, 1}));
    EXPECT_EQ(choose_row_config(8, 4), (RowConfig{RowLayout::group, 4, 1, 128, 2}));
    EXPECT_EQ(choose_row_config(7, 4), (RowConfig{RowLayout::group, 1, 4, 128, 2}));
    EXPECT_EQ(choose_row_config(128, 4), (RowConfig{RowLayout::group, 4, 16, 128, 2}));
    EXPECT_EQ(choose_row_config(1000, 4), (RowConfig{RowLayout::group, 4, 32, 128, 8}));
    EXPECT_EQ(choose_row_config(1000, 1), (RowConfig{RowLayout::group, 1, 32, 128, 32}));
    // Longer rows: a block per row, the row in registers.
    EXPECT_EQ(choose_row_config(4096, 4), (RowConfig{RowLayout::block, 4, 1, 256, 4}));
    EXPECT_EQ(choose_row_config(4097, 4), (RowConfig{RowLayout::block, 1, 1, 512, 16}));
    EXPECT_EQ(choose_row_config(32768, 4), (RowConfig{RowLayout::block, 4, 1, 1024, 8}));
    // Longest: a block per row, looping.
    EXPECT_EQ(choose_row_config(100000, 4), (RowConfig{RowLayout::block_loop, 4, 1, 512, 4}));
    EXPECT_EQ(choose_row_config(100001, 4), (RowConfig{RowLayout::block_loop, 1, 1, 512, 4}));
    EXPECT_EQ(rows_per_block(choose_row_config(8, 4)), 128u);
    EXPECT_EQ(row_grid(choose_row_config(8, 4), 1000000), 7813u);
    EXPECT_EQ(row_grid(choose_row_config(4096, 4), 4096), 4096u);
    // Few enough kernels that a process loads a handful and the tests assemble all of them.
    EXPECT_LE(chosen_row_configs().size(), 40u);
    for (RowConfig const& c : chosen_row_configs()) {
        SCOPED_TRACE(to_string(c));
        EXPECT_NO_THROW(validate(c, "test"));
        if (c.layout != RowLayout::block_loop) EXPECT_LE(c.items * c.vector, 32u);
    }
}

TEST(PtxSoftmax, RejectsConfigsItCannotBuild) {
    auto const bad = [](RowConfig row) { return SoftmaxConfig{.log = false, .row = row}; };
    EXPECT_THROW((void)softmax(bad({RowLayout::group, 3, 32, 128, 1})), BuildError);      // vector
    EXPECT_THROW((void)softmax(bad({RowLayout::group, 4, 64, 128, 1})), BuildError);      // group
    EXPECT_THROW((void)softmax(bad({RowLayout::group, 4, 32, 96, 1})), BuildError);       // block
    EXPECT_THROW((void)softmax(bad({RowLayout::group, 4, 32, 128, 16})), BuildError);     // 64 floats a thread
    EXPECT_THROW((void)softmax(bad({RowLayout::block, 4, 1, 32, 4})), BuildError);        // one warp
    EXPECT_THROW((void)softmax(bad({RowLayout::block_loop, 4, 1, 512, 16})), BuildError);  // items
    EXPECT_THROW((void)softmax(bad({RowLayout::block, 4, 8, 256, 4})), BuildError);       // group outside group
}

TEST(PtxSoftmax, EmitsTheLayoutsInstructions) {
    std::string const group = softmax({.log = false, .row = choose_row_config(128, 4)}).emit(Target::sm_90);
    EXPECT_TRUE(contains(group, ".param .u64 in,\n\t.param .u64 out,\n\t.param .u32 rows,\n\t.param .u32 cols\n"));
    EXPECT_TRUE(contains(group, "ld.global.v4.f32")) << "16-byte loads";
    EXPECT_TRUE(contains(group, "st.global.v4.f32")) << "16-byte stores";
    EXPECT_TRUE(contains(group, "shfl.sync.bfly.b32")) << "the group's reductions are shuffles";
    EXPECT_FALSE(contains(group, "bar.sync")) << "a group needs no barrier";
    EXPECT_TRUE(contains(group, "ex2.approx.f32"));
    EXPECT_TRUE(contains(group, ".maxntid 128, 1, 1"));

    std::string const block = softmax({.log = true, .row = choose_row_config(4096, 4)}).emit(Target::sm_90);
    EXPECT_TRUE(contains(block, "bar.sync")) << "per-warp partials through shared memory";
    EXPECT_TRUE(contains(block, ".shared .align 16 .b8 row_max[32]"));
    EXPECT_TRUE(contains(block, "max.NaN.f32"));
    EXPECT_FALSE(contains(block, "rcp.rn.f32")) << "log_softmax subtracts, it does not divide";

    std::string const scalar = softmax({.log = false, .row = choose_row_config(4097, 4)}).emit(Target::sm_80);
    EXPECT_FALSE(contains(scalar, ".v4.")) << "rows that are not 16-byte aligned are read one float at a time";
    EXPECT_TRUE(contains(scalar, "rcp.rn.f32"));

    std::string const loop = softmax({.log = false, .row = choose_row_config(100000, 4)}).emit(Target::sm_90);
    EXPECT_TRUE(contains(loop, "ld.global.v4.f32"));
    EXPECT_TRUE(contains(loop, "bra $L_"));
}

TEST(PtxSoftmax, NamesSpellEveryParameter) {
    std::vector<std::string> names;
    for (RowConfig const& c : chosen_row_configs())
        for (bool log : {false, true}) names.push_back(softmax_name({.log = log, .row = c}));
    std::sort(names.begin(), names.end());
    EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "two configs share a name";
    EXPECT_EQ(softmax_name({.log = true, .row = {RowLayout::block, 4, 1, 256, 4}}), "log_softmax_block_v4_g1_t256_i4");
}

struct SoftmaxCase {
    SoftmaxConfig config;
    Target target;
};

std::vector<SoftmaxCase> every_softmax_kernel() {
    std::vector<RowConfig> rows = chosen_row_configs();
    // Two-float accesses: the generator takes them though rayo does not pick them.
    rows.push_back({RowLayout::group, 2, 8, 128, 2});
    rows.push_back({RowLayout::block, 2, 1, 256, 8});
    rows.push_back({RowLayout::block_loop, 2, 1, 256, 2});
    std::vector<SoftmaxCase> cases;
    for (RowConfig const& row : rows)
        for (bool log : {false, true})
            for (Target t : {Target::sm_80, Target::sm_90}) cases.push_back({{.log = log, .row = row}, t});
    return cases;
}

class PtxSoftmaxKernels : public ::testing::TestWithParam<SoftmaxCase> {};

TEST_P(PtxSoftmaxKernels, Assemble) {
    RAYO_SKIP_WITHOUT_PTXAS();
    expect_assembles(softmax(GetParam().config), GetParam().target);
}

INSTANTIATE_TEST_SUITE_P(Every, PtxSoftmaxKernels, ::testing::ValuesIn(every_softmax_kernel()),
                         [](::testing::TestParamInfo<SoftmaxCase> const& info) {
                             return softmax_name(info.param.config) + "_" + std::string(to_string(info.param.target));
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
constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// The largest |got - want| / (rel·|want| + abs), and where; NaN must meet NaN, an infinity the same
// infinity.
struct Worst {
    double ratio = 0;
    std::size_t at = 0;
};
Worst worst_error(std::vector<float> const& got, std::vector<double> const& want, bool log) {
    double const rel = log ? 1e-6 : 4e-6, abs = log ? 4e-6 : 1e-37;
    Worst w;
    for (std::size_t i = 0; i < got.size(); ++i) {
        double r;
        if (std::isnan(want[i])) r = std::isnan(got[i]) ? 0 : INFINITY;
        else if (std::isinf(want[i])) r = double(got[i]) == want[i] ? 0 : INFINITY;
        else r = std::abs(double(got[i]) - want[i]) / (rel * std::abs(want[i]) + abs);
        if (!(r <= w.ratio)) w = {r, i};
    }
    return w;
}

struct Rows {
    std::size_t rows, cols;
};

// softmax / log_softmax of `in` through the glue, views `offset` floats past a 256-byte boundary;
// false when the simulator cannot run the kernel's ex2.approx (the test then skips).
bool run(SimulatedRunner& runner, std::vector<float> const& in, Rows s, bool log, std::size_t offset,
         std::vector<float>& out) {
    HostView<float> x(runner, in.size(), offset, DType::f32), y(runner, in.size(), offset, DType::f32);
    x.fill(in);
    y.fill(std::vector<float>(in.size(), poison));
    try {
        cuda::ops::softmax(runner, s.rows, s.cols, log, x.view(), y.view());
    } catch (ptxsim::SimulationError const& e) {
        if (std::string(e.what()).find("ex2.approx") == std::string::npos) throw;
        return false;
    }
    out = y.values();
    return true;
}

#define RAYO_SKIP_WITHOUT_EX2()                                                                              \
    GTEST_SKIP() << "tests/support/ptx_simulator.hpp does not model ex2.approx.f32 (2^x) yet; "              \
                    "the softmax kernels run in cuda_softmax_test.cpp on a GPU"

void expect_close(std::vector<float> const& got, std::vector<double> const& want, bool log, std::size_t cols) {
    Worst const w = worst_error(got, want, log);
    EXPECT_LE(w.ratio, 1.0) << "at row " << w.at / cols << ", column " << w.at % cols << ": got " << got[w.at]
                            << ", want " << want[w.at];
}

// Every layout: one lane per row (300x8, 1x1), lane groups (3x7, 5x31, 130x12), a warp per row
// (64x1000), a block holding the row (3x4096, 2x4097, 1x32768), the looping block (1x100000).
TEST(PtxSoftmaxSimulated, MatchesFloat64ThroughTheGlue) {
    SimulatedRunner runner;
    for (Rows s : {Rows{1, 1}, Rows{3, 7}, Rows{5, 31}, Rows{130, 12}, Rows{300, 8}, Rows{64, 1000}, Rows{3, 4096},
                   Rows{2, 4097}, Rows{1, 32768}, Rows{1, 100000}})
        for (std::size_t offset : {0u, 1u}) {  // 1: views 4 bytes past a 16-byte boundary, the one-float kernels
            auto const seed = fresh_seed();
            SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols) + " offset " + std::to_string(offset) +
                         " seed " + std::to_string(seed));
            auto const in = random_floats(s.rows * s.cols, seed, -30.0f, 30.0f);
            // Rows offset by 1000 (e^1000 overflows unless the maximum goes first), with -inf entries.
            auto masked = random_floats(s.rows * s.cols, seed + 1, 996.0f, 1004.0f);
            for (std::size_t i = 0; i < masked.size(); i += 3)
                if (i % s.cols != 0) masked[i] = neg_inf;
            for (bool log : {false, true}) {
                SCOPED_TRACE(log ? "log_softmax" : "softmax");
                std::vector<float> got;
                if (!run(runner, in, s, log, offset, got)) RAYO_SKIP_WITHOUT_EX2();
                expect_close(got, softmax_ref(in, s.cols, log), log, s.cols);
                ASSERT_TRUE(run(runner, masked, s, log, offset, got));
                expect_close(got, softmax_ref(masked, s.cols, log), log, s.cols);
            }
        }
}

TEST(PtxSoftmaxSimulated, AllMinusInfinityOrNaNRowsAreNaNAndInPlaceWorks) {
    SimulatedRunner runner;
    for (std::size_t cols : {5u, 64u, 4096u, 40000u}) {
        SCOPED_TRACE(std::to_string(cols) + " columns");
        auto in = random_floats(3 * cols, fresh_seed(), -4.0f, 4.0f);
        for (std::size_t c = 0; c < cols; ++c) in[c] = neg_inf;           // row 0: all -inf
        in[2 * cols + cols / 2] = std::numeric_limits<float>::quiet_NaN();  // row 2: one NaN
        for (bool log : {false, true}) {
            std::vector<float> got;
            if (!run(runner, in, {3, cols}, log, 0, got)) RAYO_SKIP_WITHOUT_EX2();
            expect_close(got, softmax_ref(in, cols, log), log, cols);
            HostView<float> x(runner, in.size(), 0, DType::f32);
            x.fill(in);
            cuda::ops::softmax(runner, 3, cols, log, x.view(), x.view());
            expect_close(x.values(), softmax_ref(in, cols, log), log, cols);
        }
    }
}

// Records launches without running them (the glue's choices do not need the simulator).
class RecordingRunner final : public cuda::KernelRunner {
public:
    struct Launch {
        std::string key, kernel;
        cuda::LaunchDims dims;
        std::vector<std::uint64_t> arguments;  // the raw bits, as the driver would read them
    };
    [[nodiscard]] Target target() const noexcept override { return Target::sm_80; }
    [[nodiscard]] int multiprocessor_count() const noexcept override { return 2; }
    [[nodiscard]] std::uint64_t address(detail::TensorView const& view) override { return view.buffer + view.offset; }
    [[nodiscard]] std::uint64_t allocate_temporary(std::size_t) override { throw Unsupported("no temporaries"); }
    void free_temporary(std::uint64_t) noexcept override {}
    void launch(std::string_view key, cuda::KernelFactory make, cuda::LaunchDims dims,
                std::span<void*> arguments) override {
        Kernel const k = make();
        (void)k.emit(target());
        Launch l{std::string(key), k.name(), dims, {}};
        // softmax's parameters: two .u64 addresses, then two .u32 sizes.
        for (std::size_t i = 0; i < arguments.size(); ++i)
            l.arguments.push_back(i < 2 ? *static_cast<std::uint64_t*>(arguments[i])
                                        : *static_cast<std::uint32_t*>(arguments[i]));
        launches.push_back(std::move(l));
    }
    std::vector<Launch> launches;
};

TEST(PtxSoftmaxGlue, KeysNameTheKernelAndTheTargetAndEmptyTensorsLaunchNothing) {
    RecordingRunner runner;
    detail::TensorView const in{0x10000, 0, 2048 * 8, DType::f32}, out{0x80000, 0, 2048 * 8, DType::f32};
    cuda::ops::softmax(runner, 2048, 8, true, in, out);
    ASSERT_EQ(runner.launches.size(), 1u);
    RecordingRunner::Launch const& l = runner.launches[0];
    EXPECT_EQ(l.key, "softmax/log_softmax_group_v4_g1_t128_i2/sm_80");
    EXPECT_EQ(l.kernel, "log_softmax_group_v4_g1_t128_i2");
    EXPECT_EQ(l.dims.grid[0], 16u);  // 128 rows a block
    EXPECT_EQ(l.dims.block[0], 128u);
    EXPECT_EQ(l.dims.shared_bytes, 0u);
    EXPECT_EQ(l.arguments, (std::vector<std::uint64_t>{0x10000, 0x80000, 2048, 8}));
    // A view 4 bytes past a 16-byte boundary takes the one-float kernel.
    detail::TensorView shifted = in;
    shifted.offset = 4;
    cuda::ops::softmax(runner, 4, 4096, false, shifted, out);
    EXPECT_EQ(runner.launches.back().key, "softmax/softmax_block_v1_g1_t256_i16/sm_80");
    EXPECT_EQ(runner.launches.back().dims.grid[0], 4u);
    // Nothing to do, nothing launched.
    cuda::ops::softmax(runner, 0, 8, false, in, out);
    cuda::ops::softmax(runner, 8, 0, false, in, out);
    EXPECT_EQ(runner.launches.size(), 2u);
    // Non-f32 data is not this kernel's: the dispatcher runs it on the CPU.
    detail::TensorView half = in;
    half.dtype = DType::bf16;
    EXPECT_THROW(cuda::ops::softmax(runner, 2048, 8, false, half, out), Unsupported);
}

}  // namespace
}  // namespace rayo::test
