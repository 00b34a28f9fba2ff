// Block quants: the stored GGUF test vectors (tests/data/*_seed1.bin, made with ggml's reference
// algorithms) are reproduced bit for bit on every CPU instruction set; the vectorised q8_k
// quantizer and the dequantizers equal the scalar reference (src/quant/) on fresh data; round-trip
// accuracy; shape errors; threading does not change a byte.
#include "support/test_support.hpp"

#include <rayo/quant.hpp>

#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "quant/reference_quantizer.hpp"

#ifndef RAYO_TEST_DATA_DIR
#error "RAYO_TEST_DATA_DIR must name tests/data"
#endif

namespace rayo::test {
namespace {

namespace ref = rayo::quant::reference;

// ---- test vectors -----------------------------------------------------------------------------

template <QuantBlock B>
constexpr char const* type_name() {
    if constexpr (std::same_as<B, q4_k>)
        return "q4_k";
    else if constexpr (std::same_as<B, q6_k>)
        return "q6_k";
    else if constexpr (std::same_as<B, q8_0>)
        return "q8_0";
    else if constexpr (std::same_as<B, q4_0>)
        return "q4_0";
    else if constexpr (std::same_as<B, q5_k>)
        return "q5_k";
    else
        return "q8_k";
}
// The header's type field: 0 q4_k, 1 q6_k, 2 q8_k, 3 q8_0, 4 q4_0, 5 q5_k.
template <QuantBlock B>
constexpr std::uint32_t type_code() {
    if constexpr (std::same_as<B, q4_k>)
        return 0;
    else if constexpr (std::same_as<B, q6_k>)
        return 1;
    else if constexpr (std::same_as<B, q8_0>)
        return 3;
    else if constexpr (std::same_as<B, q4_0>)
        return 4;
    else if constexpr (std::same_as<B, q5_k>)
        return 5;
    else
        return 2;
}

template <QuantBlock B>
struct Vectors {
    std::size_t rows = 0, cols = 0;
    std::vector<float> input;
    std::vector<B> blocks;
    std::vector<float> dequantized;
};

// u32 magic "RYQV", version 1, type, rows, cols, block_bytes; f32 input; blocks; f32 dequantized.
template <QuantBlock B>
Vectors<B> load_vectors() {
    std::string const path = std::string(RAYO_TEST_DATA_DIR) + "/" + type_name<B>() + "_seed1.bin";
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::vector<char> const bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::uint32_t header[6];
    if (bytes.size() < sizeof header) throw std::runtime_error(path + ": truncated header");
    std::memcpy(header, bytes.data(), sizeof header);
    if (header[0] != 0x56515952u || header[1] != 1 || header[2] != type_code<B>() || header[5] != sizeof(B))
        throw std::runtime_error(path + ": unexpected header");
    Vectors<B> v;
    v.rows = header[3];
    v.cols = header[4];
    std::size_t const n = v.rows * v.cols, nb = n / block_values_of<B>;
    if (bytes.size() != sizeof header + 2 * n * sizeof(float) + nb * sizeof(B))
        throw std::runtime_error(path + ": size does not match the header");
    v.input.resize(n);
    v.blocks.resize(nb);
    v.dequantized.resize(n);
    char const* p = bytes.data() + sizeof header;
    std::memcpy(v.input.data(), p, n * sizeof(float));
    p += n * sizeof(float);
    std::memcpy(static_cast<void*>(v.blocks.data()), p, nb * sizeof(B));
    p += nb * sizeof(B);
    std::memcpy(v.dequantized.data(), p, n * sizeof(float));
    return v;
}

template <QuantBlock B>
bool same_bytes(B const& a, B const& b) {
    return std::memcmp(&a, &b, sizeof(B)) == 0;
}

// ‖x − deq(block)‖ over one block's values.
template <QuantBlock B>
double block_error(float const* x, B const& block) {
    float y[block_values_of<B>];
    ref::dequantize<B>(&block, y, 1);
    double e = 0;
    for (std::size_t i = 0; i < block_values_of<B>; ++i) e += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    return std::sqrt(e);
}

// Blocks that differ from `want`: listed on stdout by row and block, and each one's
// reconstruction error must be within 0.1% of the reference block's. Returns how many differ.
template <QuantBlock B>
std::size_t check_blocks(std::vector<B> const& got, std::vector<B> const& want, std::vector<float> const& x,
                         std::size_t cols, std::string const& what) {
    std::size_t const per_row = cols / block_values_of<B>;
    std::size_t differ = 0;
    std::ostringstream list;
    for (std::size_t b = 0; b < want.size(); ++b) {
        if (same_bytes(got[b], want[b])) continue;
        ++differ;
        float const* xb = x.data() + b * block_values_of<B>;
        double const e_got = block_error(xb, got[b]), e_want = block_error(xb, want[b]);
        list << " (row " << b / per_row << ", block " << b % per_row << ": error " << e_got << " vs " << e_want << ")";
        EXPECT_LE(e_got, e_want * 1.001 + 1e-30) << what << ": block " << b << " (row " << b / per_row << ", block "
                                                 << b % per_row << ") reconstructs worse than the reference's";
    }
    if (differ)
        std::cout << "[ quant    ] " << what << ": " << differ << " of " << want.size()
                  << " blocks differ from the reference bytes:" << list.str() << '\n';
    return differ;
}

std::size_t count_bit_differences(std::vector<float> const& got, std::vector<float> const& want) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < want.size(); ++i) n += std::memcmp(&got[i], &want[i], sizeof(float)) != 0;
    return n;
}

