// Float32 subnormals on a Vulkan device: the shaders that can produce them are built twice, and the
// DenormPreserve build runs exactly where the device can keep subnormals; results below 2^-126
// through each shader family that has such a build, against float64 references (the harness,
// tests/ops/, checks every op's values); and the default builds still run where they were turned
// off. Where the device flushes, a flushed result is accepted, counted and reported.
#include "support/vulkan_support.hpp"

#include <algorithm>
#include <functional>
#include <iostream>

namespace rayo::test {
namespace {

bool is_subnormal(double x) { return x != 0 && std::abs(x) < std::numeric_limits<float>::min(); }
float flush(float x) { return is_subnormal(x) ? std::copysign(0.0f, x) : x; }

// What a test accepts of float32 subnormals on `device`: exact (to the op's ulps) where its shaders
// preserve them; elsewhere also flushed ones (subnormal results as zero, subnormal inputs read as
// zero), each counted and reported when the test ends, so the leniency is never silent.
class SubnormalPolicy {
public:
    explicit SubnormalPolicy(Device device) : support_(vulkan::subnormal_support(device)), device_(device) {}
    ~SubnormalPolicy() {
        if (flushed_ == 0) return;
        std::cout << device_.name() << " flushes float32 subnormals (VK_KHR_shader_float_controls "
                  << (support_.float_controls ? "present" : "absent") << ", shaderDenormPreserveFloat32 "
                  << support_.denorm_preserve_f32 << ", denormBehaviorIndependence " << support_.denorm_independence
                  << "): " << flushed_ << " results accepted as flushed\n";
        ::testing::Test::RecordProperty("flushed_subnormal_results", static_cast<int>(flushed_));
    }
    SubnormalPolicy(SubnormalPolicy const&) = delete;
    SubnormalPolicy& operator=(SubnormalPolicy const&) = delete;

