// softmax, log_softmax, layer_norm and rms_norm along the last axis against float64 references.
#include "support/test_support.hpp"
#include "support/row_references.hpp"

namespace rayo::test {
namespace {

// Elementwise |got - want| <= rel·|want| + abs.
void expect_close(std::vector<float> const& got, std::vector<double> const& want, double rel, double abs) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], rel * std::abs(want[i]) + abs) << "element " << i;
}

class RowOps : public ::testing::TestWithParam<CpuArch> {};

TEST_P(RowOps, SoftmaxAndLogSoftmax) {
    ArchScope scope(GetParam());
    for (Shape const& shape : op_shapes()) {
        auto const seed = fresh_seed();
        SCOPED_TRACE("shape " + shape.to_string() + " seed " + std::to_string(seed));
        auto const in = random_floats(shape.numel(), seed, -30.0f, 30.0f);
        auto const cols = static_cast<std::size_t>(shape[shape.rank() - 1]);
        auto x = Tensor<float>::from(in, shape);
        expect_close(softmax(x).to_vector(), softmax_ref(in, cols, false), 1e-5, 1e-37);
        expect_close(log_softmax(x, static_cast<int>(shape.rank()) - 1).to_vector(), softmax_ref(in, cols, true), 1e-6, 1e-5);
        auto out = poisoned(shape);
        softmax(x, -1, out);
        expect_close(out.to_vector(), softmax_ref(in, cols, false), 1e-5, 1e-37);
        log_softmax(x, -1, out);
        expect_close(out.to_vector(), softmax_ref(in, cols, true), 1e-6, 1e-5);
    }
}

TEST_P(RowOps, SoftmaxIsStableAtPlusMinus1e4) {
    ArchScope scope(GetParam());
    std::vector<float> in{1e4f, -1e4f, 0.0f, 1e4f - 1.0f, -1e4f, -1e4f, -1e4f + 2.0f, -1e4f};
    auto x = Tensor<float>::from(in, {2, 4});
    auto const p = softmax(x).to_vector();
    auto const lp = log_softmax(x).to_vector();
    expect_close(p, softmax_ref(in, 4, false), 1e-6, 1e-37);
    expect_close(lp, softmax_ref(in, 4, true), 1e-6, 1e-4);
    for (float v : p) EXPECT_TRUE(std::isfinite(v));
    for (float v : lp) EXPECT_FALSE(std::isnan(v));
}

TEST_P(RowOps, LayerNormAndRmsNorm) {
    ArchScope scope(GetParam());
    for (Shape const& shape : op_shapes()) {
        auto const seed = fresh_seed();
        SCOPED_TRACE("shape " + shape.to_string() + " seed " + std::to_string(seed));
        // An offset mean checks that the centring is done carefully.
        auto const in = random_floats(shape.numel(), seed, 40.0f, 60.0f);
        auto const cols = static_cast<std::size_t>(shape[shape.rank() - 1]);
        auto const g = random_floats(cols, seed + 1, 0.5f, 1.5f);
        auto const b = random_floats(cols, seed + 2, -1.0f, 1.0f);
        auto x = Tensor<float>::from(in, shape);
        auto gamma = Tensor<float>::from(g, {cols});
        auto beta = Tensor<float>::from(b, {cols});
        float const eps = 1e-5f;
        // cols == 1 normalises to exactly 0 (plus beta): the absolute term covers it.
        expect_close(layer_norm(x, eps).to_vector(), norm_ref(in, cols, true, nullptr, nullptr, eps), 1e-5, 1e-5);
        expect_close(layer_norm(x, gamma, beta, eps).to_vector(), norm_ref(in, cols, true, &g, &b, eps), 1e-5, 1e-5);
        expect_close(rms_norm(x, eps).to_vector(), norm_ref(in, cols, false, nullptr, nullptr, eps), 1e-6, 1e-7);
        expect_close(rms_norm(x, gamma, eps).to_vector(), norm_ref(in, cols, false, &g, nullptr, eps), 1e-6, 1e-7);
        auto out = poisoned(shape);
        layer_norm(x, gamma, beta, eps, out);
        expect_close(out.to_vector(), norm_ref(in, cols, true, &g, &b, eps), 1e-5, 1e-5);
        rms_norm(x, gamma, eps, out);
        expect_close(out.to_vector(), norm_ref(in, cols, false, &g, nullptr, eps), 1e-6, 1e-7);
    }
}

INSTANTIATE_TEST_SUITE_P(Cpu, RowOps, ::testing::ValuesIn(archs()), ArchParamName{});

}  // namespace
}  // namespace rayo::test