// The documented rows: normal, uniform, outliers, all positive, all negative, mostly zero, tiny,
// large, constant, weight-like (4 rows each).
std::vector<float> awkward_rows(std::size_t rows_per_kind, std::size_t cols, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> x;
    for (int kind = 0; kind < 10; ++kind)
        for (std::size_t r = 0; r < rows_per_kind; ++r)
            for (std::size_t c = 0; c < cols; ++c) {
                float v = normal(rng);
                switch (kind) {
                    case 1: v = uniform(rng); break;
                    case 2: v = (rng() % 64 == 0) ? 40.0f * v : v; break;
                    case 3: v = std::abs(v) + 0.1f; break;
                    case 4: v = -std::abs(v) - 0.1f; break;
                    case 5: v = (rng() % 16 == 0) ? v : 0.0f; break;
                    case 6: v *= 1e-6f; break;
                    case 7: v *= 1e4f; break;
                    case 8: v = 0.25f; break;
                    case 9: v *= 0.02f; break;
                    default: break;
                }
                x.push_back(v);
            }
    return x;
}

// ---- per-ISA tests ----------------------------------------------------------------------------

class QuantArchTest : public ::testing::TestWithParam<CpuArch> {};

template <QuantBlock B>
void dequantize_vectors_bit_for_bit(CpuArch arch) {
    SCOPED_TRACE(type_name<B>());
    ArchScope scope(arch);
    auto const v = load_vectors<B>();
    Shape const shape{static_cast<std::int64_t>(v.rows), static_cast<std::int64_t>(v.cols)};
    auto const q = Tensor<B>::from(std::span<B const>(v.blocks), shape);
    std::vector<float> const got = dequantize(q).to_vector();
    ASSERT_EQ(got.size(), v.dequantized.size());
    EXPECT_EQ(count_bit_differences(got, v.dequantized), 0u) << "values differ from the stored dequantization";
    // The scalar reference agrees with the stored floats too.
    std::vector<float> scalar(v.dequantized.size());
    ref::dequantize<B>(v.blocks.data(), scalar.data(), v.blocks.size());
    EXPECT_EQ(count_bit_differences(scalar, v.dequantized), 0u) << "the scalar reference differs";
}

TEST_P(QuantArchTest, DequantizeReproducesVectorsBitForBit) {
    dequantize_vectors_bit_for_bit<q4_k>(GetParam());
    dequantize_vectors_bit_for_bit<q6_k>(GetParam());
    dequantize_vectors_bit_for_bit<q8_k>(GetParam());
    dequantize_vectors_bit_for_bit<q8_0>(GetParam());
    dequantize_vectors_bit_for_bit<q4_0>(GetParam());
    dequantize_vectors_bit_for_bit<q5_k>(GetParam());
}

