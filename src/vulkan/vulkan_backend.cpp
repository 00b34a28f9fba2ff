#include "vulkan/vulkan_backend.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <variant>

#include "core/logging.hpp"
#include "dispatch/device_fault.hpp"
#include "core/device_registry.hpp"
#include "vulkan/ops/ops.hpp"
#include "rayo/error.hpp"
#include "vulkan/vulkan_error.hpp"

namespace rayo::vulkan {

using detail::TensorView;

VulkanBackend::VulkanBackend(PhysicalDevice const& physical, int index)
    : index_(index),
      device_(physical),
      device_memory_(device_, MemoryKind::device_local, memory_counters_),
      staging_memory_(device_, MemoryKind::staging, memory_counters_),
      stream_(device_),
      pipelines_(device_) {}

VulkanBackend::~VulkanBackend() {
    std::lock_guard lock(mutex_);
    kept_scratch_.reset();  // into pending_, freed below
    try {
        stream_.wait(stream_.recording_serial());
    } catch (std::exception const& e) {
        detail::log(LogLevel::error, std::string("rayo: vulkan: waiting for the device at exit: ") + e.what());
    }
    for (auto const& p : pending_) (p.staging ? staging_memory_ : device_memory_).free(p.allocation);
    pending_.clear();
    if (fault_record_) device_memory_.free(*fault_record_);
    // Tensors that outlive the backend (static ones, at exit): their memory goes with the device.
    for (auto const& [handle, b] : buffers_) device_memory_.free(b.allocation);
}

VulkanBackend::Buffer& VulkanBackend::buffer(std::uintptr_t handle) {
    auto it = buffers_.find(handle);
    if (it == buffers_.end()) throw Error("vulkan: unknown buffer handle " + std::to_string(handle));
    return it->second;
}

void VulkanBackend::check_range(Buffer const& b, std::size_t offset, std::size_t bytes, char const* what) const {
    if (offset > b.allocation.size || bytes > b.allocation.size - offset)
        throw Error(std::string("vulkan: ") + what + " of " + std::to_string(bytes) + " bytes at offset " +
                    std::to_string(offset) + " exceeds the buffer's " + std::to_string(b.allocation.size) + " bytes");
}

void VulkanBackend::free_after(std::uint64_t serial, Allocation const& a, bool staging) {
    if (capture_) {  // a recorded command may use it at every replay
        capture_->kept.push_back({serial, a, staging});
        return;
    }
    if (serial <= stream_.completed_serial())
        (staging ? staging_memory_ : device_memory_).free(a);
    else
        pending_.push_back({serial, a, staging});
}

void VulkanBackend::reclaim() {
    if (pending_.empty()) return;
    std::uint64_t const done = stream_.completed_serial();
    std::erase_if(pending_, [&](PendingFree const& p) {
        if (p.serial > done) return false;
        (p.staging ? staging_memory_ : device_memory_).free(p.allocation);
        return true;
    });
}

std::uintptr_t VulkanBackend::allocate(std::size_t bytes) {
    std::lock_guard lock(mutex_);
    return allocate_locked(bytes);
}

std::uintptr_t VulkanBackend::allocate_locked(std::size_t bytes) {
    auto const& limits = device_.physical().properties.limits;
    // The heap first: a request no heap can hold is out of memory, whatever the binding limit.
    if (bytes > device_memory_.heap_bytes())
        throw OutOfMemory("vulkan:" + std::to_string(index_) + " (" + device_.physical().name() +
                          "): cannot allocate " + std::to_string(bytes) + " bytes: the device-local heap holds " +
                          std::to_string(device_memory_.heap_bytes()) + " bytes");
    if (bytes > limits.maxStorageBufferRange)
        throw Unsupported("vulkan:" + std::to_string(index_) + " (" + device_.physical().name() + "): a tensor of " +
                          std::to_string(bytes) + " bytes exceeds the largest storage buffer binding, " +
                          std::to_string(limits.maxStorageBufferRange) +
                          " bytes (maxStorageBufferRange); such a tensor must be split into smaller ones");
    std::optional<Allocation> const reserved = reserve_or_wait(false, bytes);
    Allocation a;
    try {
        a = reserved ? *reserved : device_memory_.allocate(bytes);
    } catch (OutOfMemory const&) {
        // Memory released by work still in flight may be enough: wait for it, then try once more.
        stream_.wait(stream_.recording_serial());
        reclaim();
        a = device_memory_.allocate(bytes);
    }
    std::uintptr_t const handle = next_handle_++;
    buffers_.emplace(handle, Buffer{a, 0});
    return handle;
}

void VulkanBackend::release(std::uintptr_t handle) noexcept {
    std::lock_guard lock(mutex_);
    release_locked(handle);
}

void VulkanBackend::release_locked(std::uintptr_t handle) noexcept {
    auto node = buffers_.extract(handle);
    if (node.empty()) return;
    try {
        free_after(node.mapped().last_use, node.mapped().allocation, false);
    } catch (std::exception const& e) {  // a lost device: the memory goes with it
        detail::log(LogLevel::error, std::string("rayo: vulkan: release: ") + e.what());
    }
}

std::optional<Allocation> VulkanBackend::reserve_or_wait(bool staging, std::size_t bytes) {
    MemoryAllocator& memory = staging ? staging_memory_ : device_memory_;
    reclaim();
    std::optional<Allocation> reserved = memory.allocate_reserved(bytes);
    while (!reserved) {
        std::optional<std::uint64_t> serial;
        for (PendingFree const& p : pending_)
            if (p.staging == staging && memory.would_serve(p.allocation, bytes))
                serial = std::min(serial.value_or(p.serial), p.serial);
        if (!serial) break;
        stream_.wait(*serial);
        reclaim();
        reserved = memory.allocate_reserved(bytes);
    }
    return reserved;
}

void VulkanBackend::upload(std::uintptr_t dst, std::size_t offset, void const* src, std::size_t bytes) {
    if (bytes == 0) return;
    std::lock_guard lock(mutex_);
    refuse_while_captured("an upload");
    Buffer& b = buffer(dst);
    check_range(b, offset, bytes, "upload");
    // In pieces of a quarter of a staging block, each submitted once copied, so that a large
    // upload (a model's weights) reuses a few blocks, the GPU copying one piece while the host
    // fills the next, instead of a dedicated staging allocation the size of the tensor.
    std::size_t const piece = std::max<std::size_t>(staging_memory_.block_bytes() / 4, 1);
    auto const* from = static_cast<std::byte const*>(src);
    for (std::size_t done = 0; done < bytes;) {
        std::size_t const n = std::min(piece, bytes - done);
        std::optional<Allocation> const reserved = reserve_or_wait(true, n);
        Allocation const staging = reserved ? *reserved : staging_memory_.allocate(n);
        std::memcpy(staging.mapped, from + done, n);  // coherent: visible to the device at submit
        BufferAccess const accesses[] = {{staging.buffer, staging.offset, n, false},
                                         {b.allocation.buffer, b.allocation.offset + offset + done, n, true}};
        VkCommandBuffer cmd = stream_.record(accesses, "upload");
        VkBufferCopy region{staging.offset, b.allocation.offset + offset + done, n};
        device_.fn().vkCmdCopyBuffer(cmd, staging.buffer, b.allocation.buffer, 1, &region);
        std::uint64_t const serial = stream_.recording_serial();
        b.last_use = serial;
        free_after(serial, staging, true);
        done += n;
        if (bytes > piece)
            stream_.flush();
        else
            stream_.submit_if_large();
    }
}

void VulkanBackend::download(std::uintptr_t src, std::size_t offset, void* dst, std::size_t bytes) {
    if (bytes == 0) return;
    std::lock_guard lock(mutex_);
    refuse_while_captured("a download");
    Buffer& b = buffer(src);
    check_range(b, offset, bytes, "download");
    reclaim();
    Allocation const staging = staging_memory_.allocate(bytes);
    BufferAccess const accesses[] = {{b.allocation.buffer, b.allocation.offset + offset, bytes, false},
                                     {staging.buffer, staging.offset, bytes, true}};
    VkCommandBuffer cmd = stream_.record(accesses, "download");
    VkBufferCopy region{b.allocation.offset + offset, staging.offset, bytes};
    device_.fn().vkCmdCopyBuffer(cmd, b.allocation.buffer, staging.buffer, 1, &region);
    std::uint64_t const serial = stream_.recording_serial();
    b.last_use = serial;
    try {
        stream_.wait(serial);
    } catch (...) {
        free_after(serial, staging, true);
        throw;
    }
    std::memcpy(dst, staging.mapped, bytes);
    staging_memory_.free(staging);
    reclaim();
    raise_recorded_fault();
}

void VulkanBackend::copy(std::uintptr_t src, std::size_t src_offset, std::uintptr_t dst, std::size_t dst_offset,
                         std::size_t bytes) {
    if (bytes == 0) return;
    std::lock_guard lock(mutex_);
    refuse_while_captured("a copy");
    Buffer& s = buffer(src);
    Buffer& d = buffer(dst);
    check_range(s, src_offset, bytes, "copy source");
    check_range(d, dst_offset, bytes, "copy destination");
    VkDeviceSize const from = s.allocation.offset + src_offset, to = d.allocation.offset + dst_offset;
    bool const overlapping = s.allocation.buffer == d.allocation.buffer && from < to + bytes && to < from + bytes;
    if (overlapping && from == to) return;
    reclaim();
    auto const& fn = device_.fn();
    std::uint64_t const serial = stream_.recording_serial();
    if (!overlapping) {
        BufferAccess const accesses[] = {{s.allocation.buffer, from, bytes, false},
                                         {d.allocation.buffer, to, bytes, true}};
        VkCommandBuffer cmd = stream_.record(accesses, "copy");
        VkBufferCopy region{from, to, bytes};
        fn.vkCmdCopyBuffer(cmd, s.allocation.buffer, d.allocation.buffer, 1, &region);
    } else {
        // vkCmdCopyBuffer forbids overlapping regions: go through a temporary buffer (memmove).
        Allocation const tmp = device_memory_.allocate(bytes);
        BufferAccess const first[] = {{s.allocation.buffer, from, bytes, false}, {tmp.buffer, tmp.offset, bytes, true}};
        VkBufferCopy region{from, tmp.offset, bytes};
        fn.vkCmdCopyBuffer(stream_.record(first, "copy"), s.allocation.buffer, tmp.buffer, 1, &region);
        BufferAccess const second[] = {{tmp.buffer, tmp.offset, bytes, false}, {d.allocation.buffer, to, bytes, true}};
        region = {tmp.offset, to, bytes};
        fn.vkCmdCopyBuffer(stream_.record(second, "copy"), tmp.buffer, d.allocation.buffer, 1, &region);
        free_after(serial, tmp, false);
    }
    s.last_use = d.last_use = serial;
    stream_.submit_if_large();
}

void VulkanBackend::fill(std::uintptr_t dst, std::size_t offset, std::size_t bytes, void const* pattern,
                         std::size_t pattern_bytes) {
    if (bytes == 0) return;
    std::uint32_t word = 0;
    bool const word_pattern = pattern_bytes == 1 || pattern_bytes == 2 || pattern_bytes == 4;
    if (word_pattern)
        for (std::size_t i = 0; i < 4; i += pattern_bytes)
            std::memcpy(reinterpret_cast<std::byte*>(&word) + i, pattern, pattern_bytes);
    if (!word_pattern || offset % 4 != 0 || bytes % 4 != 0) {
        // vkCmdFillBuffer writes 4-byte words at 4-byte offsets: anything else is uploaded.
        std::vector<std::byte> host(bytes);
        for (std::size_t i = 0; i + pattern_bytes <= bytes; i += pattern_bytes)
            std::memcpy(host.data() + i, pattern, pattern_bytes);
        upload(dst, offset, host.data(), bytes);
        return;
    }
    std::lock_guard lock(mutex_);
    refuse_while_captured("a fill");
    Buffer& b = buffer(dst);
    check_range(b, offset, bytes, "fill");
    reclaim();
    BufferAccess const access{b.allocation.buffer, b.allocation.offset + offset, bytes, true};
    VkCommandBuffer cmd = stream_.record({&access, 1}, "fill");
    device_.fn().vkCmdFillBuffer(cmd, b.allocation.buffer, b.allocation.offset + offset, bytes, word);
    b.last_use = stream_.recording_serial();
    stream_.submit_if_large();
}

void VulkanBackend::synchronize() {
    std::lock_guard lock(mutex_);
    refuse_while_captured("synchronize()");
    stream_.wait(stream_.recording_serial());
    reclaim();
    raise_recorded_fault();
}

Binding VulkanBackend::fault_record() {
    constexpr VkDeviceSize bytes = detail::device_fault_record_bytes;
    if (!fault_record_) {
        Allocation const a = device_memory_.allocate(bytes);
        BufferAccess const access{a.buffer, a.offset, bytes, true};
        device_.fn().vkCmdFillBuffer(stream_.record({&access, 1}, "fill"), a.buffer, a.offset, bytes, 0);
        fault_record_ = a;
    }
    fault_pending_ = true;
    Allocation const& a = *fault_record_;
    return {a.buffer, a.offset, a.size, 0, bytes, Access::write, nullptr};
}

void VulkanBackend::raise_recorded_fault() {
    if (!fault_pending_) return;
    fault_pending_ = false;
    constexpr VkDeviceSize bytes = detail::device_fault_record_bytes;
    Allocation const& record = *fault_record_;
    Allocation const staging = staging_memory_.allocate(bytes);
    BufferAccess const accesses[] = {{record.buffer, record.offset, bytes, false},
                                     {staging.buffer, staging.offset, bytes, true}};
    VkBufferCopy const region{record.offset, staging.offset, bytes};
    device_.fn().vkCmdCopyBuffer(stream_.record(accesses, "download"), record.buffer, staging.buffer, 1, &region);
    std::uint64_t const serial = stream_.recording_serial();
    try {
        stream_.wait(serial);
    } catch (...) {
        free_after(serial, staging, true);
        throw;
    }
    detail::DeviceFaultRecord found{};
    std::memcpy(found.data(), staging.mapped, bytes);
    staging_memory_.free(staging);
    if (!detail::raised(found)) return;
    BufferAccess const clear{record.buffer, record.offset, bytes, true};
    device_.fn().vkCmdFillBuffer(stream_.record({&clear, 1}, "fill"), record.buffer, record.offset, bytes, 0);
    throw detail::device_fault_error(found, "vulkan:" + std::to_string(index_));
}

detail::Support VulkanBackend::supports(detail::OpDescriptor const& op, detail::OpViews const& views) const {
    std::lock_guard lock(mutex_);
    ShaderRunner const runner(const_cast<VulkanBackend&>(*this));
    return std::visit([&](auto const& d) { return ops::supports(runner, d, views); }, op);
}

void VulkanBackend::run(detail::OpDescriptor const& op, detail::OpViews const& views) {
    std::lock_guard lock(mutex_);
    refuse_while_captured("an op");
    reclaim();
    ShaderRunner runner(*this);
    std::visit([&](auto const& d) { ops::run(runner, d, views); }, op);
    stream_.submit_if_large();
}

MemoryStats VulkanBackend::memory_stats() const {
    std::lock_guard lock(mutex_);
    MemoryStats s;
    s.device_blocks = device_memory_.block_count();
    s.staging_blocks = staging_memory_.block_count();
    s.live_buffers = buffers_.size();
    s.pending_frees = pending_.size();
    s.heap_bytes = device_memory_.heap_bytes();
    s.max_buffer_bytes = std::min<std::uint64_t>(device_.physical().properties.limits.maxStorageBufferRange,
                                                 device_.physical().max_allocation_bytes);
    return s;
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

PathSwitches VulkanBackend::switches() const {
    std::lock_guard lock(mutex_);
    return switches_;
}

void VulkanBackend::set_switches(PathSwitches const& switches) {
    std::lock_guard lock(mutex_);
    switches_ = switches;
}

void VulkanBackend::set_profiling(bool on) {
    std::lock_guard lock(mutex_);
    stream_.set_profiling(on);
}

std::optional<std::string> VulkanBackend::profile_table() {
    std::lock_guard lock(mutex_);
    return stream_.profile_table();
}

VulkanBackend& backend_of(Device device) {
    auto* b = dynamic_cast<VulkanBackend*>(&detail::DeviceRegistry::instance().backend(device));
    if (!b) throw Error(device.id() + " is not a Vulkan device");
    return *b;
}

}  // namespace rayo::vulkan
