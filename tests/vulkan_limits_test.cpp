// Work that reaches a device's limits comes out right: on lavapipe, whose llvmpipe cuts every loop
// short once one shader invocation has run 65535 iterations, deep products (k = 2^21) and long rows
// (2^23 values) either fit the budget or run on the CPU, visibly (logged, counted in rayo::stats());
// on a GPU they run natively.
#include "support/vulkan_support.hpp"

#include <cmath>

namespace rayo::test {
namespace {

using VulkanLimits = VulkanTest;

// The op ran natively, or on the CPU with the fallback counted for it on this device.
void expect_native_or_counted(Device device, char const* op) {
    Stats const s = stats();
    auto const it = s.fallbacks_by_op.find(std::string(op) + " on " + device.id());
    if (it != s.fallbacks_by_op.end()) {
        EXPECT_GE(it->second, 1u);
        EXPECT_NE(device.name().find("llvmpipe"), std::string::npos) << op << " fell back on " << device.name();
    }
}

TEST_F(VulkanLimits, ProductsWithADepthOfTwoToThe21) {
    std::int64_t const k = std::int64_t{1} << 21;
    auto const a = Tensor<float>::full({1, k}, 1.0f, device), b = Tensor<float>::full({k, 1}, 1.0f, device);
    reset_stats();
    EXPECT_EQ(matmul(a, b).to_vector(), std::vector<float>{2097152.0f});
    expect_native_or_counted(device, "matmul");
    EXPECT_EQ(linear(a, a).to_vector(), std::vector<float>{2097152.0f});
    expect_native_or_counted(device, "linear");
}

TEST_F(VulkanLimits, RowsOfTwoToThe23Values) {
    std::int64_t const n = std::int64_t{1} << 23;
    auto const x = Tensor<float>::full({1, n}, 2.0f, device);
    reset_stats();
    auto const check = [&](char const* op, Tensor<float> const& y, float want) {
        auto const v = y.to_vector();
        double const tolerance = 1e-6 * std::abs(want) + 1e-12;
        for (std::size_t i : {std::size_t{0}, v.size() / 2, v.size() - 1})
            EXPECT_NEAR(v[i], want, tolerance) << op << " at " << i;
        expect_native_or_counted(device, op);
    };
    check("softmax", softmax(x), 1.0f / 8388608.0f);
    check("log_softmax", log_softmax(x), static_cast<float>(-std::log(8388608.0)));
    check("layer_norm", layer_norm(x), 0.0f);
    check("rms_norm", rms_norm(x), static_cast<float>(2.0 / std::sqrt(4.0 + 1e-6)));
}

}  // namespace
}  // namespace rayo::test
