#include "vulkan/physical_device.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "vulkan/cooperative_matrix_khr.hpp"

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

bool has_extension(std::vector<VkExtensionProperties> const& list, char const* name) {
    return std::any_of(list.begin(), list.end(),
                       [&](auto const& e) { return std::strcmp(e.extensionName, name) == 0; });
}

std::vector<VkExtensionProperties> device_extensions(VkPhysicalDevice handle) {
    std::uint32_t count = 0;
    vkEnumerateDeviceExtensionProperties(handle, nullptr, &count, nullptr);
    std::vector<VkExtensionProperties> extensions(count);
    vkEnumerateDeviceExtensionProperties(handle, nullptr, &count, extensions.data());
    extensions.resize(count);
    return extensions;
}

// Whether a cooperative-matrix shape is the GEMM's: M = 16, N = 8, K = 16, f16 · f16 + f32, subgroup.
template <class Shape>
bool is_gemm_shape(Shape const& s) {
    return s.AType == VK_COMPONENT_TYPE_FLOAT16_NV && s.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
           s.CType == VK_COMPONENT_TYPE_FLOAT32_NV && s.scope == VK_SCOPE_SUBGROUP_NV && s.MSize == 16 &&
           s.NSize == 8 && s.KSize == 16;
}

bool khr_cooperative_matrix_has_gemm_shape(PhysicalDevice const& d,
                                           std::vector<VkExtensionProperties> const& extensions) {
    namespace khr = cooperative_matrix_khr;
    auto const get_shapes = reinterpret_cast<khr::GetPhysicalDeviceProperties>(
        vkGetInstanceProcAddr(volkGetLoadedInstance(), "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
    if (!has_extension(extensions, khr::extension_name) || !get_shapes) return false;
    khr::Features coop;
    VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features2.pNext = &coop;
    vkGetPhysicalDeviceFeatures2(d.handle, &features2);
    if (!coop.cooperativeMatrix) return false;
    std::uint32_t count = 0;
    if (get_shapes(d.handle, &count, nullptr) != VK_SUCCESS) return false;
    std::vector<khr::Properties> shapes(count);
    if (get_shapes(d.handle, &count, shapes.data()) != VK_SUCCESS) return false;
    shapes.resize(count);
    return std::any_of(shapes.begin(), shapes.end(), [](khr::Properties const& s) {
        return is_gemm_shape(s) && s.ResultType == VK_COMPONENT_TYPE_FLOAT32_NV;
    });
}

bool nv_cooperative_matrix_has_gemm_shape(PhysicalDevice const& d,
                                          std::vector<VkExtensionProperties> const& extensions) {
    if (!has_extension(extensions, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) ||
        !vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)
        return false;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features2.pNext = &coop;
    vkGetPhysicalDeviceFeatures2(d.handle, &features2);
    if (!coop.cooperativeMatrix) return false;
    std::uint32_t count = 0;
    vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(d.handle, &count, nullptr);
    std::vector<VkCooperativeMatrixPropertiesNV> shapes(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
    vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(d.handle, &count, shapes.data());
    return std::any_of(shapes.begin(), shapes.end(), [](VkCooperativeMatrixPropertiesNV const& s) {
        return is_gemm_shape(s) && s.DType == VK_COMPONENT_TYPE_FLOAT32_NV;
    });
}

// 16-bit storage, and the cooperative-matrix path of matmul when every piece of it is there.
void describe_matmul_features(PhysicalDevice& d, std::vector<VkExtensionProperties> const& extensions) {
    VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features2.pNext = &storage16;
    vkGetPhysicalDeviceFeatures2(d.handle, &features2);
    d.storage_buffer_16bit = storage16.storageBuffer16BitAccess == VK_TRUE;

    if (!has_extension(extensions, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME) ||
        !has_extension(extensions, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME) || d.subgroup_size != 32)
        return;
    VkPhysicalDeviceShaderFloat16Int8Features float16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceVulkanMemoryModelFeatures model{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    float16.pNext = &model;
    features2.pNext = &float16;
    vkGetPhysicalDeviceFeatures2(d.handle, &features2);
    if (!float16.shaderFloat16 || !model.vulkanMemoryModel) return;
    using CooperativeMatrix = PhysicalDevice::CooperativeMatrix;
    if (khr_cooperative_matrix_has_gemm_shape(d, extensions))
        d.cooperative_matrix = CooperativeMatrix::khr;
    else if (nv_cooperative_matrix_has_gemm_shape(d, extensions))
        d.cooperative_matrix = CooperativeMatrix::nv;
}

// 4x8-bit integer dot products (the one-row q4_k GEMV's integer build).
void describe_integer_dot_product(PhysicalDevice& d, std::vector<VkExtensionProperties> const& extensions) {
    // As for float controls, the structs may be chained only where the extension is present.
    if (!has_extension(extensions, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME)) return;
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features2.pNext = &dot;
    vkGetPhysicalDeviceFeatures2(d.handle, &features2);
    if (!dot.shaderIntegerDotProduct) return;
    d.integer_dot_product = true;
    VkPhysicalDeviceShaderIntegerDotProductProperties speed{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
    VkPhysicalDeviceProperties2 properties2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    properties2.pNext = &speed;
    vkGetPhysicalDeviceProperties2(d.handle, &properties2);
    d.integer_dot_product_accelerated = speed.integerDotProduct4x8BitPackedUnsignedAccelerated &&
                                        speed.integerDotProduct4x8BitPackedMixedSignednessAccelerated;
}

// Float controls: whether shaders can keep float32 subnormals (DenormPreserve).
void describe_float_controls(PhysicalDevice& d, std::vector<VkExtensionProperties> const& extensions) {
    // The properties struct may be chained only where the extension is present (the instance is 1.1).
    if (!has_extension(extensions, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME)) return;
    VkPhysicalDeviceFloatControlsProperties controls{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
    VkPhysicalDeviceProperties2 properties2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    properties2.pNext = &controls;
    vkGetPhysicalDeviceProperties2(d.handle, &properties2);
    d.float_controls = true;
    d.denorm_preserve_f32 = controls.shaderDenormPreserveFloat32 == VK_TRUE;
    d.denorm_independence = controls.denormBehaviorIndependence;
}

}  // namespace

VkDeviceSize PhysicalDevice::device_local_bytes() const noexcept {
    VkDeviceSize best = 0;
    for (std::uint32_t i = 0; i < memory.memoryHeapCount; ++i)
        if (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
            best = std::max(best, memory.memoryHeaps[i].size);
    return best;
}

std::string PhysicalDevice::description() const {
    char memory_text[32];
    std::snprintf(memory_text, sizeof memory_text, "%.1f GiB", static_cast<double>(device_local_bytes()) / (1u << 30));
    // The optional paths the backend found, so a device list shows which shaders will run.
    std::string features = ", subgroup " + std::to_string(subgroup_size);
    if (storage_buffer_16bit) features += ", 16-bit storage";
    if (cooperative_matrix == CooperativeMatrix::khr) features += ", cooperative matrix 16x8x16 (KHR)";
    if (cooperative_matrix == CooperativeMatrix::nv) features += ", cooperative matrix 16x8x16 (NV)";
    if (integer_dot_product)
        features += integer_dot_product_accelerated ? ", 8-bit dot products" : ", 8-bit dot products (not accelerated)";
    features += preserves_f32_subnormals() ? ", keeps subnormals" : ", may flush subnormals";
    return name() + " (" + type_name(properties.deviceType) + ", " + memory_text + features + ")";
}

std::optional<PhysicalDevice> describe(VkPhysicalDevice handle) {
    PhysicalDevice d;
    d.handle = handle;
    VkPhysicalDeviceMaintenance3Properties maintenance3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    maintenance3.pNext = &subgroup;
    VkPhysicalDeviceProperties2 properties2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    properties2.pNext = &maintenance3;
    vkGetPhysicalDeviceProperties(handle, &d.properties);
    if (d.properties.apiVersion < VK_API_VERSION_1_1) return std::nullopt;
    vkGetPhysicalDeviceProperties2(handle, &properties2);
    d.max_allocation_bytes = maintenance3.maxMemoryAllocationSize;
    d.subgroup_size = std::max<std::uint32_t>(1, subgroup.subgroupSize);
    VkSubgroupFeatureFlags const needed =
        VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
    d.subgroup_arithmetic =
        (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (subgroup.supportedOperations & needed) == needed;
    vkGetPhysicalDeviceMemoryProperties(handle, &d.memory);
    constexpr std::uint32_t nvidia_vendor_id = 0x10de;
    d.fused_fma = d.properties.vendorID == nvidia_vendor_id;
    auto const extensions = device_extensions(handle);
    if (has_extension(extensions, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME)) {
        VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
        VkPhysicalDeviceProperties2 with_driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
        with_driver.pNext = &driver;
        vkGetPhysicalDeviceProperties2(handle, &with_driver);
        if (driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE) d.loop_iteration_limit = 65535;
    }
    describe_matmul_features(d, extensions);
    describe_float_controls(d, extensions);
    describe_integer_dot_product(d, extensions);

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
