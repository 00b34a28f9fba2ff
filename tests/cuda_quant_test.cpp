// The CUDA backend's K-quant GEMVs on a device, where what the harness (tests/ops/) checks of their
// values is not enough: grids whose warps take several rows, records and rings at the limits of
// shared memory and the fallback past them; and, on sm_90, GEMVs that start while the kernel before
// them finishes (programmatic dependent launch) still seeing what that kernel wrote.
#include "support/cuda_support.hpp"

#include <rayo/quant.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace rayo::test {
namespace {

class CudaQuant : public CudaTest {};

// Weights quantized on the CPU once per (type, n, k) and kept with their dequantized values.
template <QuantBlock W>
struct Weights {
    std::vector<W> blocks;
    std::vector<float> values;
};

template <QuantBlock W>
Weights<W> const& weights(std::size_t n, std::size_t k) {
    static std::map<std::pair<std::size_t, std::size_t>, Weights<W>> cache;
    auto [it, fresh] = cache.try_emplace({n, k});
    if (fresh) {
        auto const w = quantize<W>(Tensor<float>::from(random_floats(n * k, fresh_seed(), -1.0f, 1.0f), {n, k}));
        it->second.blocks = w.to_vector();
        it->second.values = dequantize(w).to_vector();
    }
    return it->second;
}

// The rows of x whose outputs are checked: all of a few, else the tile edges and the last.
std::vector<std::size_t> checked_rows(std::size_t m) {
    if (m <= 16) {
        std::vector<std::size_t> all(m);
        for (std::size_t i = 0; i < m; ++i) all[i] = i;
        return all;
    }
    std::set<std::size_t> rows{0,  1,   7,   8,   9,   15,  16,  31,  32,    63,   64,
                               65, 127, 128, 129, 191, 255, 256, 257, m - 2, m - 1};
    std::vector<std::size_t> out;
    for (std::size_t r : rows)
        if (r < m) out.push_back(r);
    return out;
}

struct LinearError {
    // ‖y − ref‖ / ‖ref‖ over the checked rows, with ‖ref‖ at least its typical size (the root of
    // Σ (x_p·w_p)² per output): a single output's exact sum can cancel to almost nothing, and then
    // its relative error says nothing about linear (over 1e-3 for 2% of seeds with one output).
    double relative = 0;
    double worst = 0;  // max |y − ref| / rms(ref)
};

template <QuantBlock W>
LinearError linear_error(Device const& device, std::size_t m, std::size_t n, std::size_t k,
                         std::size_t x_row_offset = 0, std::size_t w_row_offset = 0) {
    Weights<W> const& w = weights<W>(n + w_row_offset, k);
    std::vector<float> const xv = activation_like(m + x_row_offset, k, fresh_seed());
    auto x = Tensor<float>::from(xv, {m + x_row_offset, k}, device)
                 .slice(static_cast<std::int64_t>(x_row_offset), static_cast<std::int64_t>(m + x_row_offset));
    auto wq = Tensor<W>::from(w.blocks, {n + w_row_offset, k}, device)
                  .slice(static_cast<std::int64_t>(w_row_offset), static_cast<std::int64_t>(n + w_row_offset));
    auto out = poisoned({m, n}, device);
    linear_into(x, wq, out);
    std::vector<float> const y = out.to_vector();
    LinearError e;
    double num = 0, den = 0, typical = 0, worst = 0;
    std::vector<std::size_t> const rows = checked_rows(m);
    std::vector<double> want(rows.size() * n);
    for (std::size_t ri = 0; ri < rows.size(); ++ri) {
        float const* xr = xv.data() + (rows[ri] + x_row_offset) * k;
        for (std::size_t j = 0; j < n; ++j) {
            float const* wr = w.values.data() + (j + w_row_offset) * k;
            double sum = 0;
            for (std::size_t p = 0; p < k; ++p) {
                double const product = static_cast<double>(xr[p]) * static_cast<double>(wr[p]);
                sum += product;
                typical += product * product;
            }
            want[ri * n + j] = sum;
            den += sum * sum;
        }
    }
    for (std::size_t ri = 0; ri < rows.size(); ++ri)
        for (std::size_t j = 0; j < n; ++j) {
            double const d = static_cast<double>(y[rows[ri] * n + j]) - want[ri * n + j];
            num += d * d;
            worst = std::max(worst, std::abs(d));
        }
    double const rms = std::sqrt(den / static_cast<double>(want.size()));
    e.relative = std::sqrt(num / std::max({den, typical, 1e-300}));
    e.worst = worst / std::max(rms, 1e-300);
    EXPECT_EQ(std::count_if(y.begin(), y.end(), [](float v) { return !std::isfinite(v) || v == poison; }), 0)
        << "outputs not written (poison) or not finite";
    return e;
}

// The fused GEMV (1-2 rows of x) strides its warps over the weight rows: more rows than the grid
// has warps (one 32-warp block per multiprocessor), and a k whose records (q6_k, k = 32768: 96 KiB)
// just fit in shared memory; beyond, the records kernel + GEMV. The streamed form's rings run on
// across a warp's rows (5000 and 9000 rows: some warps take two or three), with a partial last slot
// (q4_k, 9 blocks a row) and 16 warps where 32 warps' rings do not fit (k = 32768).
TEST_F(CudaQuant, FusedGemvStridesOverRowsAndFallsBackForLongRows) {
    for (std::size_t m : {1, 2}) {
        SCOPED_TRACE("m " + std::to_string(m));
        reset_stats();
        EXPECT_LE(linear_error<q4_k>(device, m, 9000, 256).relative, 1e-3);
        EXPECT_LE(linear_error<q6_k>(device, m, 9000, 256).relative, 1e-3);
        EXPECT_LE(linear_error<q4_k>(device, m, 5000, 2304).relative, 1e-3);
        EXPECT_LE(linear_error<q6_k>(device, m, 5000, 2048).relative, 1e-3);
        EXPECT_LE(linear_error<q6_k>(device, m, 9000, 4096).relative, 1e-3);
        EXPECT_LE(linear_error<q4_k>(device, m, 40, 256 * 128 / m).relative, 1e-3);
        EXPECT_LE(linear_error<q6_k>(device, m, 40, 256 * 128 / m).relative, 1e-3);
        EXPECT_LE(linear_error<q4_k>(device, m, 40, 256 * 160).relative, 1e-3);
        EXPECT_EQ(stats().cpu_fallbacks, 0u);
    }
}

// On sm_90 the one-row GEMV is launched to start while the kernel before it finishes
// (programmatic dependent launch): it must still read x only once that kernel has written it, and
// write its output only once that kernel has read it. Chains of GEMVs, queued back to back with no
// host wait: each reads the output of the one before, and the last overwrites the x of the one
// before it. The chain runs on weights just uploaded, and again once the host has waited for them,
// when each GEMV requests its first weights before its wait (the q4_k registers, the q6_k bulk
// copies at k = 2048 and the q6_k cp.async ring at k = 8192).
// w (rows of v.size() values) · v in float64.
std::vector<double> matvec(std::vector<float> const& w, std::vector<double> const& v) {
    std::vector<double> y(w.size() / v.size());
    for (std::size_t j = 0; j < y.size(); ++j)
        for (std::size_t p = 0; p < v.size(); ++p) y[j] += static_cast<double>(w[j * v.size() + p]) * v[p];
    return y;
}

// ‖y − want‖ / ‖want‖
double relative(std::vector<float> const& y, std::vector<double> const& want) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        num += (y[i] - want[i]) * (y[i] - want[i]);
        den += want[i] * want[i];
    }
    return std::sqrt(num / den);
}

