// The rope and pool2d generators: every variant rayo may load assembled by ptxas for sm_80 and
// sm_90, and the shape of the code they emit. What the kernels compute is checked by the harness
// (tests/ops/rotary_cases.cpp, pooling_cases.cpp) on the PTX simulator and on every CUDA device.
#include "support/family_ops.hpp"
#include "support/ptxas.hpp"

#include <rayo/ptx/kernels/pooling.hpp>
#include <rayo/ptx/kernels/rotary.hpp>

#include <string>

namespace rayo::test {
namespace {

using namespace rayo::ptx;
using namespace rayo::ptx::kernels;

bool contains(std::string const& text, std::string const& piece) { return text.find(piece) != std::string::npos; }

TEST(PtxRope, EveryVariantAssembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (DType element : {DType::f32, DType::f16, DType::bf16})
        for (bool halves : {false, true})
            for (bool factors : {false, true})
                for (Target target : {Target::sm_80, Target::sm_90}) {
                    expect_assembles(rope({.element = element, .halves = halves, .has_factors = factors}), target);
                }
}

TEST(PtxRope, NamesAndInstructions) {
    Kernel const k = rope({.element = DType::f16, .halves = true, .has_factors = true});
    EXPECT_EQ(k.name(), "rayo_rope_halves_factors_f16");
    std::string const text = k.emit(Target::sm_90);
    EXPECT_TRUE(contains(text, "div.rn.f32")) << "the factor divides exactly";
    EXPECT_TRUE(contains(text, "cvt.rn.f16.f32")) << "rounded once to the element type";
    EXPECT_FALSE(contains(text, "sin.approx")) << "the sine is the kernel's own, range-reduced";
    EXPECT_EQ(rope({}).name(), "rayo_rope");
    EXPECT_THROW((void)rope({.element = DType::i32}), BuildError);
}

TEST(PtxPool2d, EveryVariantAssembles) {
    RAYO_SKIP_WITHOUT_PTXAS();
    for (Op op : ops_of(OpFamily::pooling))
        for (DType element : {DType::f32, DType::f16, DType::bf16})
            for (bool include : {false, true})
                for (Target target : {Target::sm_80, Target::sm_90}) {
                    expect_assembles(pool2d({.op = op, .element = element, .count_include_pad = include}), target);
                }
}

TEST(PtxPool2d, NamesAndRefusals) {
    EXPECT_EQ(pool2d({.op = Op::max_pool2d}).name(), "rayo_max_pool2d");
    EXPECT_EQ(pool2d({.op = Op::avg_pool2d, .element = DType::bf16, .count_include_pad = false}).name(),
              "rayo_avg_pool2d_exclude_pad_bf16");
    EXPECT_THROW((void)pool2d({.op = Op::relu}), BuildError);
    EXPECT_THROW((void)pool2d({.op = Op::max_pool2d, .element = DType::q4_k}), BuildError);
}

}  // namespace
}  // namespace rayo::test
