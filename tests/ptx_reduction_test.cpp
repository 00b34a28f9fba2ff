// The reduction kernel generators: every variant the CUDA backend can launch emitted and assembled
// by ptxas for sm_80 and sm_90, checks of the text (no atomics, f64 accumulation, shuffles), and
// what the backend's op glue (src/cuda/ops/reduction.cpp, compiled into this binary) launches: a
// long axis split into a fixed number of parts and the pass over their partial results, repeatable
// bit for bit; what it refuses. What the kernels compute is checked by the harness (tests/ops/),
// which runs them on the PTX simulator and on every CUDA device.
#include "support/ptx_simulator.hpp"
#include "support/ptxas.hpp"

#include <rayo/ptx/kernels/reduction.hpp>

#include <cmath>
#include <iterator>
#include <limits>
#include <random>
#include <regex>

// The backend's op glue, compiled here: rayo-ptx-tests links only the PTX builder and generators.
#include "cuda/ops/reduction.cpp"  // NOLINT(bugprone-suspicious-include)

namespace rayo::test {
namespace {

using namespace rayo::ptx;
using namespace rayo::ptx::kernels;
using ptxsim::HostView;
using ptxsim::SimulatedRunner;

// ---- ptxas and text

// Every configuration reduction_ops.cpp can ask for: every reduction but mean (sum with .mean) and
// dot (sum with ReduceSource::products), which the variants below cover as sum's.
constexpr Op reduce_ops[] = {Op::sum, Op::max, Op::min, Op::argmax, Op::argmin};
static_assert(std::size(reduce_ops) + 2 == op_count(OpFamily::reduction),
              "every reduction op but mean and dot is in reduce_ops");

std::vector<ReduceRowsConfig> rows_variants() {
    std::vector<ReduceRowsConfig> v;
    for (Op kind : reduce_ops)
        for (ReduceGroup group : {ReduceGroup::thread, ReduceGroup::warp, ReduceGroup::block}) {
            for (bool mean : {false, true}) {
                if (mean && kind != Op::sum) continue;
                for (bool vectorized : {true, false})
                    v.push_back({.op = kind,
                                 .mean = mean,
                                 .source = ReduceSource::values,
                                 .group = group,
                                 .vectorized = vectorized});
                v.push_back({.op = kind, .mean = mean, .source = ReduceSource::partials, .group = group});
            }
            for (bool vectorized : {true, false}) {
                v.push_back({.op = kind, .stage = ReduceStage::partial, .group = group, .vectorized = vectorized});
                if (kind == Op::sum) {
                    v.push_back(
                        {.op = kind, .source = ReduceSource::products, .group = group, .vectorized = vectorized});
                    v.push_back({.op = kind,
                                 .source = ReduceSource::products,
                                 .stage = ReduceStage::partial,
                                 .group = group,
                                 .vectorized = vectorized});
                }
            }
        }
    return v;
}

std::vector<ReduceColumnsConfig> columns_variants() {
    std::vector<ReduceColumnsConfig> v;
    for (Op kind : reduce_ops) {
        v.push_back({.op = kind});
        v.push_back({.op = kind, .stage = ReduceStage::partial});
        if (kind == Op::sum) v.push_back({.op = kind, .mean = true});
    }
    return v;
}

TEST(PtxReduction, EveryVariantAssembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (Target target : {Target::sm_80, Target::sm_90}) {
        for (auto const& c : rows_variants()) {
            Kernel const k = reduce_rows(c);
            SCOPED_TRACE(k.name() + " " + std::string(to_string(target)));
            expect_assembles(k, target);
        }
        for (auto const& c : columns_variants()) {
            Kernel const k = reduce_columns(c);
            SCOPED_TRACE(k.name() + " " + std::string(to_string(target)));
            expect_assembles(k, target);
        }
    }
}

// f16 and bf16 inputs: every variant that reads values or products (partials are f32 and f64
// whatever the input), f16 for sm_80 and bf16 for sm_90.
TEST(PtxReduction, EverySixteenBitVariantAssembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (DType element : {DType::f16, DType::bf16}) {
        Target const target = element == DType::f16 ? Target::sm_80 : Target::sm_90;
        for (ReduceRowsConfig c : rows_variants()) {
            if (c.source == ReduceSource::partials) continue;
            c.element = element;
            Kernel const k = reduce_rows(c);
            SCOPED_TRACE(k.name());
            expect_assembles(k, target);
        }
        for (ReduceColumnsConfig c : columns_variants()) {
            c.element = element;
            Kernel const k = reduce_columns(c);
            SCOPED_TRACE(k.name());
            expect_assembles(k, target);
        }
    }
}

TEST(PtxReduction, DeterministicTreesWithoutAtomicsAndF64Sums) {
    std::regex const atomic(R"(\s(atom|red)\.)");
    for (auto const& c : rows_variants()) {
        Kernel const k = reduce_rows(c);
        EXPECT_FALSE(std::regex_search(k.emit(Target::sm_90), atomic)) << k.name();
    }
    for (auto const& c : columns_variants()) {
        Kernel const k = reduce_columns(c);
        EXPECT_FALSE(std::regex_search(k.emit(Target::sm_90), atomic)) << k.name();
    }
    std::string const sum = reduce_rows({.op = Op::sum, .mean = true}).emit(Target::sm_90);
    EXPECT_NE(sum.find("ld.global.v4.f32"), std::string::npos);
    EXPECT_NE(sum.find("add.rn.f64"), std::string::npos);
    EXPECT_NE(sum.find("div.rn.f64"), std::string::npos) << "the mean divides in f64";
    EXPECT_NE(sum.find("cvt.rn.f32.f64"), std::string::npos);
    EXPECT_NE(sum.find("shfl.sync.bfly.b32"), std::string::npos);
    EXPECT_NE(sum.find("bar.sync"), std::string::npos);
    std::string const argmax = reduce_rows({.op = Op::argmax, .group = ReduceGroup::warp}).emit(Target::sm_80);
    EXPECT_NE(argmax.find("setp.gtu.f32"), std::string::npos);
    EXPECT_EQ(argmax.find("bar.sync"), std::string::npos) << "a warp per row needs no barrier";
    EXPECT_EQ(reduce_rows({}).name(), "rayo_reduce_rows_sum_values_final_block_v4_u4");
    EXPECT_THROW((void)reduce_rows({.op = Op::max, .mean = true}), BuildError);
    EXPECT_THROW((void)reduce_rows({.op = Op::argmin, .source = ReduceSource::products}), BuildError);
    EXPECT_THROW((void)reduce_columns({.unroll = 8}), BuildError);
}

// ---- the op glue

// Reduces x (n values) with `op` over `shape` into out.
void reduce_glue(cuda::KernelRunner& runner, Op op, detail::op::ReduceShape shape, detail::TensorView const& x,
                 detail::TensorView const& out) {
    detail::TensorView const in[] = {x}, o[] = {out};
    cuda::ops::run(runner, detail::op::Reduce{op, shape}, {in, o});
}

TEST(PtxReductionGlue, LongSumSplitsIntoAFixedNumberOfPartsAndIsRepeatable) {
    SimulatedRunner runner(3);
    std::size_t const n = 200003;
    std::vector<float> in(n);
    for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f;
    HostView<float> x(runner, n, 0, DType::f32), out(runner, 1, 0, DType::f32);
    x.fill(in);
    reduce_glue(runner, Op::sum, {1, n, 1}, x.view(), out.view());
    float const first = out.values()[0];
    reduce_glue(runner, Op::sum, {1, n, 1}, x.view(), out.view());
    EXPECT_EQ(std::bit_cast<std::uint32_t>(out.values()[0]), std::bit_cast<std::uint32_t>(first));
    double want = 0;
    for (float v : in) want += v;
    EXPECT_NEAR(first, want, 2e-7 * want);
    // A block per part (12 parts for 3 multiprocessors x 4), then one final pass over the partials.
    ASSERT_EQ(runner.launches().size(), 4u);
    EXPECT_EQ(runner.launches()[0].key, "reduce_rows/sum/plain/f32/values/partial/block/v4/u4/b256/sm_90");
    EXPECT_EQ(runner.launches()[0].dims.grid[0], 12u);
    EXPECT_EQ(runner.launches()[1].key, "reduce_rows/sum/plain/f32/partials/final/thread/scalar/u4/b256/sm_90");
}

TEST(PtxReductionGlue, RefusesWhatTheKernelsDoNotTakeAndLaunchesNothingForNoOutputs) {
    SimulatedRunner runner(2);
    HostView<float> x(runner, 12, 0, DType::f32), out(runner, 4, 0, DType::f32);
    auto supports = [&](Op op, detail::TensorView const& in, detail::TensorView const& o) {
        detail::TensorView const i[] = {in}, os[] = {o};
        return cuda::ops::supports(runner, detail::op::Reduce{op, {4, 3, 1}}, {i, os}).native;
    };
    EXPECT_TRUE(supports(Op::sum, x.view(), out.view()));
    EXPECT_FALSE(supports(Op::argmax, x.view(), out.view())) << "argmax writes i64";
    detail::TensorView halves = x.view(), integers = x.view(), half_out = out.view();
    halves.dtype = DType::f16;
    integers.dtype = DType::i32;
    half_out.dtype = DType::f16;
    EXPECT_TRUE(supports(Op::sum, halves, out.view())) << "f16 in, f32 out";
    EXPECT_FALSE(supports(Op::sum, halves, half_out)) << "sums are f32";
    EXPECT_FALSE(supports(Op::sum, integers, out.view()));
    reduce_glue(runner, Op::max, {0, 5, 1}, x.view(), out.view());
    EXPECT_TRUE(runner.launches().empty());
}

}  // namespace
}  // namespace rayo::test
