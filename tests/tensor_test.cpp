// Tensor and Device API, dtype conversions, shapes.
#include "support/test_support.hpp"

#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include <rayo/quant.hpp>

namespace rayo::test {
namespace {

// ---- dtypes: conversions are constexpr, round to nearest even, keep NaN/Inf ----------------------
static_assert(half(1.0f).bits == 0x3c00);
static_assert(half(65504.0f).bits == 0x7bff);
static_assert(half(65520.0f).bits == 0x7c00);  // halfway to the next binade rounds to Inf
static_assert(half(65519.996f).bits == 0x7bff);
static_assert(half(5.9604645e-8f).bits == 0x0001);  // smallest subnormal
static_assert(half(2.9802322e-8f).bits == 0x0000);  // exactly half of it: ties to even (0)
static_assert(half(8.940697e-8f).bits == 0x0002);   // 1.5 ulp: ties to even (2)
static_assert(float(half::from_bits(0x0001)) == 5.9604645e-8f);
static_assert(float(half::from_bits(0xfc00)) == -std::numeric_limits<float>::infinity());
static_assert(bfloat16(1.0f).bits == 0x3f80);
static_assert(bfloat16(std::bit_cast<float>(0x3f808000u)).bits == 0x3f80);  // tie, even stays
static_assert(bfloat16(std::bit_cast<float>(0x3f818000u)).bits == 0x3f82);  // tie, odd rounds up
static_assert(bfloat16(std::bit_cast<float>(0x7f7fffffu)).bits == 0x7f80);  // FLT_MAX rounds to Inf

TEST(DType, HalfRoundTripsEveryValueAndMatchesRoundToNearestEven) {
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        half const h = half::from_bits(static_cast<std::uint16_t>(b));
        float const f = h;
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(float(half(f))));
            continue;
        }
        ASSERT_EQ(half(f).bits, b) << std::hex << b;
    }
    // Random floats: the result is the nearest half, ties to even.
    std::mt19937 rng(fresh_seed());
    for (int i = 0; i < 200000; ++i) {
        float const f = std::bit_cast<float>(static_cast<std::uint32_t>(rng()) & 0x47ffffffu);  // |f| < 131072
        half const h(f);
        double const got = float(h);
        double const want = f;
        if (std::abs(want) >= 65520.0) {
            ASSERT_TRUE(std::isinf(got));
            continue;
        }
        // neighbours of h must not be closer
        for (int d : {-1, 1}) {
            auto const nb = static_cast<std::uint16_t>(h.bits + d);
            if ((nb & 0x7fff) > 0x7bff || ((nb ^ h.bits) & 0x8000)) continue;
            double const other = float(half::from_bits(nb));
            ASSERT_LE(std::abs(got - want), std::abs(other - want)) << f;
            if (std::abs(got - want) == std::abs(other - want)) {
                ASSERT_EQ(h.bits & 1, 0) << f;
            }
        }
    }
}

TEST(DType, SpecialValuesSurviveConversion) {
    float const inf = std::numeric_limits<float>::infinity();
    float const nan = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ(float(half(inf)), inf);
    EXPECT_EQ(float(half(-inf)), -inf);
    EXPECT_TRUE(std::isnan(float(half(nan))));
    EXPECT_TRUE(std::isnan(float(half(std::bit_cast<float>(0x7f800001u)))));  // signalling NaN payload in low bits only
    EXPECT_EQ(float(bfloat16(inf)), inf);
    EXPECT_TRUE(std::isnan(float(bfloat16(nan))));
    EXPECT_TRUE(std::isnan(float(bfloat16(std::bit_cast<float>(0x7f800001u)))));
    EXPECT_EQ(half(-0.0f).bits, 0x8000);
    EXPECT_EQ(bfloat16(-0.0f).bits, 0x8000);
}

