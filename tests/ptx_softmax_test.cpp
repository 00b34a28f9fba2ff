// The softmax / log_softmax generator: the layout rayo picks per row length, the shape of the code
// each layout emits, every kernel rayo may load (softmax and log_softmax for each config
// choose_row_config returns) assembled by ptxas for sm_80 and sm_90, and what the backend's op glue
// (src/cuda/ops/softmax.cpp, compiled into this binary) launches. What the kernels compute is
// checked by the harness (tests/ops/), which runs them on the PTX simulator and on every CUDA device.
#include "support/family_ops.hpp"
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
#include "cuda/ops/softmax.cpp"  // NOLINT(bugprone-suspicious-include)

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
        if (c.layout != RowLayout::block_loop) {
            EXPECT_LE(c.items * c.vector, 32u);
        }
    }
}

TEST(PtxSoftmax, RejectsConfigsItCannotBuild) {
    auto const bad = [](RowConfig row) { return SoftmaxConfig{.op = Op::softmax, .row = row}; };
    EXPECT_THROW((void)softmax(bad({RowLayout::group, 3, 32, 128, 1})), BuildError);       // vector
    EXPECT_THROW((void)softmax(bad({RowLayout::group, 4, 64, 128, 1})), BuildError);       // group
    EXPECT_THROW((void)softmax(bad({RowLayout::group, 4, 32, 96, 1})), BuildError);        // block
    EXPECT_THROW((void)softmax(bad({RowLayout::group, 4, 32, 128, 16})), BuildError);      // 64 floats a thread
    EXPECT_THROW((void)softmax(bad({RowLayout::block, 4, 1, 32, 4})), BuildError);         // one warp
    EXPECT_THROW((void)softmax(bad({RowLayout::block_loop, 4, 1, 512, 16})), BuildError);  // items
    EXPECT_THROW((void)softmax(bad({RowLayout::block, 4, 8, 256, 4})), BuildError);        // group outside group
}

TEST(PtxSoftmax, EmitsTheLayoutsInstructions) {
    std::string const group = softmax({.op = Op::softmax, .row = choose_row_config(128, 4)}).emit(Target::sm_90);
    EXPECT_TRUE(contains(group, ".param .u64 in,\n\t.param .u64 out,\n\t.param .u32 rows,\n\t.param .u32 cols\n"));
    EXPECT_TRUE(contains(group, "ld.global.v4.f32")) << "16-byte loads";
    EXPECT_TRUE(contains(group, "st.global.v4.f32")) << "16-byte stores";
    EXPECT_TRUE(contains(group, "shfl.sync.bfly.b32")) << "the group's reductions are shuffles";
    EXPECT_FALSE(contains(group, "bar.sync")) << "a group needs no barrier";
    EXPECT_TRUE(contains(group, "ex2.approx.f32"));
    EXPECT_TRUE(contains(group, ".maxntid 128, 1, 1"));

    std::string const block = softmax({.op = Op::log_softmax, .row = choose_row_config(4096, 4)}).emit(Target::sm_90);
    EXPECT_TRUE(contains(block, "bar.sync")) << "per-warp partials through shared memory";
    EXPECT_TRUE(contains(block, ".shared .align 16 .b8 row_max[32]"));
    EXPECT_TRUE(contains(block, "max.NaN.f32"));
    EXPECT_FALSE(contains(block, "rcp.rn.f32")) << "log_softmax subtracts, it does not divide";

    std::string const scalar = softmax({.op = Op::softmax, .row = choose_row_config(4097, 4)}).emit(Target::sm_80);
    EXPECT_FALSE(contains(scalar, ".v4.")) << "rows that are not 16-byte aligned are read one float at a time";
    EXPECT_TRUE(contains(scalar, "rcp.rn.f32"));

    std::string const loop = softmax({.op = Op::softmax, .row = choose_row_config(100000, 4)}).emit(Target::sm_90);
    EXPECT_TRUE(contains(loop, "ld.global.v4.f32"));
    EXPECT_TRUE(contains(loop, "bra $L_"));
}

