// What every backend is to the core: a device and its memory. The ops a backend runs are the
// dispatcher's side of it (dispatch/backend.hpp, the interface backends implement, extends this one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "rayo/device.hpp"
#include "rayo/native.hpp"

namespace rayo::detail {

class DeviceBackend {
public:
    virtual ~DeviceBackend() = default;

    [[nodiscard]] virtual DeviceKind kind() const noexcept = 0;
    [[nodiscard]] virtual int index() const noexcept = 0;
    [[nodiscard]] virtual std::string name() const = 0;
    // Software devices (lavapipe) are never picked by Device::best().
    [[nodiscard]] virtual bool is_software() const noexcept { return false; }
    // Device::best() prefers a discrete GPU over integrated and virtual ones.
    [[nodiscard]] virtual bool is_discrete_gpu() const noexcept { return false; }

    // Memory. allocate(0) returns a valid handle; release never throws.
    [[nodiscard]] virtual std::uintptr_t allocate(std::size_t bytes) = 0;
    virtual void release(std::uintptr_t buffer) noexcept = 0;
    virtual void upload(std::uintptr_t dst, std::size_t offset, void const* src, std::size_t bytes) = 0;
    virtual void download(std::uintptr_t src, std::size_t offset, void* dst, std::size_t bytes) = 0;
    virtual void copy(std::uintptr_t src, std::size_t src_offset, std::uintptr_t dst, std::size_t dst_offset,
                      std::size_t bytes) = 0;
    // Fills `bytes` with a repeated pattern of `pattern_bytes` (1, 2, 4 or 8).
    virtual void fill(std::uintptr_t dst, std::size_t offset, std::size_t bytes, void const* pattern,
                      std::size_t pattern_bytes) = 0;
    // The host address of a buffer's first byte where the host reads and writes it directly (the
    // CPU's memory), else nullptr: copies between devices go through it.
    [[nodiscard]] virtual std::byte* host_address(std::uintptr_t buffer) const noexcept {
        (void)buffer;
        return nullptr;
    }
    // Native handles (rayo/native.hpp). The driver's view of a buffer's first byte: `handle` and
    // `offset` of a NativeMemory (the caller fills in its kind and size). By default the host
    // address, else rayo::Unsupported.
    [[nodiscard]] virtual NativeMemory native_memory(std::uintptr_t buffer) const;
    // Registers memory allocated elsewhere (checked by the caller against the tensor and its
    // alignment) as a buffer of `memory.bytes` bytes; throws rayo::Error where the backend cannot
    // use it (the message names why). forget() drops it once the work queued on it has finished;
    // release() is never called on it. By default rayo::Unsupported.
    [[nodiscard]] virtual std::uintptr_t adopt(NativeMemory const& memory);
    virtual void forget(std::uintptr_t buffer) noexcept { (void)buffer; }
    // The device's driver objects; none by default (the CPU).
    using NativeHandles = std::variant<std::monostate, CudaHandles, VulkanHandles>;
    [[nodiscard]] virtual NativeHandles native_handles() const { return {}; }
    virtual void synchronize() = 0;
    // What the backend holds on its device (Device::memory_usage): everything it allocated there,
    // tensors, temporaries and the free space of its pools. Safe to call from any thread.
    [[nodiscard]] virtual MemoryUsage memory_usage() const = 0;
    // Restarts the peaks from the current values.
    virtual void reset_peak_memory() = 0;
};

}  // namespace rayo::detail
