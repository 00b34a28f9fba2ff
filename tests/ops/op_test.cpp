// The harness's tests: every case on every target (Ops/OpCase.MatchesFloat64/<case>_on_<target>);
// every row of rayo::op_table has cases at every element type it takes; and the support matrix of
// this machine's devices (op × element type × backend: native or CPU fallback), printed by
//   rayo-tests --gtest_filter='OpSupport.Matrix'
#include "ops/harness.hpp"

#include <cstdlib>
#include <iostream>
#include <string_view>
#include <set>
#include <sstream>
#include <utility>

#include "dispatch/backend.hpp"
#include "ops/simulated_cuda.hpp"
#if RAYO_TEST_VULKAN
#include "vulkan/diagnostics.hpp"
#endif

namespace rayo::test::ops {
namespace {

struct Param {
    std::size_t op_case, target;
};

std::vector<Param> params() {
    std::vector<Param> p;
    for (std::size_t t = 0; t < targets().size(); ++t)
        for (std::size_t c = 0; c < op_cases().size(); ++c)
            if (!targets()[t].takes || targets()[t].takes(op_cases()[c].op, op_cases()[c].dtype)) p.push_back({c, t});
    return p;
}

void PrintTo(Param const& p, std::ostream* os) {
    *os << op_cases()[p.op_case].name << " on " << targets()[p.target].id;
}

std::string param_name(::testing::TestParamInfo<Param> const& info) {
    return op_cases()[info.param.op_case].name + "_on_" + targets()[info.param.target].id;
}

// Vulkan's validation layer: on when RAYO_VULKAN_VALIDATION=1 (ctest sets it for the Vulkan
// cases), and what it has reported so far.
std::uint64_t validation_message_count() {
#if RAYO_TEST_VULKAN
    if (char const* v = std::getenv("RAYO_VULKAN_VALIDATION"); v && std::string_view(v) == "1") {
        EXPECT_TRUE(vulkan::validation_enabled()) << "RAYO_VULKAN_VALIDATION=1 but the validation layer is not active";
    }
    return vulkan::validation_message_count();
#else
    return 0;
#endif
}

class OpCaseTest : public ::testing::TestWithParam<Param> {};

TEST_P(OpCaseTest, MatchesFloat64) {
    OpCase const& c = op_cases()[GetParam().op_case];
    Target const& t = targets()[GetParam().target];
    struct Leave {
        Target const& target;
        ~Leave() { target.leave(); }
    } const leave{t};
    Device const device = t.enter();
    reset_stats();
    // On Vulkan devices the validation layer, where asked for, must report nothing.
    std::uint64_t const validation_messages = validation_message_count();
    {
        CaseContext ctx(t, device, c.op, c.dtype);
        SCOPED_TRACE(c.name + " on " + t.id + " (" + device.name() + "), seed " + std::to_string(ctx.seed()));
        try {
            c.check(ctx);
        } catch (NotSimulated const& e) {
            GTEST_SKIP() << "the PTX simulator does not model a kernel of this case: " << e.what();
        }
        bool const none_ran = ctx.not_simulated() > 0 && !::testing::Test::HasFailure() && ctx.problems_run() == 0;
        if (none_ran)
            GTEST_SKIP() << "the PTX simulator does not model this case's kernels: " << ctx.not_simulated_reason();
        if (ctx.not_simulated() > 0)
            std::cout << ctx.not_simulated()
                      << " problems of this case not run: their kernels use instructions the PTX "
                      << "simulator does not model (" << ctx.not_simulated_reason() << ")\n";
        if (ctx.flushed_results() > 0)
            std::cout << device.name() << " flushes float32 subnormals: " << ctx.flushed_results()
                      << " results accepted as flushed\n";
    }
    if (device.kind() == DeviceKind::vulkan) {
        device.synchronize();
        EXPECT_EQ(validation_message_count(), validation_messages)
            << "the validation layer reported messages (logged above)";
    }
    // Native everywhere, except where the backends document that they run a case on the CPU.
    Stats const s = stats();
    bool const expected = c.gpu_falls_back && device.kind() != DeviceKind::cpu;
    if (expected) {
        EXPECT_GT(s.cpu_fallbacks, 0u) << c.name << " runs natively on " << t.id << ": the docs say it falls back";
    } else {
        std::string ops;
        for (auto const& [op, n] : s.fallbacks_by_op) ops += " " + op;
        EXPECT_EQ(s.cpu_fallbacks, 0u) << c.name << " ran on the CPU instead of " << t.id << ":" << ops;
    }
}

INSTANTIATE_TEST_SUITE_P(Ops, OpCaseTest, ::testing::ValuesIn(params()), param_name);

// Every op of the table at every element type it takes has at least one case, and every case's
// op takes the case's element type.
TEST(OpSupport, EveryOpOfTheTableHasCasesAtEveryElementType) {
    std::set<std::pair<Op, DType>> covered;
    for (OpCase const& c : op_cases()) {
        covered.insert({c.op, c.dtype});
        EXPECT_TRUE(info(c.op).dtypes.contains(c.dtype))
            << c.name << ": " << to_string(c.op) << " does not take " << to_string(c.dtype) << " (rayo/op_table.hpp)";
    }
    for (OpInfo const& row : op_table)
        for (unsigned t = 0; to_string(static_cast<DType>(t)) != "?"; ++t)
            if (row.dtypes.contains(static_cast<DType>(t))) {
                EXPECT_TRUE(covered.contains({row.op, static_cast<DType>(t)}))
                    << row.name << " on " << to_string(static_cast<DType>(t)) << " has no case in tests/ops/";
            }
    std::set<std::string> names;
    for (OpCase const& c : op_cases()) EXPECT_TRUE(names.insert(c.name).second) << "two cases named " << c.name;
}

// ---- the support matrix

// A descriptor of `op` at element type `dtype` with views of a modest shape, as the op layer
// would hand it to a backend (the buffers are never touched: supports() only looks).
struct Probe {
    detail::OpDescriptor op;
    std::vector<detail::TensorView> in, out;
};

detail::TensorView view(DType dtype, std::vector<std::int64_t> dims) {
    return detail::contiguous_view(1, 0, dtype, dims);
}

Probe probe(Op op, DType dtype) {
    using namespace detail;
    std::int64_t const rows = 64, cols = 1024;
    // The element-wise, reduction, softmax and norm families: x (and gamma, beta) of the row's type.
    bool const floating_family = family(op) == OpFamily::unary || family(op) == OpFamily::binary ||
                                 family(op) == OpFamily::reduction || family(op) == OpFamily::softmax ||
                                 family(op) == OpFamily::normalization;
    TensorView const x = view(floating_family ? dtype : DType::f32, {rows, cols});
    switch (family(op)) {
        case OpFamily::unary: return {op::Unary{op}, {x}, {x}};
        case OpFamily::binary: return {op::Binary{op}, {x, x}, {x}};
        case OpFamily::reduction:
            if (op == Op::dot) return {op::Dot{}, {x, x}, {view(DType::f32, {})}};
            return {op::Reduce{op, {1, std::size_t(rows * cols), 1}},
                    {x},
                    {view(is_arg_reduction(op) ? DType::i64 : DType::f32, {})}};
        case OpFamily::softmax: return {op::Softmax{op}, {x}, {x}};
        case OpFamily::normalization: {
            TensorView const g = view(dtype, {cols});
            return {op::Norm{op, 1e-5f}, {x, g, g}, {x}};
        }
        case OpFamily::matmul: {
            std::size_t const m = 32, n = 512, k = 1024;
            bool const lin = op == Op::linear;
            TensorView const a = view(lin ? DType::f32 : dtype, {std::int64_t(m), std::int64_t(k)});
            TensorView const b =
                lin ? view(dtype, {std::int64_t(n), std::int64_t(k)}) : view(dtype, {std::int64_t(k), std::int64_t(n)});
            return {op::Matmul{op, {m, n, k, lin}}, {a, b}, {view(DType::f32, {std::int64_t(m), std::int64_t(n)})}};
        }
        case OpFamily::quantization:
            if (op == Op::quantize) return {op::Quantize{}, {x}, {view(dtype, {rows, cols})}};
            return {op::Dequantize{}, {view(dtype, {rows, cols})}, {x}};
        case OpFamily::conversion: return {op::Cast{}, {view(dtype, {rows, cols})}, {x}};
        case OpFamily::layout: return {op::Copy{}, {view(dtype, {rows, cols})}, {view(dtype, {rows, cols})}};
        case OpFamily::gather:
            return {op::Gather{op, 1, std::size_t(rows), std::size_t(cols)},
                    {view(dtype, {rows, cols}), view(DType::i32, {16})},
                    {view(dtype, {16, cols})}};
        case OpFamily::rotary: {
            TensorView const t = view(dtype, {16, 8, 128});
            return {op::Rope{op, 16, 8, 128, 128, 16}, {t, view(DType::i32, {16})}, {t}};
        }
        case OpFamily::attention: {
            TensorView const q = view(dtype, {1, 64, 8, 128}), kv = view(dtype, {1, 256, 2, 128});
            op::Attention a{op, 1, 64, 256, 8, 2, 128, 0.088f, true, 192};
            return {a, {q, kv, kv}, {q}};
        }
        case OpFamily::convolution: {
            op::Conv2dShape c{.n = 2,
                              .c = 16,
                              .h = 20,
                              .w = 20,
                              .o = 32,
                              .kh = 3,
                              .kw = 3,
                              .oh = 20,
                              .ow = 20,
                              .pad_h = 1,
                              .pad_w = 1};
            return {op::Conv2d{op, c},
                    {view(dtype, {2, 16, 20, 20}), view(dtype, {32, 16, 3, 3})},
                    {view(dtype, {2, 32, 20, 20})}};
        }
        case OpFamily::pooling:
            return {op::Pool2d{op, 32, 20, 20, 10, 10, 2, 2, 2, 2},
                    {view(dtype, {32, 20, 20})},
                    {view(dtype, {32, 10, 10})}};
    }
    return {};
}

TEST(OpSupport, Matrix) {
#if RAYO_TEST_SIMULATED_CUDA
    (void)register_simulated_cuda();
#endif
    std::vector<detail::Backend*> backends;
    for (detail::DeviceBackend* b : detail::DeviceRegistry::instance().backends())
        backends.push_back(&detail::backend_of(detail::make_device(b->kind(), b->index())));
    std::ostringstream table;
    table << "| op | element type |";
    for (auto* b : backends) table << ' ' << detail::make_device(b->kind(), b->index()).id() << " |";
    table << "\n| --- | --- |";
    for (std::size_t i = 0; i < backends.size(); ++i) table << " --- |";
    table << '\n';
    for (OpInfo const& row : op_table)
        for (unsigned t = 0; to_string(static_cast<DType>(t)) != "?"; ++t) {
            auto const dtype = static_cast<DType>(t);
            if (!row.dtypes.contains(dtype)) continue;
            Probe const p = probe(row.op, dtype);
            table << "| " << row.name << " | " << to_string(dtype) << " |";
            for (auto* b : backends) {
                detail::Support const s = b->supports(p.op, {p.in, p.out});
                table << (s.native ? " native |" : " CPU |");
                EXPECT_TRUE(s.native || b->kind() != DeviceKind::cpu) << row.name << " on the CPU: " << s.reason;
            }
            table << '\n';
        }
    std::cout << "Devices:\n";
    for (auto* b : backends)
        std::cout << "  " << detail::make_device(b->kind(), b->index()).id() << ": " << b->name() << '\n';
    std::cout << '\n' << table.str();
#if RAYO_TEST_SIMULATED_CUDA
    unregister_simulated_cuda();
#endif
}

}  // namespace
}  // namespace rayo::test::ops