    [[nodiscard]] bool preserving() const noexcept { return support_.preserving; }
    // Whether `got` is `want` (from the exact inputs) within `max_ulp`, or, on a device that may
    // flush, `flushed_want` (the result of the inputs flushed) with subnormals read as zero: a
    // zero or subnormal result where that one is zero or subnormal (such a device compares
    // subnormal inputs as zero, so max and min may pass on either one's bits).
    [[nodiscard]] bool accepts(float got, double want, double max_ulp, double flushed_want) {
        if (ulp_error(got, want) <= max_ulp) return true;
        if (preserving()) return false;
        bool const flushed = (flush(got) == 0 && flush(static_cast<float>(flushed_want)) == 0) ||
                             ulp_error(got, flushed_want) <= max_ulp;
        flushed_ += flushed ? 1 : 0;
        return flushed;
    }
    [[nodiscard]] bool accepts(float got, double want, double max_ulp) { return accepts(got, want, max_ulp, want); }

private:
    vulkan::SubnormalSupport support_;
    Device device_;
    std::size_t flushed_ = 0;
};

using VulkanSubnormals = VulkanTest;

// The shaders built both ways run their DenormPreserve build exactly where the device reports it
// can (shaderDenormPreserveFloat32, with an independence that lets float32 be set alone).
TEST_F(VulkanSubnormals, ShadersKeepSubnormalsWhereTheDeviceAllowsIt) {
    auto const support = vulkan::subnormal_support(device);
    std::cout << device.name() << ": VK_KHR_shader_float_controls " << (support.float_controls ? "present" : "absent")
              << ", shaderDenormPreserveFloat32 " << support.denorm_preserve_f32 << ", denormBehaviorIndependence "
              << support.denorm_independence << ": ops run the "
              << (support.preserving ? "DenormPreserve shader builds" : "default shader builds (subnormals may flush)")
              << "\n";
    EXPECT_EQ(support.device_preserves,
              support.float_controls && support.denorm_preserve_f32 && support.denorm_independence != "none");
    EXPECT_EQ(support.preserving, support.device_preserves) << "nothing turned the DenormPreserve builds off";

    // exp runs the unary shader, which has both builds: its pipeline is counted under the build used.
    (void)exp(Tensor<float>::from(std::vector<float>{-100.0f}, {1}, device)).to_vector();
    auto const after = vulkan::subnormal_support(device);
    if (support.device_preserves)
        EXPECT_GT(after.preserving_pipelines, 0u) << "exp did not run the DenormPreserve build";
    else
        EXPECT_EQ(after.preserving_pipelines, 0u) << "a DenormPreserve build ran on a device that cannot preserve";
}

// Results (and inputs) below 2^-126 against float64 references, through each shader family that
// has a DenormPreserve build: element-wise, binary, reductions and dot, softmax, matmul.
TEST_F(VulkanSubnormals, SubnormalResultsSurvive) {
    reset_stats();
    SubnormalPolicy subnormals(device);
    auto one = [&](float value) { return Tensor<float>::from(std::vector<float>{value}, {1}, device); };
    auto check = [&](std::string const& what, Tensor<float> const& result, double want, double max_ulp,
                     double flushed_want) {
        float const got = result.to_vector().at(0);
        EXPECT_TRUE(subnormals.accepts(got, want, max_ulp, flushed_want))
            << what << ": got " << got << ", want " << want;
        if (subnormals.preserving() && is_subnormal(want)) {
            EXPECT_EQ(std::fpclassify(got), FP_SUBNORMAL) << what << ": got " << got << ", want " << want;
        }
    };
    double const sqrt_2_over_pi = std::sqrt(2.0 / M_PI);
    float const tiny = 1e-40f, small = 1e-20f;  // tiny is subnormal, small·small is
    double const t = tiny, s = small;

    check("exp(-100)", exp(one(-100.0f)), std::exp(-100.0), 1, std::exp(-100.0));
    check("exp(-103)", exp(one(-103.0f)), std::exp(-103.0), 1, std::exp(-103.0));  // 2^-149, the smallest
    check("sigmoid(-100)", sigmoid(one(-100.0f)), 1 / (1 + std::exp(100.0)), 2, 0);
    check("silu(-100)", silu(one(-100.0f)), -100 / (1 + std::exp(100.0)), 2, 0);
    check("gelu(-13.5)", gelu(one(-13.5f)), 0.5 * -13.5 * std::erfc(13.5 / std::sqrt(2.0)), 4, 0);
    double const g = -10.3f;
    check("gelu_tanh(-10.3)", gelu(one(-10.3f), Gelu::tanh),
          g / (1 + std::exp(-2 * sqrt_2_over_pi * (g + 0.044715 * g * g * g))), 4, 0);
    check("relu(-1e-40)", relu(one(-tiny)), 0.0, 0, 0.0);
    check("relu(1e-40)", relu(one(tiny)), t, 0, 0.0);
    check("neg(1e-40)", neg(one(tiny)), -t, 0, 0.0);
    check("tanh(1e-40)", tanh(one(tiny)), t, 1, 0.0);
    check("sqrt(1e-40)", sqrt(one(tiny)), std::sqrt(t), 1, 0.0);
    check("mul(1e-20, 1e-20)", mul(one(small), one(small)), s * s, 0.5, s * s);
    check("scale(1e-20, 1e-20)", scale(one(small), small), s * s, 0.5, s * s);
    check("add(1e-40, 1e-40)", add(one(tiny), one(tiny)), 2 * t, 0.5, 0.0);
    check("div(1e-30, 1e10)", div(one(1e-30f), one(1e10f)), double(1e-30f) / double(1e10f), 1,
          double(1e-30f) / double(1e10f));

    std::vector<float> const tinies{1e-40f, 2e-40f, 3e-40f};
    double const tinies_sum = double(1e-40f) + double(2e-40f) + double(3e-40f);
    auto v = Tensor<float>::from(tinies, {3}, device);
    check("sum of subnormals", sum(v), tinies_sum, 1, 0.0);
    check("max of subnormals", max(v), double(3e-40f), 0, 0.0);
    std::vector<float> const smalls{1e-20f, 2e-20f};
    double const smalls_dot = double(1e-20f) * double(1e-20f) + double(2e-20f) * double(1e-20f);
    auto a = Tensor<float>::from(smalls, {2}, device);
    auto b = Tensor<float>::from(std::vector<float>{1e-20f, 1e-20f}, {2}, device);
    check("dot of small vectors", dot(a, b), smalls_dot, 2, smalls_dot);
    check("matmul of small matrices", matmul(a.reshape({1, 2}), b.reshape({2, 1})).reshape({1}), smalls_dot, 2,
          smalls_dot);
    auto logits = Tensor<float>::from(std::vector<float>{0.0f, -100.0f}, {1, 2}, device);
    double const e = std::exp(-100.0);
    check("softmax([0, -100])[1]", softmax(logits, -1).reshape({2}).slice(1, 2), e / (1 + e), 4, 0.0);
    EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
}

// With the DenormPreserve builds turned off every op runs its default build (which may flush on
// this device), so that path is exercised on devices that could preserve too.
TEST_F(VulkanSubnormals, DefaultShaderBuildsStillRun) {
    struct DefaultBuilds {
        Device device;
        ~DefaultBuilds() { vulkan::use_denorm_preserve(device, true); }
    } const restore{device};
    vulkan::use_denorm_preserve(device, false);
    auto const support = vulkan::subnormal_support(device);
    EXPECT_FALSE(support.preserving);
    auto x = Tensor<float>::from(std::vector<float>{-100.0f, 0.0f, 1.0f}, {3}, device);
    auto const got = exp(x).to_vector();
    std::cout << device.name() << ", default shader build: exp(-100) = " << got[0]
              << (got[0] == 0.0f ? " (flushed)" : " (kept)") << "\n";
    EXPECT_TRUE(got[0] == 0.0f || ulp_error(got[0], std::exp(-100.0)) <= 1.0) << got[0];  // 0 where the device flushes
    EXPECT_EQ(got[1], 1.0f);
    EXPECT_LE(ulp_error(got[2], std::exp(1.0)), 4.0);
    EXPECT_GT(vulkan::subnormal_support(device).default_mode_pipelines, 0u);
}

}  // namespace
}  // namespace rayo::test
