// What the Vulkan backend exposes to tests (and to nothing else): the validation layer's message
// count and the allocators' state. Free of Vulkan headers so tests need none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rayo/device.hpp"

namespace rayo::vulkan {

// Whether VK_LAYER_KHRONOS_validation and its debug messenger are active (RAYO_VULKAN_VALIDATION=1).
[[nodiscard]] bool validation_enabled() noexcept;
// Warnings and errors the validation layer has reported in this process (each is also logged).
[[nodiscard]] std::uint64_t validation_message_count() noexcept;

struct MemoryStats {
    std::size_t device_blocks = 0;       // VkDeviceMemory blocks behind tensors
    std::size_t staging_blocks = 0;      // host-visible blocks behind uploads and downloads
    std::size_t live_buffers = 0;        // tensor allocations not yet released
    std::size_t pending_frees = 0;       // released, waiting for the GPU to finish with them
    std::uint64_t heap_bytes = 0;        // the device-local heap tensors are carved from
    std::uint64_t max_buffer_bytes = 0;  // the largest tensor allocation (one storage binding)
};
// Throws rayo::Error when `device` is not a Vulkan device of this process.
[[nodiscard]] MemoryStats memory_stats(Device device);

// Whether the device is a software one (lavapipe: its shaders run on this CPU).
[[nodiscard]] bool is_software_device(Device device);
// Caps the workgroups of a dispatch at `groups` a dimension (0 restores the device's limit), as a
// device with a smaller grid would: tests reach the paths of tensors past one dispatch's grid (loops
// over the grid, split dispatches, other kernels) with small tensors.
void limit_groups(Device device, std::uint32_t groups);
// Whether the device's compute shaders have subgroup arithmetic (reductions then use it).
[[nodiscard]] bool has_subgroup_arithmetic(Device device);
// false makes reductions, softmax and norms take their shared-memory path even where subgroup
// arithmetic exists, so tests cover both paths; true restores the default.
void use_subgroups(Device device, bool enabled);
// Whether matmul has its cooperative-matrix GEMM on the device (f16 · f16, and linear's f32 x with
// f16 weights, x then rounded to f16).
[[nodiscard]] bool has_cooperative_matrix(Device device);
// The cooperative-matrix GEMM's SPIR-V as built (for VK_NV_cooperative_matrix) or, with `khr`, as
// the backend rewrites it for VK_KHR_cooperative_matrix. Needs no device.
[[nodiscard]] std::vector<std::uint32_t> cooperative_matrix_gemm_spirv(bool khr);
// false turns off matmul's 16-bit-storage reads of f16 (packed words instead) or its
// cooperative-matrix GEMM, so tests cover the portable paths too; true restores the default.
void use_matmul_features(Device device, bool storage16, bool cooperative_matrix);
// false makes the element-wise, row and reduction ops of f16 / bf16 tensors run on the CPU, as on a
// device without 16-bit storage, so tests cover that fallback; true restores the default.
void use_element16_builds(Device device, bool enabled);
// false makes linear with K-quant weights and many rows of x decode the weights in the tiled GEMM's
// loads instead of into an f32 scratch copy first (the path for copies larger than one binding),
// so tests cover both; true restores the default.
void use_decoded_kquant_gemm(Device device, bool decode_first);
// Whether the device has 4x8-bit integer dot products (VK_KHR_shader_integer_dot_product).
[[nodiscard]] bool has_integer_dot_product(Device device);
// Which build the one-row q4_k GEMV runs: true its integer-dot-product build wherever the device
// has the feature (accelerated or not, so tests cover it on any such device), false the f32 one,
// nullopt the default (the integer build where the device accelerates 4x8-bit products).
void use_integer_dot_product(Device device, std::optional<bool> enabled);
// The f32 GEMM's tile, process-wide (src/vulkan/ops/matmul.cpp). use_gemm_tile: every f32 x f32
// matmul runs this RAYO_VULKAN_GEMM_TILE value ("" restores the default); throws rayo::Error on
// anything else. gemm_tile_names: the values it takes. last_gemm_tile: what the last f32 x f32
// matmul ran, e.g. "128x128x8 a:vec4 b:scalar out:vec4" or "tiled".
void use_gemm_tile(std::string_view tile);
[[nodiscard]] std::vector<std::string> gemm_tile_names();
[[nodiscard]] std::string last_gemm_tile();

// Whether the device keeps float32 subnormals in rayo's shaders, as the CPU backend does. Shaders
// whose results can be subnormal are built twice (shaders/float_controls.glsl): with the SPIR-V
// execution mode DenormPreserve, used where the device allows it, and plainly, with which a device
// may flush subnormals to zero (NVIDIA's driver does); the first such pipeline made on a device
// that cannot preserve logs a warning.
struct SubnormalSupport {
    bool float_controls = false;       // VK_KHR_shader_float_controls (enabled when present)
    bool denorm_preserve_f32 = false;  // shaderDenormPreserveFloat32
    std::string denorm_independence;   // denormBehaviorIndependence: "all", "32-bit only" or "none"
    bool device_preserves = false;     // all three allow DenormPreserve for float32 alone
    bool preserving = false;           // ops run the DenormPreserve builds (device_preserves, unless turned off)
    // Pipelines made so far from shaders built both ways, by the build used.
    std::size_t preserving_pipelines = 0;
    std::size_t default_mode_pipelines = 0;
};
// Throws rayo::Error when `device` is not a Vulkan device of this process.
[[nodiscard]] SubnormalSupport subnormal_support(Device device);
// false makes every op run its default-mode build even where the device could preserve
// subnormals, so tests cover that path too; true restores the default.
void use_denorm_preserve(Device device, bool enabled);

// GPU time by command (gpu_profile.hpp; RAYO_VULKAN_PROFILE=1 turns it on for every Vulkan device
// and prints each device's table at exit). set_profiling: on or off for the batches begun from now
// on; throws rayo::Unsupported on a device whose compute queue writes no timestamps.
// profile_table: runs what is recorded and returns the table so far; nullopt when profiling never
// ran on the device.
void set_profiling(Device device, bool on);
[[nodiscard]] std::optional<std::string> profile_table(Device device);

}  // namespace rayo::vulkan
