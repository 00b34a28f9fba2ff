// Compute pipelines created once per (shader, specialization constants) and kept for the
// device's lifetime, with the descriptor-set and pipeline layouts they share. Not thread-safe:
// the backend's device mutex guards it.
#pragma once

#include <volk.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <tuple>
#include <vector>

#include "vulkan/embedded_shaders.hpp"
#include "vulkan/logical_device.hpp"

namespace rayo::vulkan {

// The float32 denormal mode a pipeline's shader was built with (cmake/RayoShaders.cmake builds the
// shaders that include float_controls.glsl twice; the others exist only in the default mode).
enum class DenormMode : std::uint8_t {
    device_default,  // the plain build: the device may flush subnormals to zero (NVIDIA does)
    preserve,        // the DenormPreserve build: subnormals kept, as on the CPU
};

// Specialization constants by constant_id (0: op code, 1: workgroup size, 2..8: shader-specific, e.g.
// tile shapes; 7 is the element type of the _element16 builds). Unused entries stay 0; ids a shader
// does not declare are ignored. get() adds constant 31 (RAYO_FUSED_FMA) from the device.
using SpecConstants = std::array<std::uint32_t, 9>;

// The push-constant range of every pipeline layout: the minimum maxPushConstantsSize Vulkan
// guarantees. A shader's push block may be any size up to this.
inline constexpr std::uint32_t max_push_constant_bytes = 128;

struct Pipeline {
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    std::uint32_t bindings = 0;  // storage buffers 0..bindings-1
};

class PipelineCache {
public:
    explicit PipelineCache(LogicalDevice const& device) : device_(device) {}
    ~PipelineCache();
    PipelineCache(PipelineCache const&) = delete;
    PipelineCache& operator=(PipelineCache const&) = delete;

    // `mode`: the build to use where the shader has both; preserve only on a device with
    // preserves_f32_subnormals(). The first pipeline of such a shader made in the default mode on a
    // device that cannot preserve logs (once) that its results may lose subnormals.
    [[nodiscard]] Pipeline const& get(Shader shader, SpecConstants const& constants, DenormMode mode);
    // A pipeline of a caller's SPIR-V (rayo::dispatch_vulkan_shader): storage buffers in set 0, a
    // push-constant block of at most max_push_constant_bytes, no specialization. Kept by its code.
    // rayo::Error for words that are not SPIR-V.
    [[nodiscard]] Pipeline const& get_user(std::span<std::uint32_t const> code);
    [[nodiscard]] std::size_t size() const noexcept { return pipelines_.size(); }
    // Pipelines made so far of the shaders built in both modes, by the mode used.
    [[nodiscard]] std::size_t pipelines_in(DenormMode mode) const noexcept {
        return mode == DenormMode::preserve ? denorm_preserve_pipelines_ : denorm_default_pipelines_;
    }

private:
    struct Layout {
        VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
        VkPipelineLayout layout = VK_NULL_HANDLE;
    };
    Layout const& layout(std::uint32_t bindings);
    VkShaderModule module(Shader shader, DenormMode mode);
    void log_subnormals_may_flush();

    LogicalDevice const& device_;
    VkPipelineCache cache_ = VK_NULL_HANDLE;
    std::map<std::uint32_t, Layout> layouts_;
    std::map<std::tuple<Shader, DenormMode>, VkShaderModule> modules_;
    std::map<std::tuple<Shader, DenormMode, SpecConstants>, Pipeline> pipelines_;
    struct UserPipeline {
        VkShaderModule module = VK_NULL_HANDLE;
        Pipeline pipeline;
    };
    // By code, found from the caller's span without a copy.
    struct CodeLess {
        using is_transparent = void;
        bool operator()(std::span<std::uint32_t const> a, std::span<std::uint32_t const> b) const noexcept {
            return std::ranges::lexicographical_compare(a, b);
        }
    };
    std::map<std::vector<std::uint32_t>, UserPipeline, CodeLess> user_pipelines_;
    std::size_t denorm_preserve_pipelines_ = 0;
    std::size_t denorm_default_pipelines_ = 0;
    bool logged_subnormals_may_flush_ = false;
};

}  // namespace rayo::vulkan