TEST_F(CudaQuant, ChainedGemvsSeeEachOthersResults) {
    constexpr std::size_t k = 4096, mid = 2048, wide = 8192;
    Weights<q6_k> const& d = weights<q6_k>(k, wide);
    Weights<q4_k> const& a = weights<q4_k>(mid, k);
    Weights<q6_k> const& b = weights<q6_k>(k, mid);
    Weights<q4_k> const& c = weights<q4_k>(mid, k);
    std::vector<float> const xv = activation_like(1, wide, fresh_seed());
    std::vector<double> const want0 = matvec(d.values, std::vector<double>(xv.begin(), xv.end()));
    std::vector<double> const want1 = matvec(a.values, want0);
    std::vector<double> const want2 = matvec(b.values, want1);
    std::vector<double> const want3 = matvec(c.values, want2);
    for (bool settled : {false, true}) {
        SCOPED_TRACE(settled ? "weights waited for" : "weights just uploaded");
        auto const x = Tensor<float>::from(xv, {1, wide}, device);
        auto const wd = Tensor<q6_k>::from(d.blocks, {k, wide}, device);
        auto const wa = Tensor<q4_k>::from(a.blocks, {mid, k}, device);
        auto const wb = Tensor<q6_k>::from(b.blocks, {k, mid}, device);
        auto const wc = Tensor<q4_k>::from(c.blocks, {mid, k}, device);
        auto y0 = poisoned({1, k}, device);
        auto y1 = poisoned({1, mid}, device);
        auto y2 = poisoned({1, k}, device);
        if (settled) device.synchronize();
        reset_stats();
        for (int round = 0; round < 8; ++round) {
            linear_into(x, wd, y0);
            linear_into(y0, wa, y1);
            linear_into(y1, wb, y2);
            linear_into(y2, wc, y1);  // overwrites what the GEMV before it reads
        }
        EXPECT_EQ(stats().cpu_fallbacks, 0u);
        // Each GEMV adds ~1e-4 (x kept to ~15 bits); 1e-3 is what linear promises for one.
        EXPECT_LE(relative(y0.to_vector(), want0), 1e-3);
        EXPECT_LE(relative(y2.to_vector(), want2), 1e-3);
        EXPECT_LE(relative(y1.to_vector(), want3), 1e-3);
    }
}

