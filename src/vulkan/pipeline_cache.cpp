#include "vulkan/pipeline_cache.hpp"

#include <functional>
#include <string_view>
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "core/kernel_dump.hpp"
#include "core/logging.hpp"
#include "rayo/error.hpp"
#include "vulkan/spirv_cooperative_matrix.hpp"
#include "vulkan/embedded_shaders.hpp"
#include "vulkan/vulkan_error.hpp"

namespace rayo::vulkan {

namespace {

// The storage buffers a shader declares: one past the highest `Binding` decoration in its SPIR-V
// (rayo's shaders bind storage buffers only, all in set 0).
std::uint32_t binding_count(std::span<std::uint32_t const> spirv) {
    constexpr std::uint32_t op_decorate = 71, decoration_binding = 33;
    std::uint32_t count = 0;
    for (std::size_t i = 5; i < spirv.size();) {  // after the 5-word header
        std::uint32_t const words = spirv[i] >> 16, opcode = spirv[i] & 0xffffu;
        if (words == 0) break;
        if (opcode == op_decorate && words >= 4 && spirv[i + 2] == decoration_binding)
            count = std::max(count, spirv[i + 3] + 1);
        i += words;
    }
    return count;
}

}  // namespace

PipelineCache::~PipelineCache() {
    auto const& fn = device_.fn();
    VkDevice const dev = device_.handle();
    for (auto& [key, p] : pipelines_) fn.vkDestroyPipeline(dev, p.pipeline, nullptr);
    for (auto& [key, m] : modules_) fn.vkDestroyShaderModule(dev, m, nullptr);
    for (auto& [code, u] : user_pipelines_) {
        fn.vkDestroyPipeline(dev, u.pipeline.pipeline, nullptr);
        fn.vkDestroyShaderModule(dev, u.module, nullptr);
    }
    for (auto& [key, l] : layouts_) {
        fn.vkDestroyPipelineLayout(dev, l.layout, nullptr);
        fn.vkDestroyDescriptorSetLayout(dev, l.set_layout, nullptr);
    }
    if (cache_) fn.vkDestroyPipelineCache(dev, cache_, nullptr);
}

PipelineCache::Layout const& PipelineCache::layout(std::uint32_t bindings) {
    if (auto it = layouts_.find(bindings); it != layouts_.end()) return it->second;
    auto const& fn = device_.fn();
    VkDevice const dev = device_.handle();
    std::vector<VkDescriptorSetLayoutBinding> b(bindings);
    for (std::uint32_t i = 0; i < bindings; ++i)
        b[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    set_info.bindingCount = bindings;
    set_info.pBindings = b.data();
    Layout l;
    check(fn.vkCreateDescriptorSetLayout(dev, &set_info, nullptr, &l.set_layout), "vkCreateDescriptorSetLayout");
    VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, max_push_constant_bytes};
    VkPipelineLayoutCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    info.setLayoutCount = 1;
    info.pSetLayouts = &l.set_layout;
    info.pushConstantRangeCount = 1;
    info.pPushConstantRanges = &push;
    if (VkResult r = fn.vkCreatePipelineLayout(dev, &info, nullptr, &l.layout); r != VK_SUCCESS) {
        fn.vkDestroyDescriptorSetLayout(dev, l.set_layout, nullptr);
        check(r, "vkCreatePipelineLayout");
    }
    return layouts_.emplace(bindings, l).first->second;
}

VkShaderModule PipelineCache::module(Shader shader, DenormMode mode) {
    auto const key = std::make_tuple(shader, mode);
    if (auto it = modules_.find(key); it != modules_.end()) return it->second;
    std::span<std::uint32_t const> code =
        mode == DenormMode::preserve ? shader_code(shader).denorm_preserve_code : shader_code(shader).code;
    // The cooperative-matrix shaders (the GEMM, the implicit-GEMM conv2d and attention, all on the
    // GEMM's matrix types) are compiled for VK_NV_cooperative_matrix; on a device that runs them
    // through the KHR extension their SPIR-V is rewritten for that.
    std::vector<std::uint32_t> khr_code;
    bool const cooperative = shader == Shader::matmul_coopmat || shader == Shader::conv2d_coopmat ||
                             shader == Shader::conv2d_coopmat_m64 || shader == Shader::attention_coopmat_d64 ||
                             shader == Shader::attention_coopmat_d80 || shader == Shader::attention_coopmat_d96 ||
                             shader == Shader::attention_coopmat_d128 || shader == Shader::attention_coopmat_d256;
    if (cooperative && device_.physical().cooperative_matrix == PhysicalDevice::CooperativeMatrix::khr) {
        khr_code = spirv::cooperative_matrix_nv_to_khr(code, spirv::gemm_matrix_types);
        code = khr_code;
    }
    detail::dump_kernel(std::string(shader_code(shader).name) +
                            (mode == DenormMode::preserve ? ".denorm_preserve" : "") + (khr_code.empty() ? "" : ".khr"),
                        ".spv", std::as_bytes(code));
    VkShaderModuleCreateInfo ci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    ci.codeSize = code.size_bytes();
    ci.pCode = code.data();
    VkShaderModule m = VK_NULL_HANDLE;
    check(device_.fn().vkCreateShaderModule(device_.handle(), &ci, nullptr, &m),
          "vkCreateShaderModule(" + std::string(shader_code(shader).name) + ")");
    return modules_.emplace(key, m).first->second;
}

void PipelineCache::log_subnormals_may_flush() {
    if (logged_subnormals_may_flush_) return;
    logged_subnormals_may_flush_ = true;
    PhysicalDevice const& physical = device_.physical();
    std::string const why = !physical.float_controls ? "it lacks VK_KHR_shader_float_controls"
                            : !physical.denorm_preserve_f32
                                ? "shaderDenormPreserveFloat32 is false"
                                : "denormBehaviorIndependence is NONE, so float32 alone cannot be set";
    detail::log(LogLevel::warn, "rayo: vulkan: " + physical.name() + " cannot keep float32 subnormals in shaders (" +
                                    why + "): results the CPU gives as subnormals may be flushed to zero on it");
}

Pipeline const& PipelineCache::get(Shader shader, SpecConstants const& constants, DenormMode mode) {
    bool const both_builds = !shader_code(shader).denorm_preserve_code.empty();
    if (!both_builds) mode = DenormMode::device_default;
    if (mode == DenormMode::preserve && !device_.physical().preserves_f32_subnormals())
        throw Error("vulkan: the DenormPreserve build of " + std::string(shader_code(shader).name) + " asked for on " +
                    device_.physical().name() + ", which cannot run it");
    auto const key = std::make_tuple(shader, mode, constants);
    if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
    auto const& fn = device_.fn();
    VkDevice const dev = device_.handle();
    if (!cache_) {
        VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
        check(fn.vkCreatePipelineCache(dev, &ci, nullptr, &cache_), "vkCreatePipelineCache");
    }
    std::uint32_t const bindings = binding_count(shader_code(shader).code);
    Layout const& l = layout(bindings);
    VkShaderModule const m = module(shader, mode);

    // The shader's constants 0-7, then the device's constant 31 (RAYO_FUSED_FMA, float_math.glsl),
    // which shaders that do not declare it ignore.
    constexpr std::uint32_t fused_fma_constant_id = 31;
    std::array<std::uint32_t, std::tuple_size_v<SpecConstants> + 1> data{};
    std::array<VkSpecializationMapEntry, data.size()> entries{};
    for (std::uint32_t i = 0; i < constants.size(); ++i) {
        data[i] = constants[i];
        entries[i] = {i, static_cast<std::uint32_t>(i * sizeof(std::uint32_t)), sizeof(std::uint32_t)};
    }
    data.back() = device_.physical().fused_fma ? 1u : 0u;
    entries.back() = {fused_fma_constant_id, static_cast<std::uint32_t>(constants.size() * sizeof(std::uint32_t)),
                      sizeof(std::uint32_t)};
    VkSpecializationInfo spec{};
    spec.mapEntryCount = static_cast<std::uint32_t>(entries.size());
    spec.pMapEntries = entries.data();
    spec.dataSize = sizeof(data);
    spec.pData = data.data();
    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = m;
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = &spec;
    ci.layout = l.layout;
    Pipeline p{VK_NULL_HANDLE, l.layout, l.set_layout, bindings};
    check(fn.vkCreateComputePipelines(dev, cache_, 1, &ci, nullptr, &p.pipeline),
          "vkCreateComputePipelines(" + std::string(shader_code(shader).name) + ")");
    if (both_builds) {
        ++(mode == DenormMode::preserve ? denorm_preserve_pipelines_ : denorm_default_pipelines_);
        if (mode == DenormMode::device_default && !device_.physical().preserves_f32_subnormals())
            log_subnormals_may_flush();
    }
    return pipelines_.emplace(key, p).first->second;
}

Pipeline const& PipelineCache::get_user(std::span<std::uint32_t const> code) {
    constexpr std::uint32_t spirv_magic = 0x07230203;
    if (code.size() < 5 || code[0] != spirv_magic)
        throw Error("vulkan: " + std::to_string(code.size()) +
                    " words that are not SPIR-V (no magic number 0x07230203)");
    if (auto it = user_pipelines_.find(code); it != user_pipelines_.end()) return it->second.pipeline;
    auto const& fn = device_.fn();
    VkDevice const dev = device_.handle();
    if (!cache_) {
        VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
        check(fn.vkCreatePipelineCache(dev, &ci, nullptr, &cache_), "vkCreatePipelineCache");
    }
    std::uint32_t const bindings = binding_count(code);
    Layout const& l = layout(bindings);
    detail::dump_kernel("user_shader_" + std::to_string(std::hash<std::string_view>{}(std::string_view(
                                             reinterpret_cast<char const*>(code.data()), code.size_bytes()))),
                        ".spv", std::as_bytes(code));
    VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mi.codeSize = code.size_bytes();
    mi.pCode = code.data();
    UserPipeline u;
    check(fn.vkCreateShaderModule(dev, &mi, nullptr, &u.module), "vkCreateShaderModule(a shader of one's own)");
    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = u.module;
    ci.stage.pName = "main";
    ci.layout = l.layout;
    u.pipeline = {VK_NULL_HANDLE, l.layout, l.set_layout, bindings};
    if (VkResult const r = fn.vkCreateComputePipelines(dev, cache_, 1, &ci, nullptr, &u.pipeline.pipeline);
        r != VK_SUCCESS) {
        fn.vkDestroyShaderModule(dev, u.module, nullptr);
        check(r, "vkCreateComputePipelines(a shader of one's own)");
    }
    return user_pipelines_.emplace(std::vector<std::uint32_t>(code.begin(), code.end()), u).first->second.pipeline;
}

}  // namespace rayo::vulkan