template <QuantBlock B>
void quantize_vectors_byte_for_byte(CpuArch arch) {
    SCOPED_TRACE(type_name<B>());
    ArchScope scope(arch);
    auto const v = load_vectors<B>();
    Shape const shape{static_cast<std::int64_t>(v.rows), static_cast<std::int64_t>(v.cols)};
    std::vector<B> const got = quantize<B>(Tensor<float>::from(std::span<float const>(v.input), shape)).to_vector();
    ASSERT_EQ(got.size(), v.blocks.size());
    std::size_t const differ =
        check_blocks(got, v.blocks, v.input, v.cols, std::string(type_name<B>()) + " on " + arch_id(arch));
    // q8_k, q8_0 and q4_0 have no search: their quantizers reproduce the reference's arithmetic
    // (a product and a rounding per value), so they must be exact everywhere. q4_k / q5_k / q6_k
    // follow ggml's f32 order (exact with this build's -ffp-contract=off); a compiler that evaluated
    // differently may change a few blocks, which check_blocks lists and holds to the reference's
    // reconstruction error within 0.1%.
    if constexpr (std::same_as<B, q8_k> || std::same_as<B, q8_0> || std::same_as<B, q4_0>) {
        EXPECT_EQ(differ, 0u);
    }
    ::testing::Test::RecordProperty(std::string(type_name<B>()) + "_blocks_differing_" + arch_id(arch),
                                    static_cast<int>(differ));
    std::vector<B> scalar(v.blocks.size());
    ref::quantize<B>(v.input.data(), scalar.data(), scalar.size());
    check_blocks(scalar, v.blocks, v.input, v.cols, std::string(type_name<B>()) + " scalar reference");
    // The backend's fast path and the scalar reference agree with each other in any case.
    for (std::size_t b = 0; b < got.size(); ++b) EXPECT_TRUE(same_bytes(got[b], scalar[b])) << "block " << b;
}

TEST_P(QuantArchTest, QuantizeReproducesVectorsByteForByte) {
    quantize_vectors_byte_for_byte<q4_k>(GetParam());
    quantize_vectors_byte_for_byte<q6_k>(GetParam());
    quantize_vectors_byte_for_byte<q8_k>(GetParam());
    quantize_vectors_byte_for_byte<q8_0>(GetParam());
    quantize_vectors_byte_for_byte<q4_0>(GetParam());
    quantize_vectors_byte_for_byte<q5_k>(GetParam());
}

// Blocks that exercise q8_k's corner cases, then random data of several scales.
std::vector<float> q8_k_cases(std::uint32_t seed) {
    std::vector<float> x;
    auto block = [&](auto&& f) {
        for (std::size_t i = 0; i < quant_block_values; ++i) x.push_back(f(i));
    };
    float const inf = std::numeric_limits<float>::infinity();
    float const nan = std::numeric_limits<float>::quiet_NaN();
    block([](std::size_t) { return 0.0f; });                                                   // all zero
    block([](std::size_t i) { return i % 2 ? -0.0f : 0.0f; });                                 // signed zeros
    block([](std::size_t i) { return i == 0 ? -127.0f : float(i % 200) - 99.5f; });            // iscale 1: ties
    block([](std::size_t i) { return i == 0 ? 127.0f : float(i % 254) * 0.5f - 63.5f; });      // iscale −1: ties
    block([](std::size_t i) { return i == 3 ? 2.0f : i == 7 ? -2.0f : std::sin(float(i)); });  // ±max: first wins
    block([](std::size_t i) { return i == 9 ? -2.0f : i == 70 ? 2.0f : std::cos(float(i)); });
    block([](std::size_t i) { return (i % 3 ? 1e-39f : -3e-39f) * float(i % 7); });        // subnormals
    block([](std::size_t i) { return i == 100 ? 2e-38f : 1e-38f * std::sin(float(i)); });  // iscale overflows
    block([&](std::size_t i) { return i == 17 ? inf : std::sin(float(i)); });              // an infinity
    block([&](std::size_t i) { return i == 5 ? nan : std::sin(float(i)); });               // a NaN
    block([](std::size_t i) { return i < 128 ? 1.0f : -1.0f; });
    block([](std::size_t i) { return 3e38f * std::sin(float(i)); });  // huge
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> exponent(-30, 30);
    for (int b = 0; b < 500; ++b) {
        float const scale = std::ldexp(1.0f, exponent(rng));
        bool const sparse = b % 5 == 0;
        block([&](std::size_t) { return sparse && rng() % 4 ? 0.0f : scale * normal(rng); });
    }
    return x;
}

