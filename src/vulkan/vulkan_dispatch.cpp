// The general dispatch path of the Vulkan backend (see vulkan/dispatch.hpp): tensor bindings,
// scratch buffers, and recording one dispatch with its descriptor set and push constants.
#include <algorithm>
#include <string>
#include <vector>

#include "dispatch/registry.hpp"
#include "rayo/error.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace rayo::vulkan {

ScratchBuffer::~ScratchBuffer() {
    if (backend_) backend_->free_after(backend_->stream_.recording_serial(), allocation_, false);
}

Binding VulkanBackend::bind(detail::TensorView const& view, std::size_t bytes, Access access, char const* what) {
    Buffer& b = buffer(view.buffer);
    check_range(b, view.offset, bytes, what);
    std::size_t const element = size_of(view.dtype);
    if (element > 0 && view.offset % std::min<std::size_t>(element, 4) != 0)
        throw Unsupported(std::string("vulkan: ") + what + " starts at byte offset " + std::to_string(view.offset) +
                          ", not a multiple of its element size");
    return {b.allocation.buffer, b.allocation.offset, b.allocation.size, view.offset, bytes, access, &b.last_use};
}

ScratchBuffer VulkanBackend::scratch(std::size_t bytes) {
    Allocation a;
    try {
        a = device_memory_.allocate(std::max<std::size_t>(bytes, 4));
    } catch (OutOfMemory const&) {
        stream_.wait(stream_.recording_serial());  // what work in flight frees may be enough
        reclaim();
        a = device_memory_.allocate(std::max<std::size_t>(bytes, 4));
    }
    return ScratchBuffer(*this, a);
}

std::uint32_t VulkanBackend::max_groups() const noexcept {
    return std::min<std::uint32_t>(65535, device_.physical().properties.limits.maxComputeWorkGroupCount[0]);
}

void VulkanBackend::dispatch(Shader shader, SpecConstants const& constants, std::span<Binding const> args,
                             std::span<std::byte const> push, Groups groups) {
    if (push.size() > max_push_constant_bytes)
        throw Error("vulkan: " + std::to_string(push.size()) + " bytes of push constants exceed " +
                    std::to_string(max_push_constant_bytes));
    auto const& limits = device_.physical().properties.limits;
    if (groups.x == 0 || groups.y == 0 || groups.z == 0) return;
    if (groups.x > limits.maxComputeWorkGroupCount[0] || groups.y > limits.maxComputeWorkGroupCount[1] ||
        groups.z > limits.maxComputeWorkGroupCount[2])
        throw Error("vulkan: dispatch of " + std::to_string(groups.x) + "x" + std::to_string(groups.y) + "x" +
                    std::to_string(groups.z) + " workgroups exceeds the device's maxComputeWorkGroupCount");
    Pipeline const& p = pipelines_.get(shader, constants, denorm_mode());
    if (args.size() != p.bindings)
        throw Error("vulkan: a dispatch passed " + std::to_string(args.size()) + " buffers to a shader with " +
                    std::to_string(p.bindings) + " bindings");

    VkDescriptorSet const set = stream_.descriptor_set(p.set_layout);
    std::vector<VkDescriptorBufferInfo> infos(args.size());
    std::vector<VkWriteDescriptorSet> writes(args.size());
    std::vector<BufferAccess> accesses;
    accesses.reserve(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) {
        Binding const& a = args[i];
        infos[i] = {a.buffer, a.base, a.size};
        writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[i].dstSet = set;
        writes[i].dstBinding = static_cast<std::uint32_t>(i);
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
        if (a.bytes > 0) accesses.push_back({a.buffer, a.base + a.offset, a.bytes, a.access == Access::write});
    }
    auto const& fn = device_.fn();
    fn.vkUpdateDescriptorSets(device_.handle(), static_cast<std::uint32_t>(writes.size()), writes.data(), 0, nullptr);
    VkCommandBuffer cmd = stream_.record(accesses);
    fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    fn.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
    if (!push.empty())
        fn.vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<std::uint32_t>(push.size()),
                              push.data());
    fn.vkCmdDispatch(cmd, groups.x, groups.y, groups.z);
    std::uint64_t const serial = stream_.recording_serial();
    for (Binding const& a : args)
        if (a.last_use) *a.last_use = serial;
}

void VulkanBackend::use_subgroups(bool enabled) {
    std::lock_guard lock(mutex_);
    use_subgroups_ = enabled;
}

void use_subgroups(Device device, bool enabled) {
    backend_of(device).use_subgroups(enabled);
}

SubnormalSupport VulkanBackend::subnormal_support() const {
    std::lock_guard lock(mutex_);
    PhysicalDevice const& physical = device_.physical();
    SubnormalSupport s;
    s.float_controls = physical.float_controls;
    s.denorm_preserve_f32 = physical.denorm_preserve_f32;
    switch (physical.denorm_independence) {
        case VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_32_BIT_ONLY: s.denorm_independence = "32-bit only"; break;
        case VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_ALL: s.denorm_independence = "all"; break;
        default: s.denorm_independence = "none"; break;
    }
    s.device_preserves = physical.preserves_f32_subnormals();
    s.preserving = denorm_mode() == DenormMode::preserve;
    s.preserving_pipelines = pipelines_.pipelines_in(DenormMode::preserve);
    s.default_mode_pipelines = pipelines_.pipelines_in(DenormMode::device_default);
    return s;
}

void VulkanBackend::use_denorm_preserve(bool enabled) {
    std::lock_guard lock(mutex_);
    use_denorm_preserve_ = enabled;
}

SubnormalSupport subnormal_support(Device device) {
    return backend_of(device).subnormal_support();
}

void use_denorm_preserve(Device device, bool enabled) {
    backend_of(device).use_denorm_preserve(enabled);
}

bool has_subgroup_arithmetic(Device device) {
    return backend_of(device).has_subgroup_arithmetic();
}

}  // namespace rayo::vulkan
