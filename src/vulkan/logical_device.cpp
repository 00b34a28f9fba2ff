#include "vulkan/logical_device.hpp"

#include "vulkan/vulkan_error.hpp"

namespace rayo::vulkan {

LogicalDevice::LogicalDevice(PhysicalDevice const& physical) : physical_(physical) {
    float const priority = 1.0f;
    VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue.queueFamilyIndex = physical.compute_queue_family;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    info.queueCreateInfoCount = 1;
    info.pQueueCreateInfos = &queue;
    check(vkCreateDevice(physical.handle, &info, nullptr, &device_), "vkCreateDevice on " + physical.name());
    volkLoadDeviceTable(&table_, device_);
    table_.vkGetDeviceQueue(device_, physical.compute_queue_family, 0, &queue_);
}

LogicalDevice::~LogicalDevice() {
    table_.vkDeviceWaitIdle(device_);
    table_.vkDestroyDevice(device_, nullptr);
}

}  // namespace rayo::vulkan