TEST_P(QuantArchTest, VectorisedQ8KEqualsScalarReference) {
    ArchScope scope(GetParam());
    std::uint32_t const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::vector<float> const x = q8_k_cases(seed);
    std::size_t const blocks = x.size() / quant_block_values;
    std::vector<q8_k> want(blocks);
    ref::quantize<q8_k>(x.data(), want.data(), blocks);
    std::vector<q8_k> const got =
        quantize<q8_k>(Tensor<float>::from(std::span<float const>(x), Shape{static_cast<std::int64_t>(blocks), 256}))
            .to_vector();
    for (std::size_t b = 0; b < blocks; ++b) EXPECT_TRUE(same_bytes(got[b], want[b])) << "block " << b;
}

// Random blocks (every nibble / code pattern, random finite factors): the vector dequantizers
// equal the scalar reference bit for bit.
template <QuantBlock B>
std::vector<B> random_blocks(std::size_t count, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> factor(-4.0f, 4.0f);
    std::vector<B> blocks(count);
    for (auto& b : blocks) {
        auto* bytes = reinterpret_cast<unsigned char*>(&b);
        for (std::size_t i = 0; i < sizeof(B); ++i) bytes[i] = static_cast<unsigned char>(rng());
        if constexpr (std::same_as<B, q4_k> || std::same_as<B, q5_k>) {
            b.d = half(factor(rng));
            b.dmin = half(factor(rng));
        } else if constexpr (std::same_as<B, q6_k> || std::same_as<B, q8_0> || std::same_as<B, q4_0>) {
            b.d = half(factor(rng));
        } else {
            b.d = factor(rng) * 1e-2f;
        }
    }
    return blocks;
}

template <QuantBlock B>
void dequantize_equals_reference(CpuArch arch, std::uint32_t seed) {
    SCOPED_TRACE(type_name<B>());
    ArchScope scope(arch);
    auto const blocks = random_blocks<B>(300, seed);
    std::vector<float> want(blocks.size() * block_values_of<B>);
    ref::dequantize<B>(blocks.data(), want.data(), blocks.size());
    Shape const shape{3, static_cast<std::int64_t>(100 * block_values_of<B>)};
    auto const q = Tensor<B>::from(std::span<B const>(blocks), shape);
    EXPECT_EQ(count_bit_differences(dequantize(q).to_vector(), want), 0u);
}

TEST_P(QuantArchTest, VectorisedDequantizeEqualsScalarReference) {
    std::uint32_t const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    dequantize_equals_reference<q4_k>(GetParam(), seed);
    dequantize_equals_reference<q6_k>(GetParam(), seed + 1);
    dequantize_equals_reference<q8_k>(GetParam(), seed + 2);
    dequantize_equals_reference<q8_0>(GetParam(), seed + 3);
    dequantize_equals_reference<q4_0>(GetParam(), seed + 4);
    dequantize_equals_reference<q5_k>(GetParam(), seed + 5);
}

// linear with weights of arbitrary bytes (every code pattern: q8_0's −128, all of q5_k's high bits)
// against float64 on the dequantized weights: the integer dot products (1 and 5 rows of x) and the
// GEMM over decoded panels (20 rows), rows of a multiple of 256 values and, for blocks of 32, not.
template <QuantBlock B>
void linear_of_arbitrary_blocks(CpuArch arch, std::uint32_t seed) {
    SCOPED_TRACE(type_name<B>());
    ArchScope scope(arch);
    std::size_t const out = 37;
    for (std::size_t k : {std::size_t{512}, std::size_t{2304}, std::size_t{96}, std::size_t{800}}) {
        if (k % block_values_of<B> != 0) continue;
        auto const blocks = random_blocks<B>(out * k / block_values_of<B>, seed + static_cast<std::uint32_t>(k));
        auto const cols = static_cast<std::int64_t>(k);
        auto const w = Tensor<B>::from(std::span<B const>(blocks), Shape{static_cast<std::int64_t>(out), cols});
        std::vector<float> const wv = dequantize(w).to_vector();
        for (std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{20}}) {
            SCOPED_TRACE("n " + std::to_string(n) + ", k " + std::to_string(k));
            std::vector<float> const x = activation_like(n, k, seed + static_cast<std::uint32_t>(n));
            auto const xt = Tensor<float>::from(std::span<float const>(x), Shape{static_cast<std::int64_t>(n), cols});
            std::vector<float> const y = linear(xt, w).to_vector();
            std::vector<double> want(n * out);
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = 0; j < out; ++j) {
                    double acc = 0;
                    for (std::size_t p = 0; p < k; ++p) acc += double(x[i * k + p]) * wv[j * k + p];
                    want[i * out + j] = acc;
                }
            EXPECT_LT(relative_l2(y, want), 1e-3);
        }
    }
}

