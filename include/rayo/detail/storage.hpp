// The memory behind tensors: one allocation on one device, shared by a tensor and its views.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "rayo/device.hpp"
#include "rayo/export.hpp"

namespace rayo::detail {

class DeviceBackend;

// Tensors hold it through std::shared_ptr; a capture (rayo::Graph) keeps weak references to what
// its ops use.
class RAYO_API Storage : public std::enable_shared_from_this<Storage> {
public:
    // Allocates `bytes` on `device` (contents undefined).
    Storage(Device device, std::size_t bytes);
    // Memory allocated elsewhere that `backend` adopted as `handle` (rayo::from_native_memory):
    // the destructor has the backend forget it, then calls `release` (when given).
    Storage(Device device, DeviceBackend& backend, std::uintptr_t handle, std::size_t bytes,
            std::function<void()> release);
    ~Storage();
    Storage(Storage const&) = delete;
    Storage& operator=(Storage const&) = delete;

    [[nodiscard]] Device device() const noexcept { return device_; }
    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
    // Backend-specific handle (a host pointer on the CPU).
    [[nodiscard]] std::uintptr_t handle() const noexcept { return handle_; }
    [[nodiscard]] DeviceBackend& backend() const noexcept { return *backend_; }
    // True for memory allocated elsewhere.
    [[nodiscard]] bool adopted() const noexcept { return adopted_; }

    // Bounds are checked by the callers (Tensor); these move bytes between host and device.
    void upload(std::size_t offset, void const* src, std::size_t bytes);
    void download(std::size_t offset, void* dst, std::size_t bytes) const;
    void fill(std::size_t offset, std::size_t bytes, void const* pattern, std::size_t pattern_bytes);
    static void copy(Storage const& src, std::size_t src_offset, Storage& dst, std::size_t dst_offset,
                     std::size_t bytes);

private:
    Device device_;
    DeviceBackend* backend_;  // the device's backend, found once
    std::size_t bytes_;
    std::uintptr_t handle_;
    bool adopted_ = false;
    std::function<void()> release_;  // the owner's, for adopted memory
};

}  // namespace rayo::detail
