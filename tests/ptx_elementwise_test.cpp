// The element-wise kernel generators: every variant the CUDA backend can launch emitted and
// assembled by ptxas for sm_80 and sm_90, checks of the text, and what the backend's op glue
// (src/cuda/ops/elementwise.cpp, compiled into this binary) launches: its cache keys, launch shapes
// and what it refuses. What the kernels compute is checked by the harness (tests/ops/), which runs
// them on the PTX simulator and on every CUDA device.
#include "support/family_ops.hpp"
#include "support/ptx_simulator.hpp"
#include "support/ptxas.hpp"

#include <rayo/ptx/kernels/conversion.hpp>
#include <rayo/ptx/kernels/elementwise.hpp>
#include <rayo/ptx/kernels/gather.hpp>
#include <rayo/ptx/kernels/layout.hpp>

#include <vector>

// The backend's op glue, compiled here: rayo-ptx-tests links only the PTX builder and generators.
#include "cuda/ops/elementwise.cpp"  // NOLINT(bugprone-suspicious-include)

namespace rayo::test {
namespace {

using namespace rayo::ptx;
using namespace rayo::ptx::kernels;
using ptxsim::HostView;
using ptxsim::SimulatedRunner;

// ---- ptxas

TEST(PtxElementwise, EveryUnaryVariantAssembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (Op op : ops_of(OpFamily::unary))
        for (bool vectorized : {true, false})
            for (Target target : {Target::sm_80, Target::sm_90}) {
                SCOPED_TRACE(std::string(to_string(op)) + (vectorized ? " v4 " : " scalar ") +
                             std::string(to_string(target)));
                expect_assembles(unary({.op = op, .vectorized = vectorized, .unroll = 4}), target);
            }
    // The other loop shapes the generator offers.
    for (unsigned unroll : {1u, 2u})
        for (Op op : {Op::gelu, Op::silu, Op::relu})
            expect_assembles(unary({.op = op, .vectorized = true, .unroll = unroll}), Target::sm_90);
}

// f16 and bf16 tensors: 16-bit loads widened to f32, stores rounded with cvt.rn.
TEST(PtxElementwise, EverySixteenBitVariantAssembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (DType element : {DType::f16, DType::bf16}) {
        Target const target = element == DType::f16 ? Target::sm_80 : Target::sm_90;
        for (bool vectorized : {true, false}) {
            for (Op op : ops_of(OpFamily::unary)) {
                SCOPED_TRACE(unary({.op = op, .element = element, .vectorized = vectorized}).name());
                expect_assembles(unary({.op = op, .element = element, .vectorized = vectorized}), target);
            }
            for (Op op : {Op::add, Op::div, Op::maximum})
                for (bool scalar : {false, true}) {
                    BinaryKernelConfig const c{
                        .op = op, .element = element, .scalar_operand = scalar, .vectorized = vectorized};
                    SCOPED_TRACE(binary(c).name());
                    expect_assembles(binary(c), target);
                }
        }
        for (unsigned rank : {1u, 3u, max_broadcast_rank}) {
            expect_assembles(binary_broadcast({.op = Op::mul, .element = element, .rank = rank}), target);
            expect_assembles(binary_broadcast({.op = Op::sub,
                                               .element = element,
                                               .rank = rank,
                                               .vectorized = true,
                                               .a_repeats_along_rows = rank == 3,
                                               .b_repeats_along_rows = rank == 1}),
                             target);
        }
    }
}

// The 16-bit kernels load and store 16-bit elements (8-byte groups in the vector body) and convert
// with cvt, never touching a 4-byte element.
TEST(PtxElementwise, SixteenBitKernelsMoveSixteenBitElements) {
    for (DType element : {DType::f16, DType::bf16}) {
        std::string const text = unary({.op = Op::exp, .element = element}).emit(Target::sm_90);
        SCOPED_TRACE(text);
        EXPECT_NE(text.find("ld.global.b16"), std::string::npos);
        EXPECT_NE(text.find("st.global.b16"), std::string::npos);
        EXPECT_NE(text.find("ld.global.v2.b32"), std::string::npos);
        EXPECT_NE(text.find("st.global.v2.b32"), std::string::npos);
        EXPECT_EQ(text.find("ld.global.v4.f32"), std::string::npos);
        EXPECT_EQ(text.find("ld.global.f32"), std::string::npos);
        EXPECT_NE(text.find(element == DType::f16 ? "cvt.rn.f16.f32" : "cvt.rn.bf16.f32"), std::string::npos);
    }
}

TEST(PtxElementwise, EveryBinaryVariantAssembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (Op op : ops_of(OpFamily::binary))
        for (bool scalar : {false, true})
            for (bool vectorized : {true, false})
                for (Target target : {Target::sm_80, Target::sm_90}) {
                    BinaryKernelConfig const c{.op = op, .scalar_operand = scalar, .vectorized = vectorized};
                    SCOPED_TRACE(binary(c).name() + " " + std::string(to_string(target)));
                    expect_assembles(binary(c), target);
                }
}

TEST(PtxElementwise, EveryBroadcastVariantAssembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (Op op : ops_of(OpFamily::binary))
        for (unsigned rank = 1; rank <= max_broadcast_rank; ++rank) {
            Target const target = rank % 2 ? Target::sm_80 : Target::sm_90;
            SCOPED_TRACE(binary_broadcast({.op = op, .rank = rank}).name() + " " + std::string(to_string(target)));
            expect_assembles(binary_broadcast({.op = op, .rank = rank}), target);
            expect_assembles(binary_broadcast({.op = op,
                                               .rank = rank,
                                               .vectorized = true,
                                               .a_repeats_along_rows = rank % 2 == 0,
                                               .b_repeats_along_rows = rank % 2 == 1}),
                             target);
        }
}

TEST(PtxConversion, EveryCastAssembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (DType from : {DType::f32, DType::f16, DType::bf16, DType::i32})
        for (DType to : {DType::f32, DType::f16, DType::bf16, DType::i32}) {
            SCOPED_TRACE(kernels::cast({.from = from, .to = to}).name());
            expect_assembles(kernels::cast({.from = from, .to = to}), Target::sm_80);
            expect_assembles(kernels::cast({.from = from, .to = to, .vectorized = false}), Target::sm_90);
        }
    EXPECT_THROW((void)kernels::cast({.from = DType::q4_k, .to = DType::f32}), BuildError);
    std::string const text = kernels::cast({.from = DType::i32, .to = DType::bf16}).emit(Target::sm_90);
    EXPECT_NE(text.find("cvt.rz.f32.s32"), std::string::npos) << "i32 -> bf16 rounds to odd first";
    EXPECT_NE(kernels::cast({.from = DType::f32, .to = DType::i32}).emit(Target::sm_90).find("cvt.rzi.s32.f32"),
              std::string::npos);
}

TEST(PtxLayout, EveryStridedCopyAssembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (unsigned rank = 1; rank <= 8; ++rank)
        for (unsigned bytes : {2u, 4u}) {
            SCOPED_TRACE(copy_strided({.rank = rank, .element_bytes = bytes}).name());
            expect_assembles(copy_strided({.rank = rank, .element_bytes = bytes}),
                             rank % 2 ? Target::sm_80 : Target::sm_90);
        }
    EXPECT_THROW((void)copy_strided({.rank = 0}), BuildError);
    EXPECT_THROW((void)copy_strided({.rank = 9}), BuildError);
    EXPECT_THROW((void)copy_strided({.element_bytes = 8}), BuildError);
    EXPECT_EQ(copy_strided({.rank = 3, .element_bytes = 2}).name(), "rayo_copy_strided_r3_b2");
}

TEST(PtxLayout, TiledTranspositionsAssemble) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (unsigned bytes : {2u, 4u}) {
        SCOPED_TRACE(transpose_tiled({.element_bytes = bytes}).name());
        expect_assembles(transpose_tiled({.element_bytes = bytes}), Target::sm_80);
        expect_assembles(transpose_tiled({.element_bytes = bytes}), Target::sm_90);
    }
    EXPECT_THROW((void)transpose_tiled({.element_bytes = 8}), BuildError);
    std::string const text = transpose_tiled({}).emit(Target::sm_90);
    EXPECT_NE(text.find("bar.sync"), std::string::npos);
    EXPECT_NE(text.find("st.shared.b32"), std::string::npos);
}

TEST(PtxGather, EveryChunkAssemblesAndNoIdReadsOutsideTheTable) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (bool scatter : {false, true})
        for (unsigned bytes : {2u, 4u, 16u}) {
            GatherKernelConfig const config{.chunk_bytes = bytes, .scatter = scatter};
            SCOPED_TRACE(gather_rows(config).name());
            expect_assembles(gather_rows(config), Target::sm_80);
            expect_assembles(gather_rows(config), Target::sm_90);
        }
    EXPECT_THROW((void)gather_rows({.chunk_bytes = 8}), BuildError);
    std::string const text = gather_rows({.chunk_bytes = 16}).emit(Target::sm_90);
    EXPECT_NE(text.find("setp.lt.u32"), std::string::npos) << "ids compared unsigned: negative ones are out of range";
    EXPECT_NE(text.find("ld.global.v4.u32"), std::string::npos);
    // index_copy's kernel writes only where the id is in range: one store of data, none of zeros.
    std::string const scatter = gather_rows({.chunk_bytes = 16, .scatter = true}).emit(Target::sm_90);
    EXPECT_NE(scatter.find(".entry rayo_scatter_rows_c16"), std::string::npos);
    EXPECT_EQ(scatter.find("st.global.v4.u32"), scatter.rfind("st.global.v4.u32")) << scatter;
    EXPECT_NE(scatter.find("setp.lt.u32"), std::string::npos);
}