TEST_P(QuantArchTest, LinearOfArbitraryBlocksMatchesTheDequantizedProduct) {
    std::uint32_t const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    linear_of_arbitrary_blocks<q8_0>(GetParam(), seed);
    linear_of_arbitrary_blocks<q4_0>(GetParam(), seed + 1);
    linear_of_arbitrary_blocks<q5_k>(GetParam(), seed + 2);
    linear_of_arbitrary_blocks<q4_k>(GetParam(), seed + 3);
    linear_of_arbitrary_blocks<q6_k>(GetParam(), seed + 4);
}

// The awkward row kinds on fresh data: the fast path equals the reference on every ISA.
template <QuantBlock B>
void quantize_equals_reference(CpuArch arch, std::vector<float> const& x, std::size_t cols) {
    SCOPED_TRACE(type_name<B>());
    ArchScope scope(arch);
    std::size_t const rows = x.size() / cols;
    std::vector<B> want(x.size() / block_values_of<B>);
    ref::quantize<B>(x.data(), want.data(), want.size());
    auto const got = quantize<B>(Tensor<float>::from(std::span<float const>(x), Shape{static_cast<std::int64_t>(rows),
                                                                                      static_cast<std::int64_t>(cols)}))
                         .to_vector();
    EXPECT_EQ(check_blocks(got, want, x, cols, std::string(type_name<B>()) + " on " + arch_id(arch)), 0u);
}

TEST_P(QuantArchTest, QuantizeEqualsScalarReferenceOnFreshRows) {
    std::uint32_t const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::vector<float> const x = awkward_rows(2, 512, seed);
    quantize_equals_reference<q4_k>(GetParam(), x, 512);
    quantize_equals_reference<q6_k>(GetParam(), x, 512);
    quantize_equals_reference<q8_k>(GetParam(), x, 512);
    quantize_equals_reference<q8_0>(GetParam(), x, 512);
    quantize_equals_reference<q4_0>(GetParam(), x, 512);
    quantize_equals_reference<q5_k>(GetParam(), x, 512);
}

// Relative L2 error ‖x − deq(q(x))‖/‖x‖ on N(0, 1) data.
template <QuantBlock B>
double round_trip_error(std::vector<float> const& x) {
    auto const t =
        Tensor<float>::from(std::span<float const>(x), Shape{static_cast<std::int64_t>(x.size() / 1024), 1024});
    std::vector<float> const y = dequantize(quantize<B>(t)).to_vector();
    std::vector<double> const want(x.begin(), x.end());
    return relative_l2(y, want);
}

TEST_P(QuantArchTest, RoundTripErrorOnNormalData) {
    ArchScope scope(GetParam());
    std::uint32_t const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(64 * 1024);
    for (auto& v : x) v = normal(rng);
    double const e4 = round_trip_error<q4_k>(x), e6 = round_trip_error<q6_k>(x), e8 = round_trip_error<q8_k>(x);
    double const e80 = round_trip_error<q8_0>(x), e40 = round_trip_error<q4_0>(x), e5 = round_trip_error<q5_k>(x);
    std::cout << "[ quant    ] round-trip error on N(0,1): q4_k " << e4 << ", q6_k " << e6 << ", q8_k " << e8
              << ", q8_0 " << e80 << ", q4_0 " << e40 << ", q5_k " << e5 << '\n';
    EXPECT_LT(e4, 0.08);
    EXPECT_GT(e4, 0.05);
    EXPECT_LT(e6, 0.02);
    EXPECT_GT(e6, 0.012);
    EXPECT_LT(e8, 0.008);
    EXPECT_GT(e8, 0.004);
    EXPECT_LT(e80, 0.006);
    EXPECT_GT(e80, 0.004);
    EXPECT_LT(e40, 0.095);
    EXPECT_GT(e40, 0.075);
    EXPECT_LT(e5, 0.04);
    EXPECT_GT(e5, 0.03);
}

