// softmax and log_softmax on a CUDA device against float64 references, on fresh random data with
// poisoned outputs: short rows (a group of lanes per row), rows held by a block in registers, rows
// long enough for the looping kernel, views that are not 16-byte aligned (the one-float path),
// rows offset by +1000, rows with -inf entries, and in place. No op may fall back to the CPU.
//
// Tolerances, |got - want| <= rel·|want| + abs against the float64 formula:
//   softmax      rel 4e-6 (~34 ulp), abs 1e-37. Expected error <= ~1e-6: e^(x - max) ~3 ulp
//                (ex2.approx, 2 ulp, on an argument carried in two parts), the f32 sum over a tree
//                of at most a few hundred terms per thread, then the correctly rounded reciprocal
//                and a product (1 ulp). Measured with a ±2-ulp ex2 model: <= 7.6e-7.
//   log_softmax  rel 1e-6, abs 4e-6: x - (max + log sum) with max + log sum carried as two floats
//                (log: 0.85 ulp); the absolute part covers the sum's rounding seen through the log
//                and the ulp of log sum itself (|log sum| <= 12 here).
// Rows that are all -inf, or hold a NaN, are NaN throughout, as the float64 formula is.
#include "support/cuda_support.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>
#include "support/row_references.hpp"

namespace rayo::test {
namespace {

constexpr double softmax_rel = 4e-6, softmax_abs = 1e-37;
constexpr double log_softmax_rel = 1e-6, log_softmax_abs = 4e-6;
constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// Every element within rel·|want| + abs; NaN where want is NaN, the same infinity where want is
// infinite. Reports the worst element only (the big shapes have millions).
void expect_close(std::vector<float> const& got, std::vector<double> const& want, double rel, double abs,
                  std::size_t cols) {
    ASSERT_EQ(got.size(), want.size());
    double worst = 0;
    std::size_t at = 0, bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        double excess;
        if (std::isnan(want[i])) excess = std::isnan(got[i]) ? 0 : INFINITY;
        else if (std::isinf(want[i])) excess = double(got[i]) == want[i] ? 0 : INFINITY;
        else excess = std::abs(double(got[i]) - want[i]) / (rel * std::abs(want[i]) + abs);
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

// The shapes the issue names and one or more per kernel layout: 3x7, 5x31 and 1x1 take the
// one-float group kernels, 1000000x8 one lane per row, 64x1000 a warp per row, 4096x4096 and
// 3x32768 a block holding the row, 2x4097 a block holding an odd row, 1x100000 and 2x33333 the
// looping kernel.
std::vector<Rows> shapes() {
    return {{1, 1},      {3, 7},      {5, 31},   {64, 1000}, {4096, 4096}, {1, 100000},
            {1000000, 8}, {1000, 128}, {2, 4097}, {3, 32768}, {2, 33333}};
}

class CudaSoftmax : public CudaTest {
protected:
    // softmax or log_softmax of `in` (rows × cols) into a poisoned output on the device.
    std::vector<float> run(std::vector<float> const& in, Rows s, bool log) {
        Shape const shape{static_cast<std::int64_t>(s.rows), static_cast<std::int64_t>(s.cols)};
        auto x = Tensor<float>::from(in, shape, device);
        auto out = poisoned(shape, device);
        if (log) log_softmax(x, -1, out);
        else softmax(x, -1, out);
        return out.to_vector();
    }
    void check(std::vector<float> const& in, Rows s) {
        for (bool log : {false, true}) {
            SCOPED_TRACE(log ? "log_softmax" : "softmax");
            expect_close(run(in, s, log), softmax_ref(in, s.cols, log), log ? log_softmax_rel : softmax_rel,
                         log ? log_softmax_abs : softmax_abs, s.cols);
        }
    }
};

TEST_F(CudaSoftmax, MatchesFloat64OnEveryLayout) {
    reset_stats();
    for (Rows s : shapes()) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(s.name() + " seed " + std::to_string(seed));
        check(random_floats(s.rows * s.cols, seed, -30.0f, 30.0f), s);
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

TEST_F(CudaSoftmax, RowsOffsetBy1000AndRowsWithMinusInfinity) {
    reset_stats();
    for (Rows s : {Rows{5, 31}, Rows{64, 1000}, Rows{256, 4096}, Rows{2, 100000}, Rows{1000, 8}}) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(s.name() + " seed " + std::to_string(seed));
        // Without the maximum subtracted first, e^1000 overflows.
        check(random_floats(s.rows * s.cols, seed, 996.0f, 1004.0f), s);
        // Masked entries: every third element -inf (never a row's first, so no row is all -inf).
        auto masked = random_floats(s.rows * s.cols, seed + 1, -4.0f, 4.0f);
        for (std::size_t i = 0; i < masked.size(); i += 3)
            if (i % s.cols != 0) masked[i] = neg_inf;
        check(masked, s);
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

TEST_F(CudaSoftmax, AllMinusInfinityOrNaNRowsAreNaN) {
    reset_stats();
    for (std::size_t cols : {5u, 1000u, 4096u, 40000u}) {
        SCOPED_TRACE(std::to_string(cols) + " columns");
        auto in = random_floats(3 * cols, fresh_seed(), -4.0f, 4.0f);
        for (std::size_t c = 0; c < cols; ++c) in[c] = neg_inf;           // row 0: all -inf
        in[2 * cols + cols / 2] = std::numeric_limits<float>::quiet_NaN();  // row 2: one NaN
        check(in, {3, cols});
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

// Views 4 bytes past a 16-byte boundary: the same row lengths as above take the one-float kernels.
TEST_F(CudaSoftmax, MisalignedViews) {
    reset_stats();
    for (Rows s : {Rows{64, 1000}, Rows{300, 8}, Rows{7, 4096}, Rows{2, 40000}}) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(s.name() + " seed " + std::to_string(seed));
        std::size_t const n = s.rows * s.cols;
        auto const in = random_floats(n, seed, -30.0f, 30.0f);
        std::vector<float> padded(n + 1, 0.5f);
        std::copy(in.begin(), in.end(), padded.begin() + 1);
        std::vector<std::int64_t> const dims{static_cast<std::int64_t>(s.rows), static_cast<std::int64_t>(s.cols)};
        auto const total = static_cast<std::int64_t>(n + 1);
        auto x = Tensor<float>::from(padded, {total}, device).slice(1, total).reshape(dims);
        auto out = poisoned({total}, device).slice(1, total).reshape(dims);
        for (bool log : {false, true}) {
            SCOPED_TRACE(log ? "log_softmax" : "softmax");
            if (log) log_softmax(x, -1, out);
            else softmax(x, -1, out);
            expect_close(out.to_vector(), softmax_ref(in, s.cols, log), log ? log_softmax_rel : softmax_rel,
                         log ? log_softmax_abs : softmax_abs, s.cols);
        }
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

TEST_F(CudaSoftmax, InPlace) {
    reset_stats();
    for (Rows s : {Rows{3, 7}, Rows{64, 1000}, Rows{16, 4096}, Rows{2, 100000}}) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(s.name() + " seed " + std::to_string(seed));
        auto const in = random_floats(s.rows * s.cols, seed, -30.0f, 30.0f);
        Shape const shape{static_cast<std::int64_t>(s.rows), static_cast<std::int64_t>(s.cols)};
        for (bool log : {false, true}) {
            SCOPED_TRACE(log ? "log_softmax" : "softmax");
            auto x = Tensor<float>::from(in, shape, device);
            if (log) log_softmax(x, -1, x);
            else softmax(x, -1, x);
            expect_close(x.to_vector(), softmax_ref(in, s.cols, log), log ? log_softmax_rel : softmax_rel,
                         log ? log_softmax_abs : softmax_abs, s.cols);
        }
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

}  // namespace
}  // namespace rayo::test