// ---- text

TEST(PtxElementwise, VectorBodyUses16ByteAccessesAndTheScalarVariantNone) {
    std::string const v4 = unary({.op = Op::gelu}).emit(Target::sm_90);
    EXPECT_NE(v4.find("ld.global.v4.f32"), std::string::npos);
    EXPECT_NE(v4.find("st.global.v4.f32"), std::string::npos);
    EXPECT_NE(v4.find("ld.global.f32"), std::string::npos) << "scalar head and tail";
    std::string const scalar = unary({.op = Op::gelu, .vectorized = false}).emit(Target::sm_90);
    EXPECT_EQ(scalar.find(".v4."), std::string::npos);
    std::string const add = binary({.op = Op::add}).emit(Target::sm_80);
    EXPECT_NE(add.find("ld.global.v4.f32"), std::string::npos);
    EXPECT_NE(add.find(".maxntid 256, 1, 1"), std::string::npos);
}

TEST(PtxElementwise, IeeeOpsAndExactConstants) {
    // div and sqrt are the correctly rounded forms; exp uses no ex2.approx (a polynomial, as the CPU).
    EXPECT_NE(binary({.op = Op::div}).emit(Target::sm_90).find("div.rn.f32"), std::string::npos);
    EXPECT_NE(unary({.op = Op::sqrt}).emit(Target::sm_90).find("sqrt.rn.f32"), std::string::npos);
    std::string const exp_text = unary({.op = Op::exp}).emit(Target::sm_90);
    EXPECT_EQ(exp_text.find("ex2.approx"), std::string::npos);
    EXPECT_NE(exp_text.find("0f3FB8AA3B"), std::string::npos) << "log2(e) as its exact f32 bits";
    EXPECT_NE(exp_text.find("max.NaN.f32"), std::string::npos);
    EXPECT_EQ(unary({.op = Op::relu}).name(), "rayo_unary_relu_v4_u4");
    EXPECT_EQ(binary({.op = Op::mul, .scalar_operand = true, .vectorized = false, .unroll = 2}).name(),
              "rayo_binary_mul_scalar_scalar_u2");
}

