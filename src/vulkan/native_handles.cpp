// The Vulkan backend's native handles (rayo/native.hpp): its instance, device and queue, the
// VkBuffer ranges tensors live in, and ranges of VkBuffers allocated elsewhere used as tensors.
#include <exception>
#include <string>

#include "core/logging.hpp"
#include "rayo/error.hpp"
#include "vulkan/instance.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace rayo::vulkan {

NativeMemory VulkanBackend::native_memory(std::uintptr_t buffer) const {
    std::lock_guard lock(mutex_);
    auto const it = buffers_.find(buffer);
    if (it == buffers_.end()) throw Error("vulkan: unknown buffer handle " + std::to_string(buffer));
    Allocation const& a = it->second.allocation;
    return {DeviceKind::vulkan, reinterpret_cast<std::uint64_t>(a.buffer), a.offset, 0};
}

std::uintptr_t VulkanBackend::adopt(NativeMemory const& memory) {
    std::string const what = "vulkan:" + std::to_string(index_) + ": from_native_memory of " +
                             std::to_string(memory.bytes) + " bytes at offset " + std::to_string(memory.offset);
    auto const& limits = device_.physical().properties.limits;
    if (memory.offset % limits.minStorageBufferOffsetAlignment != 0)
        throw Error(what + ": the offset is not a multiple of the device's minStorageBufferOffsetAlignment, " +
                    std::to_string(limits.minStorageBufferOffsetAlignment));
    if (memory.bytes > limits.maxStorageBufferRange)
        throw Unsupported(what + ": more than the largest storage buffer binding, " +
                          std::to_string(limits.maxStorageBufferRange) + " bytes (maxStorageBufferRange)");
    std::lock_guard lock(mutex_);
    refuse_while_captured("from_native_memory");
    auto const buffer = reinterpret_cast<VkBuffer>(memory.handle);
    for (auto const& [handle, b] : buffers_)
        if (b.allocation.buffer == buffer && memory.offset < b.allocation.offset + b.allocation.size &&
            b.allocation.offset < memory.offset + memory.bytes)
            throw Error(what + ": the range overlaps " +
                        (b.adopted ? std::string("memory already adopted") : std::string("a rayo tensor's memory")) +
                        ": use that tensor (or a view of it) instead");
    Allocation a;
    a.buffer = buffer;
    a.offset = memory.offset;
    a.size = memory.bytes;
    std::uintptr_t const handle = next_handle_++;
    buffers_.emplace(handle, Buffer{a, 0, true});
    return handle;
}

void VulkanBackend::forget(std::uintptr_t buffer) noexcept {
    std::lock_guard lock(mutex_);
    auto node = buffers_.extract(buffer);
    if (node.empty() || !node.mapped().adopted) return;
    // In a capture, the graph's replays may use it too, which its owner answers for (docs/api.md).
    if (capture_) return;
    try {
        if (node.mapped().last_use > stream_.completed_serial()) stream_.wait(node.mapped().last_use);
    } catch (std::exception const& e) {  // a lost device: nothing runs on the memory any more
        detail::log(LogLevel::error, std::string("rayo: vulkan: releasing native memory: ") + e.what());
    }
}

detail::DeviceBackend::NativeHandles VulkanBackend::native_handles() const {
    Instance const* const instance = Instance::get();
    return VulkanHandles{instance ? instance->handle() : nullptr, device_.physical().handle, device_.handle(),
                         device_.queue(), device_.physical().compute_queue_family};
}

}  // namespace rayo::vulkan