// Many short rows: the GEMV's blocks share x, and (sm_90) read it before their wait once the host has
// waited since it was written. An op queued just before that writes x must still be seen.
TEST_F(CudaQuant, GemvsSharingXSeeTheXQueuedBeforeThem) {
    constexpr std::size_t rows = 12288, k = 1024;
    Weights<q4_k> const& a = weights<q4_k>(rows, k);
    std::vector<float> const xv = activation_like(1, k, fresh_seed());
    std::vector<double> const want = matvec(a.values, std::vector<double>(xv.begin(), xv.end()));
    auto const x = Tensor<float>::from(xv, {1, k}, device);
    auto const w = Tensor<q4_k>::from(a.blocks, {rows, k}, device);
    auto y = poisoned({1, rows}, device);
    device.synchronize();
    reset_stats();
    for (int round = 0; round < 4; ++round) linear_into(x, w, y);
    EXPECT_LE(relative(y.to_vector(), want), 1e-3);
    for (int round = 1; round <= 3; ++round) {
        SCOPED_TRACE("x + " + std::to_string(round));
        add_into(x, 1.0f, x);
        auto const written = poisoned({1, rows}, device);
        linear_into(x, w, written);
        std::vector<double> shifted(xv.begin(), xv.end());
        for (double& v : shifted) v += round;
        EXPECT_LE(relative(written.to_vector(), matvec(a.values, shifted)), 1e-3);
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

// q5_k, q8_0 and q4_0 weights on the device: every GEMV form the glue picks for them (q5_k fused,
// streamed and records; q8_0 / q4_0 records, with rows that end inside a 256-value record) and the
// decoded f16 GEMM, at decode shapes of a 7-8B model and past them, all native.
TEST_F(CudaQuant, Q5kQ80Q40LinearMatchesFloat64OnTheDevice) {
    reset_stats();
    for (std::size_t m : {1, 2, 5, 8, 40})
        for (std::size_t k : {4096, 14336}) {
            SCOPED_TRACE("m " + std::to_string(m) + " k " + std::to_string(k));
            EXPECT_LE(linear_error<q5_k>(device, m, 4096, k).relative, 1e-3) << "q5_k";
            EXPECT_LE(linear_error<q8_0>(device, m, 4096, k).relative, 1e-3) << "q8_0";
            EXPECT_LE(linear_error<q4_0>(device, m, 4096, k).relative, 1e-3) << "q4_0";
        }
    for (std::size_t m : {1, 3, 33}) {
        SCOPED_TRACE("m " + std::to_string(m) + ", k 4000 (125 blocks of 32)");
        EXPECT_LE(linear_error<q8_0>(device, m, 333, 4000).relative, 1e-3) << "q8_0";
        EXPECT_LE(linear_error<q4_0>(device, m, 333, 4000).relative, 1e-3) << "q4_0";
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

}  // namespace
}  // namespace rayo::test