// ---- tensors ----------------------------------------------------------------------------------
TEST(Tensor, FactoriesAndReadback) {
    std::vector<float> v{1, 2, 3, 4, 5, 6};
    auto t = Tensor<float>::from(v, {2, 3});
    EXPECT_EQ(t.shape(), (Shape{2, 3}));
    EXPECT_EQ(t.numel(), 6u);
    EXPECT_EQ(t.rank(), 2u);
    EXPECT_EQ(t.device(), Device::cpu());
    EXPECT_EQ(t.to_vector(), v);
    EXPECT_EQ(Tensor<float>::zeros({3}).to_vector(), std::vector<float>(3, 0.0f));
    EXPECT_EQ(Tensor<std::int32_t>::full({2, 2}, -7).to_vector(), std::vector<std::int32_t>(4, -7));
    EXPECT_EQ(Tensor<half>::full({5}, half(1.5f)).to_vector()[4].bits, half(1.5f).bits);
    EXPECT_EQ(Tensor<float>::full({}, 2.5f).item(), 2.5f);
    EXPECT_EQ(Tensor<float>::empty({4, 0}).numel(), 0u);
    auto one_d = Tensor<float>::from(v);
    EXPECT_EQ(one_d.shape(), (Shape{6}));
}

TEST(Tensor, CopiesAreExplicitAndViewsShareStorage) {
    std::vector<float> v{1, 2, 3, 4, 5, 6};
    auto t = Tensor<float>::from(v, {3, 2});
    auto c = t.clone();
    auto moved = t.to(Device::cpu());
    add_into(t, 10.0f, t);  // in place
    EXPECT_EQ(c.to_vector(), v);
    EXPECT_EQ(moved.to_vector(), v);
    auto r = t.reshape({2, 3});
    auto inferred = t.reshape({-1});
    EXPECT_EQ(inferred.shape(), (Shape{6}));
    auto row = t[1];
    auto rows = t.slice(1, 3);
    EXPECT_EQ(row.shape(), (Shape{2}));
    EXPECT_EQ(rows.shape(), (Shape{2, 2}));
    EXPECT_EQ(row.to_vector(), (std::vector<float>{13, 14}));
    neg_into(rows, rows);  // writes through the view
    EXPECT_EQ(r.to_vector(), (std::vector<float>{11, 12, -13, -14, -15, -16}));
    EXPECT_EQ(t.slice(0, 0).numel(), 0u);
}

TEST(Tensor, ElementTypes) {
    EXPECT_EQ(Tensor<float>::dtype(), DType::f32);
    EXPECT_EQ(Tensor<half>::dtype(), DType::f16);
    EXPECT_EQ(Tensor<bfloat16>::dtype(), DType::bf16);
    EXPECT_EQ(Tensor<std::int32_t>::dtype(), DType::i32);
    EXPECT_EQ(Tensor<std::int64_t>::dtype(), DType::i64);
    std::vector<bfloat16> b{bfloat16(1.0f), bfloat16(-2.0f)};
    EXPECT_EQ(float(Tensor<bfloat16>::from(b, {2}).to_vector()[1]), -2.0f);
}

TEST(Tensor, BlockTypesCountValuesInTheShape) {
    std::vector<q4_k> blocks(3 * 2);
    for (std::size_t i = 0; i < blocks.size(); ++i) blocks[i].qs[0] = static_cast<std::uint8_t>(i);
    auto t = Tensor<q4_k>::from(blocks, {3, 512});
    EXPECT_EQ(t.numel(), 3u * 512u);
    EXPECT_EQ(t.bytes(), 6u * sizeof(q4_k));
    EXPECT_EQ(t.to_vector().size(), 6u);
    EXPECT_EQ(t[2].to_vector()[1].qs[0], 5);
    EXPECT_EQ(t.slice(1, 3).to_vector()[0].qs[0], 2);
    EXPECT_EQ(t.reshape({6, 256}).shape(), (Shape{6, 256}));
    EXPECT_EQ(Tensor<q6_k>::zeros({2, 256}).to_vector()[1].d.bits, 0);
    EXPECT_THROW((void)Tensor<q4_k>::from(blocks, {3, 500}), ShapeError);  // not a multiple of 256
    EXPECT_THROW((void)Tensor<q4_k>::from(blocks, {4, 512}), ShapeError);  // 8 blocks expected
    EXPECT_EQ(t.reshape({2, 768}).numel(), 1536u);
    EXPECT_THROW((void)t.reshape({12, 128}), ShapeError);
    EXPECT_THROW((void)Tensor<q8_k>::empty({100}), ShapeError);
    EXPECT_THROW((void)t.reshape({1536}).slice(0, 1), ShapeError);
}

// ---- devices ----------------------------------------------------------------------------------
TEST(Device, CpuIsAlwaysPresentAndParses) {
    auto all = Device::all();
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(all.front(), Device::cpu());
    EXPECT_EQ(Device::parse("cpu"), Device::cpu());
    EXPECT_EQ(Device::cpu().kind(), DeviceKind::cpu);
    EXPECT_EQ(Device::cpu().id(), "cpu");
    EXPECT_FALSE(Device::cpu().name().empty());
    EXPECT_EQ(to_string(DeviceKind::vulkan), "vulkan");
    Device::cpu().synchronize();
}

