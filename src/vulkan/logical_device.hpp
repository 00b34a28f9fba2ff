// A VkDevice with its one compute queue and its own table of device functions (volk's global
// device functions would serve only one device).
#pragma once

#include <volk.h>

#include "vulkan/physical_device.hpp"

namespace rayo::vulkan {

class LogicalDevice {
public:
    explicit LogicalDevice(PhysicalDevice const& physical);
    ~LogicalDevice();
    LogicalDevice(LogicalDevice const&) = delete;
    LogicalDevice& operator=(LogicalDevice const&) = delete;

    [[nodiscard]] PhysicalDevice const& physical() const noexcept { return physical_; }
    [[nodiscard]] VkDevice handle() const noexcept { return device_; }
    [[nodiscard]] VkQueue queue() const noexcept { return queue_; }
    [[nodiscard]] VolkDeviceTable const& fn() const noexcept { return table_; }

private:
    PhysicalDevice physical_;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    VolkDeviceTable table_{};
};

}  // namespace rayo::vulkan
