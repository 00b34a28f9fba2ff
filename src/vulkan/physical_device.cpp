#include "vulkan/physical_device.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace rayo::vulkan {

namespace {

char const* type_name(VkPhysicalDeviceType type) noexcept {
    switch (type) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return "software, CPU";
        default: return "other";
    }
}

}  // namespace

VkDeviceSize PhysicalDevice::device_local_bytes() const noexcept {
    VkDeviceSize best = 0;
    for (std::uint32_t i = 0; i < memory.memoryHeapCount; ++i)
        if (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) best = std::max(best, memory.memoryHeaps[i].size);
    return best;
}

std::string PhysicalDevice::description() const {
    char memory_text[32];
    std::snprintf(memory_text, sizeof memory_text, "%.1f GiB", static_cast<double>(device_local_bytes()) / (1u << 30));
    return name() + " (" + type_name(properties.deviceType) + ", " + memory_text + ")";
}

std::optional<PhysicalDevice> describe(VkPhysicalDevice handle) {
    PhysicalDevice d;
    d.handle = handle;
    VkPhysicalDeviceMaintenance3Properties maintenance3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 properties2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    properties2.pNext = &maintenance3;
    vkGetPhysicalDeviceProperties(handle, &d.properties);
    if (d.properties.apiVersion < VK_API_VERSION_1_1) return std::nullopt;
    vkGetPhysicalDeviceProperties2(handle, &properties2);
    d.max_allocation_bytes = maintenance3.maxMemoryAllocationSize;
    vkGetPhysicalDeviceMemoryProperties(handle, &d.memory);

    std::uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(handle, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(handle, &count, families.data());
    // Prefer a compute queue without graphics (an async compute queue), else any with compute.
    std::optional<std::uint32_t> family;
    for (std::uint32_t i = 0; i < count; ++i) {
        if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (!family || !(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) family = i;
        if (!(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) break;
    }
    if (!family) return std::nullopt;
    d.compute_queue_family = *family;
    return d;
}

}  // namespace rayo::vulkan
