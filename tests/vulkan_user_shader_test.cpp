// dispatch_vulkan_shader (rayo/vulkan_shader.hpp) on lavapipe with the validation layer on: a
// compute shader of one's own (examples/scale_add.comp, y = a·x + y, compiled by glslc at build
// time) on rayo tensors and views, recorded between rayo's ops with no synchronization; and every
// refusal named, with nothing recorded and every tensor as it was.
#include "support/vulkan_support.hpp"

#include <rayo/native.hpp>
#include <rayo/vulkan_shader.hpp>

#include <volk.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace rayo::test {
namespace {

std::vector<std::uint32_t> scale_add_spirv() {
    std::ifstream file(RAYO_TEST_SCALE_ADD_SPV, std::ios::binary | std::ios::ate);
    std::vector<std::uint32_t> words(static_cast<std::size_t>(file.tellg()) / 4);
    file.seekg(0);
    file.read(reinterpret_cast<char*>(words.data()), static_cast<std::streamsize>(words.size() * 4));
    return words;
}

class VulkanUserShader : public VulkanTest {};

TEST_F(VulkanUserShader, RunsOnRayoTensorsAndViewsBetweenRayoOps) {
    auto const spirv = scale_add_spirv();
    ASSERT_GT(spirv.size(), 5u);
    auto const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::uint32_t const n = 1000;
    auto const xv = random_floats(n, seed, -4.0f, 4.0f);
    auto const x = Tensor<float>::from(xv, {n}, device);
    auto y = Tensor<float>::full({n}, 0.25f, device);
    add_into(y, 0.75f, y);  // recorded before the shader: y is 1 when it runs
    dispatch_vulkan_shader(device, spirv, {(n + 63) / 64, 1, 1}, {x, y, 0.5f, n});
    auto const e = exp(y);  // recorded after it
    std::vector<float> const got = y.to_vector(), ex = e.to_vector();
    for (std::uint32_t i = 0; i < n; ++i) {
        float const want = 0.5f * xv[i] + 1.0f;  // one fma or a product and a sum: within an ulp
        ASSERT_NEAR(got[i], want, 1e-6f * (1 + std::abs(want))) << i;
        ASSERT_NEAR(ex[i], std::exp(got[i]), 1e-5f * std::exp(got[i])) << i;
    }
    // Views at a whole-alignment offset: the second half of a [2, 1024] tensor, n of 1000.
    auto const w = Tensor<float>::zeros({2, 1024}, device);
    auto const half = w.slice(1, 2).reshape({1024});
    dispatch_vulkan_shader(device, spirv, {(n + 63) / 64, 1, 1}, {x, half, 2.0f, n});
    std::vector<float> const wv = w.to_vector();
    for (std::uint32_t i = 0; i < 2048; ++i) {
        float const want = i >= 1024 && i - 1024 < n ? 2.0f * xv[i - 1024] : 0.0f;
        ASSERT_EQ(wv[i], want) << i;
    }
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

TEST_F(VulkanUserShader, RefusalsNameTheProblemAndRecordNothing) {
    auto const spirv = scale_add_spirv();
    std::uint32_t const n = 64;
    auto const x = Tensor<float>::full({n}, 1.0f, device);
    auto const y = Tensor<float>::full({n}, 3.0f, device);
    auto const empty = Tensor<float>::empty({0}, device);
    auto const on_cpu = Tensor<float>::zeros({n});
    VkPhysicalDeviceProperties properties{};
    vkGetPhysicalDeviceProperties(static_cast<VkPhysicalDevice>(vulkan_handles(device).physical_device), &properties);
    VkPhysicalDeviceLimits const& limits = properties.limits;
    std::vector<std::uint32_t> not_spirv(spirv.size(), 7u);
    std::vector<std::pair<std::function<void()>, std::string>> refused{
        {[&] {
             dispatch_vulkan_shader(device, spirv, {1, 1, 1}, {x, 0.5f, n});
         },
         "1 tensors for the shader's 2 storage-buffer bindings"},
        {[&] {
             dispatch_vulkan_shader(device, not_spirv, {1, 1, 1}, {x, y, 0.5f, n});
         },
         "that are not SPIR-V"},
        {[&] {
             dispatch_vulkan_shader(device, spirv, {1, 1, 1}, {on_cpu, y, 0.5f, n});
         },
         "argument 0 is a tensor on cpu"},
        {[&] {
             dispatch_vulkan_shader(device, spirv, {1, 1, 1}, {x, empty, 0.5f, n});
         },
         "argument 1 (binding 1) is an empty tensor"},
        {[&] {
             dispatch_vulkan_shader(device, spirv, {1, 0, 1}, {x, y, 0.5f, n});
         },
         "the group count's y is 0"},
        {[&] {
             dispatch_vulkan_shader(device, spirv, {limits.maxComputeWorkGroupCount[0] + 1, 1, 1}, {x, y, 0.5f, n});
         },
         "maxComputeWorkGroupCount"},
        {[&] {
             dispatch_vulkan_shader(device, spirv, {1, 1, 1},
                                    {x,    y,    1.f,  2.f,  3.f,  4.f,  5.f,  6.f,  7.f,  8.f,  9.f,  10.f,
                                     11.f, 12.f, 13.f, 14.f, 15.f, 16.f, 17.f, 18.f, 19.f, 20.f, 21.f, 22.f,
                                     23.f, 24.f, 25.f, 26.f, 27.f, 28.f, 29.f, 30.f, 31.f, 32.f, 33.f});
         },
         "132 bytes of scalar arguments (push constants hold 128)"},
        {[&] {
             dispatch_vulkan_shader(Device::cpu(), spirv, {1, 1, 1}, {x, y, 0.5f, n});
         },
         "dispatch_vulkan_shader on cpu: not a Vulkan device"},
        {[&] { (void)capture(device, [&] {
                   dispatch_vulkan_shader(device, spirv, {1, 1, 1}, {x, y, 0.5f, n});
               }); },
         "dispatch_vulkan_shader on vulkan:"},
    };
    if (limits.minStorageBufferOffsetAlignment > 4)
        refused.push_back({[&] {
                               dispatch_vulkan_shader(device, spirv, {1, 1, 1}, {x, y.slice(1, n), 0.5f, n - 1});
                           },
                           "minStorageBufferOffsetAlignment"});
    for (auto const& [call, text] : refused) expect_error(call, text);
    EXPECT_EQ(y.to_vector(), std::vector<float>(n, 3.0f));
}

}  // namespace
}  // namespace rayo::test
