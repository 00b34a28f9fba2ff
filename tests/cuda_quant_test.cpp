// K-quants on a CUDA device: dequantize equals the CPU bit for bit (and the GGUF test vectors),
// q8_k quantization equals the CPU byte for byte (also for ±inf, NaN and extreme blocks), q4_k / q6_k
// quantization falls back to the CPU visibly, and linear with q4_k / q6_k weights meets 1e-3 relative
// error against float64 on the dequantized weights and unquantized x, on both paths (the integer
// GEMV up to 8 rows of x, the tensor-core GEMM beyond), with no CPU fallback.
#include "support/cuda_support.hpp"

#include <rayo/quant.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#ifndef RAYO_TEST_DATA_DIR
#error "RAYO_TEST_DATA_DIR must name tests/data"
#endif

namespace rayo::test {
namespace {

class CudaQuant : public CudaTest {};

template <QuantBlock B> constexpr char const* type_name() {
    if constexpr (std::same_as<B, q4_k>) return "q4_k";
    else if constexpr (std::same_as<B, q6_k>) return "q6_k";
    else return "q8_k";
}

// The GGUF test vectors (format in tests/quant_test.cpp): inputs, blocks, dequantized floats.
template <QuantBlock B>
struct Vectors {
    std::size_t rows = 0, cols = 0;
    std::vector<float> input;
    std::vector<B> blocks;
    std::vector<float> dequantized;
};

template <QuantBlock B>
Vectors<B> load_vectors() {
    std::string const path = std::string(RAYO_TEST_DATA_DIR) + "/" + type_name<B>() + "_seed1.bin";
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::vector<char> const bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::uint32_t header[6];
    std::memcpy(header, bytes.data(), sizeof header);
    Vectors<B> v;
    v.rows = header[3];
    v.cols = header[4];
    std::size_t const n = v.rows * v.cols, nb = n / quant_block_values;
    if (header[0] != 0x56515952u || header[5] != sizeof(B) ||
        bytes.size() != sizeof header + 2 * n * sizeof(float) + nb * sizeof(B))
        throw std::runtime_error(path + ": unexpected header or size");
    v.input.resize(n);
    v.blocks.resize(nb);
    v.dequantized.resize(n);
    char const* p = bytes.data() + sizeof header;
    std::memcpy(v.input.data(), p, n * sizeof(float));
    std::memcpy(static_cast<void*>(v.blocks.data()), p + n * sizeof(float), nb * sizeof(B));
    std::memcpy(v.dequantized.data(), p + n * sizeof(float) + nb * sizeof(B), n * sizeof(float));
    return v;
}

// Bit-for-bit equality (any NaN equals any NaN); reports the first few differences.
void expect_same_floats(std::vector<float> const& got, std::vector<float> const& want) {
    ASSERT_EQ(got.size(), want.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        bool const same = std::bit_cast<std::uint32_t>(got[i]) == std::bit_cast<std::uint32_t>(want[i]) ||
                          (std::isnan(got[i]) && std::isnan(want[i]));
        if (same) continue;
        if (differ++ < 8)
            ADD_FAILURE() << "value " << i << " (block " << i / quant_block_values << "): got " << got[i] << " (0x"
                          << std::hex << std::bit_cast<std::uint32_t>(got[i]) << "), want " << want[i] << " (0x"
                          << std::bit_cast<std::uint32_t>(want[i]) << std::dec << ")";
    }
    EXPECT_EQ(differ, 0u) << "values that differ";
}

// Blocks made by the CPU quantizer from normal data, then blocks of random bytes with a finite scale
// (every 6-bit scale / min code, every quant).
template <QuantBlock B>
std::vector<B> test_blocks(std::size_t quantized, std::size_t random, std::uint32_t seed) {
    std::vector<float> x(quantized * quant_block_values);
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto& v : x) v = normal(rng);
    std::vector<B> blocks = quantize<B>(Tensor<float>::from(x, {quantized, quant_block_values})).to_vector();
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
    for (std::size_t i = 0; i < random; ++i) {
        B b;
        auto* raw = reinterpret_cast<unsigned char*>(&b);
        for (std::size_t j = 0; j < sizeof(B); ++j) raw[j] = static_cast<unsigned char>(byte(rng));
        if constexpr (std::same_as<B, q4_k>) {
            b.d = half(scale(rng));
            b.dmin = half(scale(rng));
        } else if constexpr (std::same_as<B, q6_k>) {
            b.d = half(scale(rng));
        } else {
            b.d = scale(rng);
        }
        blocks.push_back(b);
    }
    return blocks;
}

template <QuantBlock B>
void expect_dequantize_matches_cpu(Device const& device) {
    SCOPED_TRACE(type_name<B>());
    auto const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    // 37 rows of 2 blocks: the last CTA of 8 blocks is partly idle; q6_k rows land at every 2 mod 4.
    std::vector<B> const blocks = test_blocks<B>(40, 34, seed);
    Shape const shape{blocks.size() / 2, 2 * quant_block_values};
    std::vector<float> const want = dequantize(Tensor<B>::from(blocks, shape)).to_vector();
    auto out = poisoned(shape, device);
    dequantize(Tensor<B>::from(blocks, shape, device), out);
    expect_same_floats(out.to_vector(), want);

    Vectors<B> const v = load_vectors<B>();
    expect_same_floats(dequantize(Tensor<B>::from(v.blocks, {v.rows, v.cols}, device)).to_vector(), v.dequantized);
}

TEST_F(CudaQuant, DequantizeEqualsTheCpuBitForBit) {
    reset_stats();
    expect_dequantize_matches_cpu<q4_k>(device);
    expect_dequantize_matches_cpu<q6_k>(device);
    expect_dequantize_matches_cpu<q8_k>(device);
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

TEST_F(CudaQuant, Q8kQuantizationEqualsTheCpuByteForByte) {
    auto const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<std::vector<float>> rows;
    auto row = [&](float scale) {
        std::vector<float> r(quant_block_values);
        for (auto& v : r) v = scale * normal(rng);
        return r;
    };
    for (int i = 0; i < 40; ++i) rows.push_back(row(1.0f));
    {   // ±max in one block: the first in index order sets the sign
        auto r = row(1.0f);
        r[7] = -9.0f;
        r[100] = 9.0f;
        rows.push_back(r);
        r = row(1.0f);
        r[3] = 9.0f;
        r[200] = -9.0f;
        rows.push_back(r);
    }
    {   // exact ties at .5 after scaling
        auto r = row(1.0f);
        for (auto& v : r) v = std::round(v * 4.0f) / 2.0f;
        r[0] = 63.5f;
        rows.push_back(r);
    }
    rows.push_back(std::vector<float>(quant_block_values, 0.0f));  // all zero
    rows.push_back(std::vector<float>(quant_block_values, 3.0f));  // constant
    rows.push_back(row(1e-38f));                                    // iscale overflows to -inf
    rows.push_back(row(1e30f));                                     // huge
    {   // subnormals and signed zeros
        auto r = row(1e-40f);
        r[11] = 0.0f;
        r[12] = -0.0f;
        rows.push_back(r);
    }
    std::vector<float> x;
    for (auto const& r : rows) x.insert(x.end(), r.begin(), r.end());
    Shape const shape{rows.size(), quant_block_values};
    std::vector<q8_k> const want = quantize<q8_k>(Tensor<float>::from(x, shape)).to_vector();
    reset_stats();
    std::vector<q8_k> const got = quantize<q8_k>(Tensor<float>::from(x, shape, device)).to_vector();
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t b = 0; b < want.size(); ++b)
        EXPECT_EQ(std::memcmp(&got[b], &want[b], sizeof(q8_k)), 0)
            << "block " << b << ": d " << got[b].d << " vs " << want[b].d;

    Vectors<q8_k> const v = load_vectors<q8_k>();
    std::vector<q8_k> const stored = quantize<q8_k>(Tensor<float>::from(v.input, {v.rows, v.cols}, device)).to_vector();
    for (std::size_t b = 0; b < v.blocks.size(); ++b)
        EXPECT_EQ(std::memcmp(&stored[b], &v.blocks[b], sizeof(q8_k)), 0) << "test-vector block " << b;
}

// Infinities and NaNs: the reference reads the bits of NaN products as integers; the device
// reproduces x86's NaNs (a NaN input's own bits, else the default NaN) so the bytes match.
TEST_F(CudaQuant, Q8kQuantizationOfNonFiniteValuesEqualsTheCpu) {
    std::vector<float> x;
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto block = [&](std::initializer_list<std::pair<std::size_t, float>> specials) {
        std::vector<float> r(quant_block_values);
        for (auto& v : r) v = normal(rng);
        for (auto [i, v] : specials) r[i] = v;
        x.insert(x.end(), r.begin(), r.end());
    };
    float const inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    block({{9, inf}});
    block({{9, -inf}, {10, nan}});
    block({{5, nan}});
    block({{0, std::bit_cast<float>(0x7f812345u)}});  // a signalling NaN with a payload
    {
        std::vector<float> r(quant_block_values, 0.0f);
        r[5] = nan;  // NaN among zeros: an all-zero block
        x.insert(x.end(), r.begin(), r.end());
    }
    Shape const shape{x.size() / quant_block_values, quant_block_values};
    std::vector<q8_k> const want = quantize<q8_k>(Tensor<float>::from(x, shape)).to_vector();
    std::vector<q8_k> const got = quantize<q8_k>(Tensor<float>::from(x, shape, device)).to_vector();
    for (std::size_t b = 0; b < want.size(); ++b)
        EXPECT_EQ(std::memcmp(&got[b], &want[b], sizeof(q8_k)), 0) << "block " << b;
}

TEST_F(CudaQuant, Q4kAndQ6kQuantizationFallBackToTheCpuVisibly) {
    std::vector<float> const x = random_floats(4 * quant_block_values, fresh_seed(), -1.0f, 1.0f);
    auto const host = Tensor<float>::from(x, {4, quant_block_values});
    auto const on_device = Tensor<float>::from(x, {4, quant_block_values}, device);
    reset_stats();
    std::vector<q4_k> const q4 = quantize<q4_k>(on_device).to_vector();
    std::vector<q6_k> const q6 = quantize<q6_k>(on_device).to_vector();
    EXPECT_EQ(stats().cpu_fallbacks, 2u);
    std::vector<q4_k> const q4_cpu = quantize<q4_k>(host).to_vector();
    std::vector<q6_k> const q6_cpu = quantize<q6_k>(host).to_vector();
    EXPECT_EQ(std::memcmp(q4.data(), q4_cpu.data(), q4.size() * sizeof(q4_k)), 0);
    EXPECT_EQ(std::memcmp(q6.data(), q6_cpu.data(), q6.size() * sizeof(q6_k)), 0);
}

// ---- linear -------------------------------------------------------------------------------------

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
    std::set<std::size_t> rows{0, 1, 7, 8, 9, 15, 16, 31, 32, 63, 64, 65, 127, 128, 129, 191, 255, 256, 257, m - 2, m - 1};
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
    double worst = 0;     // max |y − ref| / rms(ref)
};