INSTANTIATE_TEST_SUITE_P(Arch, QuantArchTest, ::testing::ValuesIn(archs()), ArchParamName());

// ---- API ---------------------------------------------------------------------------------------

template <class F>
void expect_shape_error_mentioning(F&& f, std::string const& text) {
    try {
        f();
        ADD_FAILURE() << "no ShapeError";
    } catch (ShapeError const& e) {
        EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
}

TEST(QuantApi, LastDimensionMustBeAMultipleOf256) {
    auto const bad = Tensor<float>::zeros(Shape{4, 100});
    expect_shape_error_mentioning([&] { (void)quantize<q4_k>(bad); }, "multiple of 256");
    expect_shape_error_mentioning([&] { (void)quantize<q6_k>(bad); }, "multiple of 256");
    expect_shape_error_mentioning([&] { (void)quantize<q8_k>(bad); }, "multiple of 256");
    expect_shape_error_mentioning(
        [&] {
            (void)quantize<q4_k>(Tensor<float>::zeros(Shape{256, 3}));
        },
        "multiple of 256");
    expect_shape_error_mentioning([&] { (void)quantize<q4_k>(Tensor<float>::zeros(Shape{})); }, "multiple of 256");
    expect_shape_error_mentioning([] { (void)Tensor<q6_k>::empty(Shape{2, 300}); }, "multiple of 256");
    expect_shape_error_mentioning([&] { (void)quantize<q5_k>(bad); }, "multiple of 256");
    expect_shape_error_mentioning([&] { (void)quantize<q5_k>(Tensor<float>::zeros(Shape{2, 96})); }, "multiple of 256");
    expect_shape_error_mentioning([] { (void)Tensor<q5_k>::empty(Shape{2, 32}); }, "multiple of 256");
}

TEST(QuantApi, LastDimensionMustBeAMultipleOf32ForQ8_0AndQ4_0) {
    auto const bad = Tensor<float>::zeros(Shape{4, 100});
    expect_shape_error_mentioning([&] { (void)quantize<q8_0>(bad); }, "multiple of 32");
    expect_shape_error_mentioning([&] { (void)quantize<q4_0>(bad); }, "multiple of 32");
    expect_shape_error_mentioning([&] { (void)quantize<q8_0>(Tensor<float>::zeros(Shape{32, 3})); }, "multiple of 32");
    expect_shape_error_mentioning([&] { (void)quantize<q4_0>(Tensor<float>::zeros(Shape{})); }, "multiple of 32");
    expect_shape_error_mentioning([] { (void)Tensor<q8_0>::empty(Shape{2, 48}); }, "multiple of 32");
    expect_shape_error_mentioning([] { (void)Tensor<q4_0>::empty(Shape{2, 16}); }, "multiple of 32");
    // 32 values are whole blocks of these two: a 96-value row is three of them.
    auto const x = Tensor<float>::from(std::span<float const>(random_floats(2 * 96, 5)), Shape{2, 96});
    EXPECT_EQ(quantize<q8_0>(x).to_vector().size(), 6u);
    EXPECT_EQ(quantize<q4_0>(x).to_vector().size(), 6u);
    EXPECT_EQ(dequantize(quantize<q4_0>(x)).shape(), x.shape());
}

TEST(QuantApi, OutFormChecksShapesBeforeWriting) {
    auto const x = Tensor<float>::from(std::span<float const>(random_floats(1024, 7)), Shape{2, 512});
    auto const wrong = Tensor<q4_k>::zeros(Shape{4, 256});
    EXPECT_THROW(quantize_into(x, wrong), ShapeError);
    for (auto const& b : wrong.to_vector()) EXPECT_EQ(b.d.bits, 0) << "out was written";
    auto const q = quantize<q4_k>(x);
    auto out = Tensor<float>::full(Shape{2, 256}, poison);
    EXPECT_THROW(dequantize_into(q, out), ShapeError);
    for (float v : out.to_vector()) EXPECT_EQ(v, poison);
    // The right shapes write every value.
    auto const q2 = Tensor<q4_k>::empty(Shape{2, 512});
    quantize_into(x, q2);
    auto y = Tensor<float>::full(Shape{2, 512}, poison);
    dequantize_into(q2, y);
    for (float v : y.to_vector()) EXPECT_NE(v, poison);
    EXPECT_EQ(q2.shape(), (Shape{2, 512}));
}

TEST(QuantApi, EmptyAndThreeDimensionalTensors) {
    auto const empty = quantize<q8_k>(Tensor<float>::zeros(Shape{0, 256}));
    EXPECT_EQ(empty.numel(), 0u);
    EXPECT_EQ(dequantize(empty).shape(), (Shape{0, 256}));
    auto const x = Tensor<float>::from(std::span<float const>(random_floats(2 * 3 * 512, 11)), Shape{2, 3, 512});
    auto const q = quantize<q6_k>(x);
    EXPECT_EQ(q.shape(), x.shape());
    EXPECT_EQ(q.to_vector().size(), 12u);
    EXPECT_EQ(dequantize(q).shape(), x.shape());
}

// With a progress callback the work goes in row chunks: the same blocks, on every device, and
// reports from 0 to the value count that never decrease; a throwing callback stops it.
TEST(QuantApi, QuantizeWithProgressReportsAndGivesTheSameBlocks) {
    std::uint32_t const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto const host = random_floats(300 * 512, seed);
    for (Device device : Device::all()) {
        SCOPED_TRACE(device.id());
        auto const x = Tensor<float>::from(std::span<float const>(host), Shape{3, 100, 512}, device);
        std::vector<std::pair<std::uint64_t, std::uint64_t>> reports;
        auto const q =
            quantize<q8_k>(x, [&](std::uint64_t done, std::uint64_t total) { reports.emplace_back(done, total); });
        auto const whole = quantize<q8_k>(x).to_vector(), chunked = q.to_vector();
        ASSERT_EQ(whole.size(), chunked.size());
        for (std::size_t b = 0; b < whole.size(); ++b) ASSERT_TRUE(same_bytes(whole[b], chunked[b])) << "block " << b;
        ASSERT_GE(reports.size(), 3u);
        EXPECT_EQ(reports.front(), std::make_pair(std::uint64_t{0}, std::uint64_t{host.size()}));
        EXPECT_EQ(reports.back(), std::make_pair(std::uint64_t{host.size()}, std::uint64_t{host.size()}));
        EXPECT_TRUE(std::is_sorted(reports.begin(), reports.end()));
    }
    auto const x = Tensor<float>::from(std::span<float const>(host), Shape{300, 512});
    int calls = 0;
    EXPECT_THROW(quantize<q4_k>(x,
                                [&](std::uint64_t done, std::uint64_t) {
                                    if (done > 0 && ++calls == 2) throw std::runtime_error("stop");
                                }),
                 std::runtime_error);
    EXPECT_EQ(calls, 2);
    std::vector<std::uint64_t> empty_reports;
    (void)quantize<q6_k>(Tensor<float>::zeros(Shape{0, 256}),
                         [&](std::uint64_t done, std::uint64_t) { empty_reports.push_back(done); });
    EXPECT_EQ(empty_reports, std::vector<std::uint64_t>{0});
}

// 512 x 4096: the block split over the pool changes nothing.
TEST(QuantApi, LargeTensorMultiThreadedEqualsSingleThreaded) {
    std::uint32_t const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> host(512 * 4096);
    for (auto& v : host) v = normal(rng);
    auto const x = Tensor<float>::from(std::span<float const>(host), Shape{512, 4096});
    std::size_t const saved = num_threads();
    auto run = [&](auto tag, std::size_t threads) {
        using B = decltype(tag);
        set_num_threads(threads);
        auto const q = quantize<B>(x);
        auto result = std::make_pair(q.to_vector(), dequantize(q).to_vector());
        set_num_threads(saved);
        return result;
    };
    std::size_t const many = std::max<std::size_t>(4, saved);
    auto check = [&](auto tag) {
        using B = decltype(tag);
        SCOPED_TRACE(type_name<B>());
        auto const one = run(B{}, 1), all = run(B{}, many);
        ASSERT_EQ(one.first.size(), all.first.size());
        std::size_t differ = 0;
        for (std::size_t b = 0; b < one.first.size(); ++b) differ += !same_bytes(one.first[b], all.first[b]);
        EXPECT_EQ(differ, 0u);
        EXPECT_EQ(count_bit_differences(all.second, one.second), 0u);
    };
    check(q4_k{});
    check(q6_k{});
    check(q8_k{});
    check(q8_0{});
    check(q4_0{});
    check(q5_k{});
}

}  // namespace
}  // namespace rayo::test
