// The recording path every op's shader takes (shader_runner.hpp): tensor bindings, scratch
// buffers, and one dispatch with its descriptor set and push constants.
#include "vulkan/shader_runner.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "rayo/error.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace rayo::vulkan {

ScratchBuffer::~ScratchBuffer() {
    if (backend_) backend_->free_after(backend_->stream_.recording_serial(), allocation_, false);
}

PhysicalDevice const& ShaderRunner::physical() const noexcept { return backend_.device_.physical(); }

PathSwitches const& ShaderRunner::switches() const noexcept { return backend_.switches_; }

std::uint32_t ShaderRunner::workgroup_size() const noexcept {
    return std::min<std::uint32_t>(256, limits().maxComputeWorkGroupSize[0]);
}

std::uint32_t ShaderRunner::max_groups() const noexcept {
    std::uint32_t const groups = std::min<std::uint32_t>(65535, limits().maxComputeWorkGroupCount[0]);
    std::uint32_t const cap = switches().group_limit;
    return cap != 0 ? std::min(groups, cap) : groups;
}

void ShaderRunner::check_loop_budget(std::uint64_t iterations, std::string const& what) const {
    std::uint64_t const limit = physical().loop_iteration_limit;
    if (iterations > limit)
        throw Unsupported("vulkan: " + what + " needs about " + std::to_string(iterations) +
                          " loop iterations in one shader invocation, past the " + std::to_string(limit) + " that " +
                          physical().name() + " runs before it cuts loops short");
}

Binding ShaderRunner::bind(detail::TensorView const& view, std::size_t bytes, Access access, char const* what) {
    VulkanBackend::Buffer& b = backend_.buffer(view.buffer);
    backend_.check_range(b, view.offset, bytes, what);
    if (backend_.capture_) backend_.capture_->buffers.push_back(view.buffer);
    std::size_t const element = size_of(view.dtype);
    if (element > 0 && view.offset % std::min<std::size_t>(element, 4) != 0)
        throw Unsupported(std::string("vulkan: ") + what + " starts at byte offset " + std::to_string(view.offset) +
                          ", not a multiple of its element size");
    return {b.allocation.buffer, b.allocation.offset, b.allocation.size, view.offset, bytes, access, &b.last_use};
}

ScratchTensor::ScratchTensor(VulkanBackend& backend, std::size_t bytes)
    : backend_(&backend), handle_(backend.allocate_locked(std::max<std::size_t>(bytes, 4))) {}

ScratchTensor::~ScratchTensor() { backend_->release_locked(handle_); }

ScratchBuffer ShaderRunner::scratch(std::size_t bytes) {
    Allocation a;
    try {
        a = backend_.device_memory_.allocate(std::max<std::size_t>(bytes, 4));
    } catch (OutOfMemory const&) {
        backend_.stream_.wait(backend_.stream_.recording_serial());  // what work in flight frees may be enough
        backend_.reclaim();
        a = backend_.device_memory_.allocate(std::max<std::size_t>(bytes, 4));
    }
    return ScratchBuffer(backend_, a);
}

ScratchBuffer const& ShaderRunner::kept_scratch(std::size_t bytes) {
    // The next op that asks may write it while a captured command still reads it at each replay.
    if (backend_.capture_)
        throw Unsupported("vulkan: an op whose scratch buffer is shared with later ops, in a capture");
    auto& kept = backend_.kept_scratch_;
    if (!kept || kept->size() < bytes) {
        kept.reset();
        kept.emplace(scratch(bytes));
    }
    return *kept;
}

bool ShaderRunner::dispatchable(std::span<std::byte const> push, Groups groups) const {
    if (push.size() > max_push_constant_bytes)
        throw Error("vulkan: " + std::to_string(push.size()) + " bytes of push constants exceed " +
                    std::to_string(max_push_constant_bytes));
    auto const& lim = limits();
    if (groups.x == 0 || groups.y == 0 || groups.z == 0) return false;
    if (groups.x > lim.maxComputeWorkGroupCount[0] || groups.y > lim.maxComputeWorkGroupCount[1] ||
        groups.z > lim.maxComputeWorkGroupCount[2])
        throw Error("vulkan: dispatch of " + std::to_string(groups.x) + "x" + std::to_string(groups.y) + "x" +
                    std::to_string(groups.z) + " workgroups exceeds the device's maxComputeWorkGroupCount");
    return true;
}

void ShaderRunner::dispatch(Shader shader, SpecConstants const& constants, std::span<Binding const> args,
                            std::span<std::byte const> push, Groups groups) {
    if (!dispatchable(push, groups)) return;
    dispatch(backend_.pipelines_.get(shader, constants, backend_.denorm_mode()), shader_code(shader).name, args, push,
             groups);
}

void ShaderRunner::dispatch(Pipeline const& p, std::string_view name, std::span<Binding const> args,
                            std::span<std::byte const> push, Groups groups) {
    if (!dispatchable(push, groups)) return;
    if (args.size() != p.bindings)
        throw Error("vulkan: a dispatch passed " + std::to_string(args.size()) + " buffers to a shader with " +
                    std::to_string(p.bindings) + " bindings");

    CommandStream& stream = backend_.stream_;
    VkDescriptorSet const set = stream.descriptor_set(p.set_layout);
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
    auto const& device = backend_.device_;
    auto const& fn = device.fn();
    fn.vkUpdateDescriptorSets(device.handle(), static_cast<std::uint32_t>(writes.size()), writes.data(), 0, nullptr);
    VkCommandBuffer cmd = stream.record(accesses, name);
    fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    fn.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
    if (!push.empty())
        fn.vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<std::uint32_t>(push.size()),
                              push.data());
    fn.vkCmdDispatch(cmd, groups.x, groups.y, groups.z);
    std::uint64_t const serial = stream.recording_serial();
    for (Binding const& a : args)
        if (a.last_use) *a.last_use = serial;
}

Binding ShaderRunner::fault_record() { return backend_.fault_record(); }

void ShaderRunner::fill(Binding const& target, std::uint32_t word) {
    if (target.bytes == 0) return;
    BufferAccess const access{target.buffer, target.base + target.offset, target.bytes, true};
    VkCommandBuffer cmd = backend_.stream_.record({&access, 1}, "fill");
    backend_.device_.fn().vkCmdFillBuffer(cmd, target.buffer, target.base + target.offset, target.bytes, word);
    if (target.last_use) *target.last_use = backend_.stream_.recording_serial();
}

}  // namespace rayo::vulkan
