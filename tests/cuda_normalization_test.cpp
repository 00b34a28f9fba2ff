// layer_norm and rms_norm on a CUDA device against float64 references, on fresh random data with
// poisoned outputs: without and with gamma (and beta), short rows (a group of lanes per row), rows
// held by a block in registers, rows long enough for the looping kernel, rows whose mean is far
// larger than their spread (+1000), views that are not 16-byte aligned (the one-float path), in
// place, and bit-identical results from run to run. No op may fall back to the CPU.
//
// Tolerances, |got - want| <= rel·|want| + abs against the float64 formula (outputs are O(1)):
//   layer_norm  rel 1e-6, abs 1e-6: the mean c as an f32 sum, then Σ(x - c) and Σ(x - c)² (x - c
//               exact for these rows), 1/sqrt correctly rounded per step, two fused steps to y.
//   rms_norm    rel 1e-6, abs 1e-7: Σx² in f32 over a tree, then two or three roundings.
// Measured on an emulation of the same instructions (IEEE f32, fused fma): <= 0.22 of these.
#include "support/cuda_support.hpp"

#include <cmath>
#include <string>
#include <vector>
#include "support/row_references.hpp"

namespace rayo::test {
namespace {

constexpr float eps = 1e-5f;

// Every element within rel·|want| + abs; reports the worst element only.
void expect_close(std::vector<float> const& got, std::vector<double> const& want, double rel, double abs,
                  std::size_t cols) {
    ASSERT_EQ(got.size(), want.size());
    double worst = 0;
    std::size_t at = 0, bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        double const excess = std::abs(double(got[i]) - want[i]) / (rel * std::abs(want[i]) + abs);
        if (!(excess <= 1)) ++bad;
        if (!(excess <= worst)) worst = excess, at = i;
    }
    EXPECT_EQ(bad, 0u) << "worst at row " << at / cols << ", column " << at % cols << ": got " << got[at] << ", want "
                       << want[at] << " (" << worst << " times the tolerance)";
}

struct Rows {
    std::size_t rows, cols;
    std::string name() const { return std::to_string(rows) + "x" + std::to_string(cols); }
};

// The shapes the issue names and one or more per kernel layout (see cuda_softmax_test.cpp).
std::vector<Rows> shapes() {
    return {{1, 1},      {3, 7},      {5, 31},   {64, 1000}, {4096, 4096}, {1, 100000},
            {1000000, 8}, {1000, 128}, {2, 4097}, {3, 32768}, {2, 33333}};
}

enum class Variant { layer, layer_affine, rms, rms_gamma };

char const* variant_name(Variant v) {
    constexpr char const* names[] = {"layer_norm", "layer_norm(gamma, beta)", "rms_norm", "rms_norm(gamma)"};
    return names[static_cast<int>(v)];
}

class CudaNormalization : public CudaTest {
protected:
    // Runs every variant on x (a device tensor holding `in`), writing into the output `make_out`
    // returns (poisoned), and checks it.
    template <class MakeOut>
    void check_all(Tensor<float> const& x, std::vector<float> const& in, Rows s, MakeOut make_out) {
        auto const seed = fresh_seed();
        auto const g = random_floats(s.cols, seed, 0.5f, 1.5f);
        auto const b = random_floats(s.cols, seed + 1, -1.0f, 1.0f);
        auto gamma = Tensor<float>::from(g, {static_cast<std::int64_t>(s.cols)}, device);
        auto beta = Tensor<float>::from(b, {static_cast<std::int64_t>(s.cols)}, device);
        for (Variant v : {Variant::layer, Variant::layer_affine, Variant::rms, Variant::rms_gamma}) {
            SCOPED_TRACE(variant_name(v));
            Tensor<float> out = make_out();
            switch (v) {
                case Variant::layer: layer_norm(x, eps, out); break;
                case Variant::layer_affine: layer_norm(x, gamma, beta, eps, out); break;
                case Variant::rms: rms_norm(x, eps, out); break;
                case Variant::rms_gamma: rms_norm(x, gamma, eps, out); break;
            }
            bool const layer = v == Variant::layer || v == Variant::layer_affine;
            bool const affine = v == Variant::layer_affine || v == Variant::rms_gamma;
            auto const want =
                norm_ref(in, s.cols, layer, affine ? &g : nullptr, v == Variant::layer_affine ? &b : nullptr, eps);
            expect_close(out.to_vector(), want, 1e-6, layer ? 1e-6 : 1e-7, s.cols);
        }
    }
    void check_all(std::vector<float> const& in, Rows s) {
        Shape const shape{static_cast<std::int64_t>(s.rows), static_cast<std::int64_t>(s.cols)};
        check_all(Tensor<float>::from(in, shape, device), in, s, [&] { return poisoned(shape, device); });
    }
};

TEST_F(CudaNormalization, MatchesFloat64OnEveryLayout) {
    reset_stats();
    for (Rows s : shapes()) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(s.name() + " seed " + std::to_string(seed));
        check_all(random_floats(s.rows * s.cols, seed, -4.0f, 4.0f), s);
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

// A mean far larger than the spread: a one-pass E[x²] - E[x]² would lose most of the variance.
TEST_F(CudaNormalization, RowsOffsetBy1000) {
    reset_stats();
    for (Rows s : {Rows{3, 7}, Rows{64, 1000}, Rows{256, 4096}, Rows{1, 100000}, Rows{1000, 8}}) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(s.name() + " seed " + std::to_string(seed));
        check_all(random_floats(s.rows * s.cols, seed, 996.0f, 1004.0f), s);
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

// Views 4 bytes past a 16-byte boundary: the one-float kernels (gamma and beta stay aligned).
TEST_F(CudaNormalization, MisalignedViews) {
    reset_stats();
    for (Rows s : {Rows{64, 1000}, Rows{300, 8}, Rows{7, 4096}, Rows{2, 40000}}) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(s.name() + " seed " + std::to_string(seed));
        std::size_t const n = s.rows * s.cols;
        auto const in = random_floats(n, seed, 40.0f, 60.0f);
        std::vector<float> padded(n + 1, 0.5f);
        std::copy(in.begin(), in.end(), padded.begin() + 1);
        std::vector<std::int64_t> const dims{static_cast<std::int64_t>(s.rows), static_cast<std::int64_t>(s.cols)};
        auto const total = static_cast<std::int64_t>(n + 1);
        auto x = Tensor<float>::from(padded, {total}, device).slice(1, total).reshape(dims);
        check_all(x, in, s, [&] { return poisoned({total}, device).slice(1, total).reshape(dims); });
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

TEST_F(CudaNormalization, InPlace) {
    reset_stats();
    for (Rows s : {Rows{3, 7}, Rows{64, 1000}, Rows{16, 4096}, Rows{2, 100000}}) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(s.name() + " seed " + std::to_string(seed));
        auto const in = random_floats(s.rows * s.cols, seed, -4.0f, 4.0f);
        auto const g = random_floats(s.cols, seed + 1, 0.5f, 1.5f);
        auto const b = random_floats(s.cols, seed + 2, -1.0f, 1.0f);
        Shape const shape{static_cast<std::int64_t>(s.rows), static_cast<std::int64_t>(s.cols)};
        auto gamma = Tensor<float>::from(g, {static_cast<std::int64_t>(s.cols)}, device);
        auto beta = Tensor<float>::from(b, {static_cast<std::int64_t>(s.cols)}, device);
        auto x = Tensor<float>::from(in, shape, device);
        layer_norm(x, gamma, beta, eps, x);
        expect_close(x.to_vector(), norm_ref(in, s.cols, true, &g, &b, eps), 1e-6, 1e-6, s.cols);
        auto y = Tensor<float>::from(in, shape, device);
        rms_norm(y, gamma, eps, y);
        expect_close(y.to_vector(), norm_ref(in, s.cols, false, &g, nullptr, eps), 1e-6, 1e-7, s.cols);
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

// Fixed reduction order, no atomics: the same bits every run.
TEST_F(CudaNormalization, Deterministic) {
    reset_stats();
    for (Rows s : {Rows{4096, 4096}, Rows{4, 100000}, Rows{100000, 8}}) {
        SCOPED_TRACE(s.name());
        Shape const shape{static_cast<std::int64_t>(s.rows), static_cast<std::int64_t>(s.cols)};
        auto x = Tensor<float>::from(random_floats(s.rows * s.cols, fresh_seed(), -4.0f, 4.0f), shape, device);
        auto first = poisoned(shape, device), second = poisoned(shape, device);
        layer_norm(x, eps, first);
        layer_norm(x, eps, second);
        EXPECT_TRUE(first.to_vector() == second.to_vector()) << "layer_norm differs between two runs";
        rms_norm(x, eps, first);
        rms_norm(x, eps, second);
        EXPECT_TRUE(first.to_vector() == second.to_vector()) << "rms_norm differs between two runs";
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

}  // namespace
}  // namespace rayo::test
