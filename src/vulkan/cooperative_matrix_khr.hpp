// VK_KHR_cooperative_matrix's structures, which Debian's Vulkan headers (1.3.239) predate. The
// cooperative-matrix GEMM runs through this extension where the device has it, its SPIR-V rewritten
// from the NV extension's (spirv_cooperative_matrix.hpp).
#pragma once

#include <volk.h>

#include <cstdint>

namespace rayo::vulkan::cooperative_matrix_khr {

// From the Vulkan registry (extension 507), for headers that predate it.
inline constexpr char const* extension_name = "VK_KHR_cooperative_matrix";
inline constexpr auto features_structure = static_cast<VkStructureType>(1000506000);
inline constexpr auto properties_structure = static_cast<VkStructureType>(1000506001);

struct Features {
    VkStructureType sType = features_structure;
    void* pNext = nullptr;
    VkBool32 cooperativeMatrix = VK_FALSE;
    VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
};

// VkComponentTypeKHR and VkScopeKHR share the NV enums' values.
struct Properties {
    VkStructureType sType = properties_structure;
    void* pNext = nullptr;
    std::uint32_t MSize = 0, NSize = 0, KSize = 0;
    VkComponentTypeNV AType{}, BType{}, CType{}, ResultType{};
    VkBool32 saturatingAccumulation = VK_FALSE;
    VkScopeNV scope{};
};

using GetPhysicalDeviceProperties = VkResult(VKAPI_PTR*)(VkPhysicalDevice, std::uint32_t*, Properties*);

}  // namespace rayo::vulkan::cooperative_matrix_khr
