// Vulkan test fixture: runs on the first Vulkan device (lavapipe in CI), skips with a message when
// the machine has none, and fails any test during which the validation layer reported anything.
#pragma once

#include "support/test_support.hpp"

#include <cstdlib>
#include <optional>

#include "vulkan/diagnostics.hpp"

namespace rayo::test {

inline std::optional<Device> first_vulkan_device() {
    for (Device d : Device::all())
        if (d.kind() == DeviceKind::vulkan) return d;
    return std::nullopt;
}

class VulkanTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto d = first_vulkan_device();
        if (!d) GTEST_SKIP() << "no Vulkan device on this machine (install mesa-vulkan-drivers for lavapipe)";
        device = *d;
        if (char const* v = std::getenv("RAYO_VULKAN_VALIDATION"); v && std::string_view(v) == "1") {
            ASSERT_TRUE(vulkan::validation_enabled())
                << "RAYO_VULKAN_VALIDATION=1 but the validation layer is not active";
        }
        messages_before = vulkan::validation_message_count();
    }
    void TearDown() override {
        if (IsSkipped()) return;
        device.synchronize();
        EXPECT_EQ(vulkan::validation_message_count(), messages_before)
            << "the validation layer reported messages (logged above)";
    }
    // Runs `body` once per available path of the reduction and row shaders (subgroup arithmetic,
    // shared memory), then restores the default.
    template <class F>
    void on_every_path(F&& body) {
        std::vector<bool> paths{false};
        if (vulkan::has_subgroup_arithmetic(device)) paths.push_back(true);
        for (bool subgroups : paths) {
            SCOPED_TRACE(subgroups ? "subgroup path" : "shared-memory path");
            vulkan::use_subgroups(device, subgroups);
            body();
        }
        vulkan::use_subgroups(device, true);
    }

    Device device = Device::cpu();
    std::uint64_t messages_before = 0;
};

}  // namespace rayo::test
