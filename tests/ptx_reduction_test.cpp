// The reduction kernel generators: every variant the CUDA backend can launch emitted and assembled
// by ptxas for sm_80 and sm_90, checks of the text (no atomics, f64 accumulation, shuffles), and
// the kernels executed on the host by the PTX simulator through the backend's own op glue
// (src/cuda/ops/reduction_ops.cpp, compiled into this binary), so the splits into parts, the
// partial buffers and the second pass run as they do on a GPU, against float64 references.
//
// Tolerances: sums and means within 1e-6·Σ|x| of the exact value (as the CPU test; the kernels
// accumulate in f64, so they are far closer); max, min, argmax, argmin exact, with NaN winning and
// the first index of the extreme (or of the first NaN) reported.
#include "support/ptx_simulator.hpp"
#include "support/ptxas.hpp"

#include <rayo/ptx/kernels/reduction.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <regex>

// The backend's op glue, compiled here: rayo-ptx-tests links only the PTX builder and generators.
#include "cuda/ops/reduction_ops.cpp"  // NOLINT(bugprone-suspicious-include)

namespace rayo::test {
namespace {

using namespace rayo::ptx;
using namespace rayo::ptx::kernels;
using ptxsim::HostView;
using ptxsim::SimulatedRunner;

// ---- ptxas and text

// Every configuration reduction_ops.cpp can ask for.
std::vector<ReduceRowsConfig> rows_variants() {
    std::vector<ReduceRowsConfig> v;
    for (int op = 0; op < 5; ++op)
        for (ReduceGroup group : {ReduceGroup::thread, ReduceGroup::warp, ReduceGroup::block}) {
            auto const kind = static_cast<ReduceKind>(op);
            for (bool mean : {false, true}) {
                if (mean && kind != ReduceKind::sum) continue;
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
                if (kind == ReduceKind::sum) {
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
    for (int op = 0; op < 5; ++op) {
        auto const kind = static_cast<ReduceKind>(op);
        v.push_back({.op = kind});
        v.push_back({.op = kind, .stage = ReduceStage::partial});
        if (kind == ReduceKind::sum) v.push_back({.op = kind, .mean = true});
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
    std::string const sum = reduce_rows({.op = ReduceKind::sum, .mean = true}).emit(Target::sm_90);
    EXPECT_NE(sum.find("ld.global.v4.f32"), std::string::npos);
    EXPECT_NE(sum.find("add.rn.f64"), std::string::npos);
    EXPECT_NE(sum.find("div.rn.f64"), std::string::npos) << "the mean divides in f64";
    EXPECT_NE(sum.find("cvt.rn.f32.f64"), std::string::npos);
    EXPECT_NE(sum.find("shfl.sync.bfly.b32"), std::string::npos);
    EXPECT_NE(sum.find("bar.sync"), std::string::npos);
    std::string const argmax = reduce_rows({.op = ReduceKind::argmax, .group = ReduceGroup::warp}).emit(Target::sm_80);
    EXPECT_NE(argmax.find("setp.gtu.f32"), std::string::npos);
    EXPECT_EQ(argmax.find("bar.sync"), std::string::npos) << "a warp per row needs no barrier";
    EXPECT_EQ(reduce_rows({}).name(), "rayo_reduce_rows_sum_values_final_block_v4_u4");
    EXPECT_THROW((void)reduce_rows({.op = ReduceKind::max, .mean = true}), BuildError);
    EXPECT_THROW((void)reduce_rows({.op = ReduceKind::argmin, .source = ReduceSource::products}), BuildError);
    EXPECT_THROW((void)reduce_columns({.unroll = 8}), BuildError);
}

// ---- execution in the simulator, through the op glue

std::uint32_t fresh_seed() {
    static std::random_device rd;
    return rd();
}

std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -100.0f, float hi = 100.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

constexpr float poison = -1.2345678e30f;
constexpr std::int64_t index_poison = -77;

// The CPU's semantics in double: sums, and the first index of the extreme with NaN above all.
struct Reference {
    std::vector<double> sum, abs_sum;
    std::vector<float> max, min;
    std::vector<std::int64_t> argmax, argmin;
};

Reference reference(std::vector<float> const& in, detail::ReduceShape s) {
    Reference r;
    for (std::size_t o = 0; o < s.outer; ++o)
        for (std::size_t j = 0; j < s.inner; ++j) {
            double sum = 0, abs_sum = 0;
            float mx = 0, mn = 0;
            std::int64_t imx = 0, imn = 0;
            for (std::size_t e = 0; e < s.extent; ++e) {
                float const v = in[(o * s.extent + e) * s.inner + j];
                sum += v;
                abs_sum += std::abs(static_cast<double>(v));
                auto const i = static_cast<std::int64_t>(e);
                if (e == 0) {
                    mx = mn = v;
                    continue;
                }
                if (!std::isnan(mx) && (std::isnan(v) || v > mx)) mx = v, imx = i;
                if (!std::isnan(mn) && (std::isnan(v) || v < mn)) mn = v, imn = i;
            }
            r.sum.push_back(sum), r.abs_sum.push_back(abs_sum), r.max.push_back(mx), r.min.push_back(mn);
            r.argmax.push_back(imx), r.argmin.push_back(imn);
        }
    return r;
}

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Runs every reduction of `in` viewed as `shape` (starting `offset` elements past a 256-byte
// boundary) and compares with the reference.
void check_all(SimulatedRunner& runner, std::vector<float> const& in, detail::ReduceShape shape, std::size_t offset) {
    std::size_t const outputs = shape.outer * shape.inner;
    Reference const r = reference(in, shape);
    HostView<float> x(runner, in.size(), offset, DType::f32);
    x.fill(in);
    HostView<float> values(runner, outputs, 1, DType::f32);
    HostView<std::int64_t> indices(runner, outputs, 0, DType::i64);
    for (int op = 0; op < 5; ++op) {
        auto const kind = static_cast<detail::ReduceOp>(op);
        for (bool mean : {false, true}) {
            if (mean && kind != detail::ReduceOp::sum) continue;
            if (shape.extent == 0 && kind != detail::ReduceOp::sum) continue;
            SCOPED_TRACE(std::string(mean ? "mean" : detail::to_string(kind)));
            bool const arg = detail::is_arg_reduction(kind);
            values.fill(std::vector<float>(outputs, poison));
            indices.fill(std::vector<std::int64_t>(outputs, index_poison));
            cuda::ops::reduce(runner, kind, shape, mean, x.view(), arg ? indices.view() : values.view());
            auto const got = values.values();
            auto const got_index = indices.values();
            for (std::size_t i = 0; i < outputs; ++i) {
                switch (kind) {
                    case detail::ReduceOp::sum: {
                        double const n = mean ? static_cast<double>(shape.extent) : 1.0;
                        double const want = r.sum[i] / n;
                        if (shape.extent == 0 && mean) {
                            ASSERT_TRUE(std::isnan(got[i])) << i;
                        } else if (std::isnan(want) || std::isinf(want)) {
                            ASSERT_TRUE(same_float(got[i], static_cast<float>(want)))
                                << i << ": " << got[i] << " vs " << want;
                        } else {
                            ASSERT_NEAR(got[i], want, (1e-6 * r.abs_sum[i] + 1e-30) / n) << i;
                        }
                        break;
                    }
                    case detail::ReduceOp::max:
                        ASSERT_TRUE(same_float(got[i], r.max[i])) << i << ": " << got[i] << " vs " << r.max[i];
                        break;
                    case detail::ReduceOp::min:
                        ASSERT_TRUE(same_float(got[i], r.min[i])) << i << ": " << got[i] << " vs " << r.min[i];
                        break;
                    case detail::ReduceOp::argmax: ASSERT_EQ(got_index[i], r.argmax[i]) << i; break;
                    case detail::ReduceOp::argmin: ASSERT_EQ(got_index[i], r.argmin[i]) << i; break;
                }
            }
        }
    }
}

std::string shape_text(detail::ReduceShape s) {
    return "[" + std::to_string(s.outer) + ", " + std::to_string(s.extent) + ", " + std::to_string(s.inner) + "]";
}

TEST(PtxReductionSimulated, EveryOpOnEveryShapeAndAlignment) {
    // Runs of one element, odd sizes, sizes around the vector width and the group sizes, a thread
    // and a warp and a block per row, rows split into parts, columns (split too), 2 multiprocessors.
    std::vector<detail::ReduceShape> const shapes{
        {1, 1, 1},    {1, 2, 1},    {1, 5, 1},     {1, 16, 1},   {1, 17, 1},   {1, 100, 1},  {1, 2048, 1},
        {1, 2049, 1}, {1, 4097, 1}, {1, 40001, 1}, {3, 5, 1},    {17, 33, 1},  {7, 3001, 1}, {2, 33333, 1},
        {1000, 7, 1}, {4, 9, 130},  {2, 3, 1031},  {1, 1000, 3}, {5, 300, 64}, {3, 1, 7},    {1, 7, 1}};
    SimulatedRunner runner(2);
    for (auto const& shape : shapes)
        for (std::size_t offset : {0u, 1u, 3u}) {
            auto const seed = fresh_seed();
            SCOPED_TRACE("shape " + shape_text(shape) + " offset " + std::to_string(offset) + " seed " +
                         std::to_string(seed));
            check_all(runner, random_floats(shape.outer * shape.extent * shape.inner, seed), shape, offset);
        }
    EXPECT_EQ(runner.live_temporaries(), 0u);
    // The long rows and columns took the two-pass path.
    std::size_t partial = 0;
    for (auto const& l : runner.launches()) partial += l.key.find("/partial/") != std::string::npos;
    EXPECT_GT(partial, 0u);
}

TEST(PtxReductionSimulated, NanWinsAndTiesTakeTheFirstIndexAcrossParts) {
    SimulatedRunner runner(2);
    float const nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (std::size_t n : {100u, 3000u, 50000u}) {
        SCOPED_TRACE("n " + std::to_string(n));
        std::vector<float> v(n, 1.0f);
        // Equal extremes far apart (in different parts when the row is split), then NaNs.
        v[10] = 5.0f, v[n - 3] = 5.0f, v[20] = -3.0f, v[n / 2] = -3.0f;
        check_all(runner, v, {1, n, 1}, 1);
        v[n / 3] = nan, v[n - 7] = nan, v[5] = -nan;
        check_all(runner, v, {1, n, 1}, 0);
        // Infinities are ordinary values; a row of -inf has argmax 0; -0 and +0 tie.
        std::vector<float> w(n, -inf);
        check_all(runner, w, {1, n, 1}, 0);
        std::vector<float> z(n, 0.0f);
        z[7] = -0.0f;
        check_all(runner, z, {1, n, 1}, 2);
        w[n - 1] = inf;
        check_all(runner, w, {1, n, 1}, 0);
    }
    // Columns: NaN down one column, ties in another.
    std::vector<float> c = random_floats(300 * 5, fresh_seed());
    c[4 * 5 + 2] = nan;
    c[1 * 5 + 3] = 500.0f, c[200 * 5 + 3] = 500.0f;
    check_all(runner, c, {1, 300, 5}, 0);
}

TEST(PtxReductionSimulated, EmptyAxisSumsToZeroAndItsMeanIsNan) {
    SimulatedRunner runner(2);
    HostView<float> x(runner, 1, 0, DType::f32);
    check_all(runner, {}, {3, 0, 1}, 0);
    check_all(runner, {}, {2, 0, 5}, 0);
    // No outputs: nothing runs.
    runner.clear_launches();
    HostView<float> out(runner, 1, 0, DType::f32);
    detail::TensorView none = x.view();
    none.numel = 0;
    cuda::ops::reduce(runner, detail::ReduceOp::max, {0, 5, 1}, false, none,
                      detail::TensorView{out.view().buffer, 0, 0, DType::f32});
    EXPECT_TRUE(runner.launches().empty());
}

TEST(PtxReductionSimulated, DotOnAlignedAndMisalignedPairs) {
    SimulatedRunner runner(2);
    for (std::size_t n : {0u, 1u, 7u, 100u, 4099u, 70001u})
        for (auto [oa, ob] : {std::pair<std::size_t, std::size_t>{0, 0}, {1, 1}, {1, 2}, {3, 0}}) {
            auto const seed = fresh_seed();
            SCOPED_TRACE("n " + std::to_string(n) + " offsets " + std::to_string(oa) + "/" + std::to_string(ob) +
                         " seed " + std::to_string(seed));
            auto const av = random_floats(n, seed, -2, 2), bv = random_floats(n, seed + 1, -2, 2);
            HostView<float> a(runner, n, oa, DType::f32), b(runner, n, ob, DType::f32), out(runner, 1, 1, DType::f32);
            a.fill(av);
            b.fill(bv);
            out.fill({poison});
            cuda::ops::dot(runner, a.view(), b.view(), out.view());
            double want = 0, abs_sum = 0;
            for (std::size_t i = 0; i < n; ++i) {
                double const p = static_cast<double>(av[i] * bv[i]);  // products rounded to f32, as on the CPU
                want += p, abs_sum += std::abs(p);
            }
            EXPECT_NEAR(out.values()[0], want, 1e-6 * abs_sum + 1e-30);
        }
    EXPECT_EQ(runner.live_temporaries(), 0u);
}

TEST(PtxReductionSimulated, LongSumSplitsIntoAFixedNumberOfPartsAndIsRepeatable) {
    SimulatedRunner runner(3);
    std::size_t const n = 200003;
    auto const in = random_floats(n, fresh_seed(), 0.0f, 1.0f);
    HostView<float> x(runner, n, 0, DType::f32), out(runner, 1, 0, DType::f32);
    x.fill(in);
    cuda::ops::reduce(runner, detail::ReduceOp::sum, {1, n, 1}, false, x.view(), out.view());
    float const first = out.values()[0];
    cuda::ops::reduce(runner, detail::ReduceOp::sum, {1, n, 1}, false, x.view(), out.view());
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

TEST(PtxReductionSimulated, GlueRejectsWrongTypesAndShapes) {
    SimulatedRunner runner(2);
    HostView<float> x(runner, 12, 0, DType::f32), out(runner, 4, 0, DType::f32);
    EXPECT_THROW(cuda::ops::reduce(runner, detail::ReduceOp::argmax, {4, 3, 1}, false, x.view(), out.view()),
                 Unsupported);
    EXPECT_THROW(cuda::ops::reduce(runner, detail::ReduceOp::sum, {4, 4, 1}, false, x.view(), out.view()), ShapeError);
    detail::TensorView halves = x.view();
    halves.dtype = DType::f16;
    EXPECT_THROW(cuda::ops::reduce(runner, detail::ReduceOp::sum, {4, 3, 1}, false, halves, out.view()), Unsupported);
}

}  // namespace
}  // namespace rayo::test