TEST(PtxElementwise, RejectsBadShapesAndMissingParameters) {
    EXPECT_THROW((void)unary({.unroll = 3}), BuildError);
    EXPECT_THROW((void)binary({.block_threads = 100}), BuildError);
    Kernel k("no_alpha");
    Reg x = k.param(Type::f32, "x");
    EXPECT_THROW((void)emit_unary(k, Op::leaky_relu, x), BuildError);
}

TEST(PtxElementwise, OpsOfAnotherFamilyAreRefused) {
    EXPECT_THROW((void)unary({.op = Op::add}), BuildError);
    EXPECT_THROW((void)binary({.op = Op::relu}), BuildError);
    EXPECT_THROW((void)binary_broadcast({.op = Op::relu}), BuildError);
    EXPECT_THROW((void)binary_broadcast({.op = Op::add, .rank = 0}), BuildError);
    EXPECT_THROW((void)binary_broadcast({.op = Op::add, .rank = 9}), BuildError);
}

// ---- the op glue

TEST(PtxElementwiseGlue, KeysNameTheVariantAndTheTargetAndEmptyTensorsLaunchNothing) {
    SimulatedRunner runner(3, Target::sm_80);
    HostView<float> x(runner, 10, 0, DType::f32), y(runner, 10, 1, DType::f32);
    x.fill(std::vector<float>(10, 1.0f));
    auto unary_op = [&](Op op, detail::TensorView const& in, detail::TensorView const& out) {
        detail::TensorView const i[] = {in}, o[] = {out};
        cuda::ops::run(runner, detail::op::Unary{op}, {i, o});
    };
    unary_op(Op::gelu, x.view(), x.view());
    unary_op(Op::gelu, x.view(), y.view());
    ASSERT_EQ(runner.launches().size(), 2u);
    EXPECT_EQ(runner.launches()[0].key, "unary/gelu/f32/v4/u4/b256/sm_80");
    EXPECT_EQ(runner.launches()[1].key, "unary/gelu/f32/scalar/u4/b256/sm_80");
    detail::TensorView empty = x.view();
    empty.shape[0] = 0;
    unary_op(Op::exp, empty, empty);
    EXPECT_EQ(runner.launches().size(), 2u);
    // The grid covers the tensor, 1024 vectors (or elements) a block, up to the grid's limit; the
    // grid-stride loop takes the rest.
    EXPECT_EQ(cuda::ops::elementwise_launch(std::size_t{1} << 28, true).grid[0], 65536u);
    EXPECT_EQ(cuda::ops::elementwise_launch(std::size_t{1} << 28, false).grid[0], 262144u);
    EXPECT_EQ(cuda::ops::elementwise_launch((std::size_t{1} << 28) + 1, true).grid[0], 65537u);
    EXPECT_EQ(cuda::ops::elementwise_launch(5, true).grid[0], 1u);
    EXPECT_EQ(cuda::ops::elementwise_launch(std::size_t{1} << 44, false).grid[0], 0x7fffffffu);
    // What the kernels do not take, the glue says it does not support (the dispatcher then runs
    // the op on the CPU).
    detail::TensorView ints = x.view();
    ints.dtype = DType::i32;
    detail::TensorView const in[] = {ints}, out[] = {ints};
    EXPECT_FALSE(cuda::ops::supports(runner, detail::op::Unary{Op::relu}, {in, out}).native);
    detail::TensorView strided = x.view();
    strided.shape[0] = 5;
    strided.strides[0] = 2;
    detail::TensorView const sin[] = {strided}, sout[] = {strided};
    EXPECT_FALSE(cuda::ops::supports(runner, detail::op::Unary{Op::relu}, {sin, sout}).native);
}

}  // namespace
}  // namespace rayo::test