// The text of a bad device name comes back escaped and cut short: an embedded NUL does not cut
// the message, and a megabyte of input does not make a megabyte of message.
TEST(Device, ParseEscapesWhatItEchoes) {
    try {
        (void)Device::parse(std::string_view("cu\0da:1", 7));
        ADD_FAILURE() << "no error";
    } catch (Error const& e) {
        std::string const what = e.what();
        EXPECT_NE(what.find("'cu\\x00da:1'"), std::string::npos) << what;
        EXPECT_NE(what.find("present here: cpu"), std::string::npos) << what;
    }
    try {
        (void)Device::parse(std::string(1 << 20, 'x'));
        ADD_FAILURE() << "no error";
    } catch (Error const& e) {
        EXPECT_LT(std::string_view(e.what()).size(), 400u) << std::string_view(e.what()).substr(0, 200);
    }
}

TEST(Tensor, IndexOutOfRangeIsAShapeErrorAtEveryExtreme) {
    auto const t = Tensor<float>::zeros(Shape{3, 2});
    for (std::int64_t i : {std::int64_t{3}, std::int64_t{-1}, std::numeric_limits<std::int64_t>::max(),
                           std::numeric_limits<std::int64_t>::min()})
        EXPECT_THROW((void)t[i], ShapeError) << i;
    EXPECT_THROW((void)Tensor<float>::zeros(Shape{})[0], ShapeError);
    EXPECT_EQ(t[2].shape(), (Shape{2}));
}

TEST(Device, RayoDeviceEnvironmentIsHonoured) {
    ::setenv("RAYO_DEVICE", "cpu", 1);
    EXPECT_EQ(Device::best(), Device::cpu());
    ::setenv("RAYO_DEVICE", "tpu", 1);
    try {
        (void)Device::best();
        ADD_FAILURE() << "no exception";
    } catch (Error const& e) {
        std::string const what = e.what();
        EXPECT_NE(what.find("tpu"), std::string::npos) << what;
        EXPECT_NE(what.find("cpu, vulkan, cuda, vulkan:N, cuda:N"), std::string::npos) << what;
    }
    ::unsetenv("RAYO_DEVICE");
    EXPECT_THROW((void)Device::parse("cpu:1"), Error);
    EXPECT_THROW((void)Device::parse("vulkan:x"), Error);
    EXPECT_THROW((void)Device::parse("cuda:7"), Error);  // no CUDA device here (or not that many)
}

// ---- settings ---------------------------------------------------------------------------------
TEST(Settings, ArchAndThreads) {
    auto const archs = available_cpu_archs();
    ASSERT_FALSE(archs.empty());
    EXPECT_EQ(archs.front(), CpuArch::sse4_2);
    for (auto a : archs) {
        ArchScope scope(a);
        EXPECT_EQ(cpu_arch(), a);
    }
    if (archs.back() < CpuArch::avx512) {
        EXPECT_THROW(set_cpu_arch(CpuArch::avx512), Unsupported);
    }
    if (archs.back() < CpuArch::avx512_vnni) {
        EXPECT_THROW(set_cpu_arch(CpuArch::avx512_vnni), Unsupported);
    }
    KQuantActivations const activations = kquant_activations();
    EXPECT_EQ(activations, KQuantActivations::q8_k_residual);  // the default (CI sets no RAYO_KQUANT_ACTIVATIONS)
    set_kquant_activations(KQuantActivations::q8_k);
    EXPECT_EQ(kquant_activations(), KQuantActivations::q8_k);
    EXPECT_EQ(to_string(KQuantActivations::q8_k), "q8_k");
    set_kquant_activations(activations);
    std::size_t const saved = num_threads();
    set_num_threads(3);
    EXPECT_EQ(num_threads(), 3u);
    auto const in = random_floats(1 << 20, fresh_seed());
    auto const got = sum(Tensor<float>::from(in, {in.size()})).item();
    set_num_threads(1);
    EXPECT_NEAR(sum(Tensor<float>::from(in, {in.size()})).item(), got, 1e-6 * in.size());
    set_num_threads(saved);
}

}  // namespace
}  // namespace rayo::test
