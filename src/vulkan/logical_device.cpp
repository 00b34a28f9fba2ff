#include "vulkan/logical_device.hpp"

#include <vector>

#include "vulkan/cooperative_matrix_khr.hpp"
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
    // What matmul and linear use where present (physical_device.hpp): 16-bit storage, the
    // cooperative-matrix path (KHR or NV) with the features its shader declares, and integer dot
    // products.
    VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    storage16.storageBuffer16BitAccess = physical.storage_buffer_16bit ? VK_TRUE : VK_FALSE;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    VkPhysicalDeviceShaderFloat16Int8Features float16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceVulkanMemoryModelFeatures model{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    cooperative_matrix_khr::Features coop_khr;
    std::vector<char const*> extensions;
    info.pNext = &storage16;
    if (physical.cooperative_matrix != PhysicalDevice::CooperativeMatrix::none) {
        float16.shaderFloat16 = VK_TRUE;
        model.vulkanMemoryModel = VK_TRUE;
        float16.pNext = &model;
        extensions.insert(extensions.end(),
                          {VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME});
        if (physical.cooperative_matrix == PhysicalDevice::CooperativeMatrix::khr) {
            coop_khr.cooperativeMatrix = VK_TRUE;
            coop_khr.pNext = &float16;
            storage16.pNext = &coop_khr;
            extensions.push_back(cooperative_matrix_khr::extension_name);
        } else {
            coop.cooperativeMatrix = VK_TRUE;
            coop.pNext = &float16;
            storage16.pNext = &coop;
            extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
        }
    }
    if (physical.integer_dot_product) {
        dot.shaderIntegerDotProduct = VK_TRUE;
        dot.pNext = storage16.pNext;  // first after storage16, ahead of whatever the block above chained
        storage16.pNext = &dot;
        extensions.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    }
    // SPV_KHR_float_controls (the DenormPreserve shader builds) needs the extension on a 1.1
    // instance; it has no features to enable, only properties.
    if (physical.float_controls) extensions.push_back(VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);
    info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
    info.ppEnabledExtensionNames = extensions.data();
    check(vkCreateDevice(physical.handle, &info, nullptr, &device_), "vkCreateDevice on " + physical.name());
    volkLoadDeviceTable(&table_, device_);
    table_.vkGetDeviceQueue(device_, physical.compute_queue_family, 0, &queue_);
}

LogicalDevice::~LogicalDevice() {
    table_.vkDeviceWaitIdle(device_);
    table_.vkDestroyDevice(device_, nullptr);
}

}  // namespace rayo::vulkan
