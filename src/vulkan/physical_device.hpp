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
    // Subgroups (Vulkan 1.1): the size, and whether compute shaders have the basic, arithmetic and
    // shuffle operations (subgroupAdd, subgroupMax, subgroupShuffleXor, ...). Reductions use them
    // when present.
    std::uint32_t subgroup_size = 1;
    bool subgroup_arithmetic = false;
    // storageBuffer16BitAccess (Vulkan 1.1): f16 operands are then read through 16-bit storage.
    bool storage_buffer_16bit = false;
    // The cooperative-matrix GEMM (shaders/matmul_coopmat.comp): f16·f16 + f32 products of 16x16 by
    // 16x8 fragments at subgroup scope, subgroups of 32, shaderFloat16 and vulkanMemoryModel. Through
    // VK_KHR_cooperative_matrix where the device lists that shape (the shader's SPIR-V is rewritten
    // for it, spirv_cooperative_matrix.hpp), else VK_NV_cooperative_matrix; the device enables the one
    // named here.
    enum class CooperativeMatrix { none, nv, khr };
    CooperativeMatrix cooperative_matrix = CooperativeMatrix::none;
    // VK_KHR_shader_integer_dot_product with shaderIntegerDotProduct (the device then enables it),
    // and whether its 4x8-bit packed unsigned and mixed-signedness products are accelerated (one
    // instruction, as on NVIDIA): the one-row q4_k GEMV takes its integer build by default only then.
    bool integer_dot_product = false;
    bool integer_dot_product_accelerated = false;
    // Float controls (VK_KHR_shader_float_controls; core in Vulkan 1.2, but the instance asks for
    // 1.1, so the device enables the extension). Without DenormPreserve a shader may flush float32
    // subnormals to zero (NVIDIA does by default), where the CPU backend keeps them.
    bool float_controls = false;       // the extension is present (and then enabled)
    bool denorm_preserve_f32 = false;  // shaderDenormPreserveFloat32
    VkShaderFloatControlsIndependence denorm_independence = VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE;
    // GLSL's fma() is one fused operation (NVIDIA's compiler: FFMA). Nothing in Vulkan states it, so
    // only for the vendor whose driver the tests run on; elsewhere (lavapipe splits fma into a
    // multiply and an add) the shaders take exact products the long way (float_math.glsl).
    bool fused_fma = false;
    // Loop iterations one shader invocation may run in all, summed over every loop it enters:
    // lavapipe (llvmpipe) ends every loop once an invocation has run 65535 iterations and goes on
    // with wrong results, so ops plan within it (ShaderRunner::loop_budget); no limit elsewhere.
    std::uint64_t loop_iteration_limit = std::uint64_t(-1);

    [[nodiscard]] std::string name() const { return properties.deviceName; }
    // CPU implementations (lavapipe, SwiftShader): used only when named, never by Device::best().
    [[nodiscard]] bool is_software() const noexcept { return properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU; }
    [[nodiscard]] bool is_discrete() const noexcept {
        return properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    }
    // Whether shaders may declare DenormPreserve for float32 alone: the mode must be supported, and
    // (denormBehaviorIndependence) settable for 32-bit floats without setting 16- and 64-bit ones.
    [[nodiscard]] bool preserves_f32_subnormals() const noexcept {
        return float_controls && denorm_preserve_f32 &&
               denorm_independence != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE;
    }
    // The largest device-local heap.
    [[nodiscard]] VkDeviceSize device_local_bytes() const noexcept;
    // The name, then the device type, the largest device-local heap and the optional paths found
    // (rayo-info lists it; docs/backends/vulkan.md has an example).
    [[nodiscard]] std::string description() const;
};

// nullopt when the device cannot run rayo's shaders (Vulkan < 1.1 or no compute queue).
[[nodiscard]] std::optional<PhysicalDevice> describe(VkPhysicalDevice handle);

}  // namespace rayo::vulkan
