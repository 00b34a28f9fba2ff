// What rayo needs to know about one Vulkan physical device, read once at discovery.
#pragma once

#include <volk.h>

#include <cstdint>
#include <optional>
#include <string>

namespace rayo::vulkan {

struct PhysicalDevice {
    VkPhysicalDevice handle = VK_NULL_HANDLE;
    VkPhysicalDeviceProperties properties{};
    VkPhysicalDeviceMemoryProperties memory{};
    VkDeviceSize max_allocation_bytes = 0;  // maxMemoryAllocationSize (Vulkan 1.1)
    std::uint32_t compute_queue_family = 0;

    [[nodiscard]] std::string name() const { return properties.deviceName; }
    // CPU implementations (lavapipe, SwiftShader): used only when named, never by Device::best().
    [[nodiscard]] bool is_software() const noexcept {
        return properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    }
    [[nodiscard]] bool is_discrete() const noexcept {
        return properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    }
    // The largest device-local heap.
    [[nodiscard]] VkDeviceSize device_local_bytes() const noexcept;
    // "NVIDIA H100 80GB HBM3 (discrete GPU, 79.6 GiB)".
    [[nodiscard]] std::string description() const;
};

// nullopt when the device cannot run rayo's shaders (Vulkan < 1.1 or no compute queue).
[[nodiscard]] std::optional<PhysicalDevice> describe(VkPhysicalDevice handle);

}  // namespace rayo::vulkan