template <QuantBlock W>
LinearError linear_error(Device const& device, std::size_t m, std::size_t n, std::size_t k, std::size_t x_row_offset = 0,
                         std::size_t w_row_offset = 0) {
    Weights<W> const& w = weights<W>(n + w_row_offset, k);
    std::vector<float> const xv = activation_like(m + x_row_offset, k, fresh_seed());
    auto x = Tensor<float>::from(xv, {m + x_row_offset, k}, device).slice(static_cast<std::int64_t>(x_row_offset),
                                                                           static_cast<std::int64_t>(m + x_row_offset));
    auto wq = Tensor<W>::from(w.blocks, {n + w_row_offset, k}, device)
                  .slice(static_cast<std::int64_t>(w_row_offset), static_cast<std::int64_t>(n + w_row_offset));
    auto out = poisoned({m, n}, device);
    linear(x, wq, out);
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

template <QuantBlock W>
void expect_linear_accuracy(Device const& device) {
    for (std::size_t k : {256, 4096})
        for (std::size_t n : {1, 7, 4096})
            for (std::size_t m : {1, 3, 8, 9, 64, 300}) {
                SCOPED_TRACE(std::string(type_name<W>()) + " m " + std::to_string(m) + " n " + std::to_string(n) + " k " +
                             std::to_string(k));
                reset_stats();
                LinearError const e = linear_error<W>(device, m, n, k);
                EXPECT_EQ(stats().cpu_fallbacks, 0u);
                // 1e-3 is what linear promises; measured ~1e-4 (GEMV, int8 main + residual) and ~3e-4 (GEMM, f16).
                EXPECT_LE(e.relative, 1e-3);
                // A missed or misplaced output shows as an error of the order of the outputs themselves.
                EXPECT_LE(e.worst, 3e-2);
            }
}

TEST_F(CudaQuant, LinearWithQ4kWeightsMeetsItsAccuracy) { expect_linear_accuracy<q4_k>(device); }
TEST_F(CudaQuant, LinearWithQ6kWeightsMeetsItsAccuracy) { expect_linear_accuracy<q6_k>(device); }

// Views that start inside a buffer: x rows and weight rows sliced off; q6_k rows of an odd number of
// blocks start at 2 mod 4 every other row (the GEMV and GEMM realign their words).
TEST_F(CudaQuant, LinearOnSlicedViews) {
    for (std::size_t m : {2, 33}) {
        SCOPED_TRACE("m " + std::to_string(m));
        reset_stats();
        EXPECT_LE(linear_error<q4_k>(device, m, 19, 768, 3, 5).relative, 1e-3);
        EXPECT_LE(linear_error<q6_k>(device, m, 19, 768, 3, 5).relative, 1e-3);
        EXPECT_LE(linear_error<q6_k>(device, m, 6, 256, 1, 1).relative, 1e-3);
        EXPECT_EQ(stats().cpu_fallbacks, 0u);
    }
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
            linear(x, wd, y0);
            linear(y0, wa, y1);
            linear(y1, wb, y2);
            linear(y2, wc, y1);  // overwrites what the GEMV before it reads
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
    for (int round = 0; round < 4; ++round) linear(x, w, y);
    EXPECT_LE(relative(y.to_vector(), want), 1e-3);
    for (int round = 1; round <= 3; ++round) {
        SCOPED_TRACE("x + " + std::to_string(round));
        add(x, 1.0f, x);
        auto const written = poisoned({1, rows}, device);
        linear(x, w, written);
        std::vector<double> shifted(xv.begin(), xv.end());
        for (double& v : shifted) v += round;
        EXPECT_LE(relative(written.to_vector(), matvec(a.values, shifted)), 1e-3);
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

// rayo::KQuantActivations::q8_k: the GEMV uses x's main q8_k only (ggml's precision).
TEST_F(CudaQuant, LinearWithSingleQ8kActivations) {
    using KQuantActivationScope = SettingScope<KQuantActivations, &kquant_activations, &set_kquant_activations>;
    KQuantActivationScope scope(KQuantActivations::q8_k);
    for (std::size_t m : {1, 5}) {
        SCOPED_TRACE("m " + std::to_string(m));
        reset_stats();
        EXPECT_LE(linear_error<q4_k>(device, m, 300, 1024).relative, 1e-1);
        EXPECT_LE(linear_error<q6_k>(device, m, 300, 1024).relative, 1e-1);
        EXPECT_EQ(stats().cpu_fallbacks, 0u);
    }
}

}  // namespace
}  // namespace rayo::test
