// The process's Vulkan instance: the loader opened through volk, VK_LAYER_KHRONOS_validation and a
// debug messenger when RAYO_VULKAN_VALIDATION=1.
#pragma once

#include <volk.h>

#include <vector>

namespace rayo::vulkan {

class Instance {
public:
    // Created at first use; nullptr when this machine has no usable Vulkan loader (logged at debug
    // level). It outlives every device: the registry that owns them is created after it.
    [[nodiscard]] static Instance* get();

    ~Instance();
    Instance(Instance const&) = delete;
    Instance& operator=(Instance const&) = delete;

    [[nodiscard]] VkInstance handle() const noexcept { return instance_; }
    [[nodiscard]] std::vector<VkPhysicalDevice> physical_devices() const;

private:
    Instance();
    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
};

}  // namespace rayo::vulkan