TEST(PtxSoftmax, NamesSpellEveryParameter) {
    std::vector<std::string> names;
    for (RowConfig const& c : chosen_row_configs())
        for (Op op : ops_of(OpFamily::softmax)) names.push_back(softmax_name({.op = op, .row = c}));
    std::sort(names.begin(), names.end());
    EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "two configs share a name";
    EXPECT_EQ(softmax_name({.op = Op::log_softmax, .row = {RowLayout::block, 4, 1, 256, 4}}),
              "log_softmax_block_v4_g1_t256_i4");
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
        for (Op op : ops_of(OpFamily::softmax))
            for (Target t : {Target::sm_80, Target::sm_90}) cases.push_back({{.op = op, .row = row}, t});
    // f16 and bf16 rows: every layout once (vector loads of 2, 4 or 8 bytes, widened and rounded).
    for (RowConfig const& row : rows)
        for (Op op : ops_of(OpFamily::softmax)) {
            cases.push_back({{.op = op, .row = row, .element = DType::f16}, Target::sm_80});
            cases.push_back({{.op = op, .row = row, .element = DType::bf16}, Target::sm_90});
        }
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

// A [rows, cols] f32 view at `address`.
detail::TensorView rows_view(std::uintptr_t address, std::size_t rows, std::size_t cols, DType type = DType::f32) {
    std::int64_t const dims[] = {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)};
    return detail::contiguous_view(address, 0, type, dims);
}

void softmax_glue(cuda::KernelRunner& runner, Op op, detail::TensorView const& in, detail::TensorView const& out) {
    detail::TensorView const i[] = {in}, o[] = {out};
    cuda::ops::run(runner, detail::op::Softmax{op}, {i, o});
}

TEST(PtxSoftmaxGlue, KeysNameTheKernelAndTheTargetAndEmptyTensorsLaunchNothing) {
    RecordingRunner runner;
    detail::TensorView const in = rows_view(0x10000, 2048, 8), out = rows_view(0x80000, 2048, 8);
    softmax_glue(runner, Op::log_softmax, in, out);
    ASSERT_EQ(runner.launches.size(), 1u);
    RecordingRunner::Launch const& l = runner.launches[0];
    EXPECT_EQ(l.key, "softmax/log_softmax_group_v4_g1_t128_i2/sm_80");
    EXPECT_EQ(l.kernel, "log_softmax_group_v4_g1_t128_i2");
    EXPECT_EQ(l.dims.grid[0], 16u);  // 128 rows a block
    EXPECT_EQ(l.dims.block[0], 128u);
    EXPECT_EQ(l.dims.shared_bytes, 0u);
    EXPECT_EQ(l.arguments, (std::vector<std::uint64_t>{0x10000, 0x80000, 2048, 8}));
    // A view 4 bytes past a 16-byte boundary takes the one-float kernel.
    detail::TensorView shifted = rows_view(0x10000, 4, 4096);
    shifted.offset = 4;
    softmax_glue(runner, Op::softmax, shifted, rows_view(0x80000, 4, 4096));
    EXPECT_EQ(runner.launches.back().key, "softmax/softmax_block_v1_g1_t256_i16/sm_80");
    EXPECT_EQ(runner.launches.back().dims.grid[0], 4u);
    // Nothing to do, nothing launched.
    softmax_glue(runner, Op::softmax, rows_view(0x10000, 0, 8), rows_view(0x80000, 0, 8));
    softmax_glue(runner, Op::softmax, rows_view(0x10000, 8, 0), rows_view(0x80000, 8, 0));
    EXPECT_EQ(runner.launches.size(), 2u);
    // Non-f32 data is not this kernel's: the dispatcher runs it on the CPU.
    detail::TensorView const half[] = {rows_view(0x10000, 2048, 8, DType::bf16)}, o[] = {out};
    EXPECT_FALSE(cuda::ops::supports(runner, detail::op::Softmax{Op::softmax}, {half, o}).native);
}

}  // namespace
}  // namespace rayo::test
