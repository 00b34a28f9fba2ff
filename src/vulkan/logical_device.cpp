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
    // What matmul uses where present (physical_device.hpp): 16-bit storage, and the
    // cooperative-matrix path with the features its shader declares.
    VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    storage16.storageBuffer16BitAccess = physical.storage_buffer_16bit ? VK_TRUE : VK_FALSE;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    VkPhysicalDeviceShaderFloat16Int8Features float16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceVulkanMemoryModelFeatures model{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    char const* const coop_extensions[] = {VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME,
                                           VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME};
    info.pNext = &storage16;
    if (physical.cooperative_matrix_n != 0) {
        coop.cooperativeMatrix = VK_TRUE;
        float16.shaderFloat16 = VK_TRUE;
        model.vulkanMemoryModel = VK_TRUE;
        storage16.pNext = &coop;
        coop.pNext = &float16;
        float16.pNext = &model;
        info.enabledExtensionCount = 3;
        info.ppEnabledExtensionNames = coop_extensions;
    }
    check(vkCreateDevice(physical.handle, &info, nullptr, &device_), "vkCreateDevice on " + physical.name());
    volkLoadDeviceTable(&table_, device_);
    table_.vkGetDeviceQueue(device_, physical.compute_queue_family, 0, &queue_);
}

LogicalDevice::~LogicalDevice() {
    table_.vkDeviceWaitIdle(device_);
    table_.vkDestroyDevice(device_, nullptr);
}

}  // namespace rayo::vulkan
