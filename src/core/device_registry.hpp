// The devices present in this process: the CPU, then those the backends find at run time. The core
// knows no backend by name: each one contributes a factory (BackendFactory), listed once for the
// library in dispatch/backend_list.cpp. GPU backends are looked for the first time a device of
// their kind is asked for (Device::all(), best(), parse(), or a tensor on such a device), so a
// program that only uses the CPU never loads a GPU driver.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "core/device_backend.hpp"

namespace rayo::detail {

// How the devices of one kind are found: one backend per device, numbered in the driver's order
// (none where the driver or a device is missing). The CPU's factory makes exactly one.
struct BackendFactory {
    DeviceKind kind;
    std::vector<std::unique_ptr<DeviceBackend>> (*discover)();
};

// The factories of the backends this library was built with, the CPU's first. Defined by the layer
// that links the backends in (dispatch/backend_list.cpp), not by the core.
[[nodiscard]] std::span<BackendFactory const> backend_factories();

class DeviceRegistry {
public:
    static DeviceRegistry& instance();

    // The backend for a device; throws rayo::Error when that device does not exist.
    [[nodiscard]] DeviceBackend& backend(Device device) const;
    [[nodiscard]] DeviceBackend& cpu() const { return *cpu_; }
    // Every backend, each GPU kind looked for first: the CPU, then CUDA devices, then Vulkan
    // devices (the order Device::best() prefers), each kind in registration order.
    [[nodiscard]] std::vector<DeviceBackend*> backends() const;
    // The backends of one kind, looked for on the first call.
    [[nodiscard]] std::vector<DeviceBackend*> backends(DeviceKind kind) const;
    // Whether the devices of a kind have been looked for yet.
    [[nodiscard]] bool discovered(DeviceKind kind) const;

    // Adds a backend (tests add fakes). Returns its index among those of its kind.
    int add(std::unique_ptr<DeviceBackend> backend);
    // Removes a backend added by add() (tests only); its tensors must be gone.
    void remove(DeviceBackend const* backend);

    // Whether the process has begun to exit and the GPU backends are closed (close_gpu_backends):
    // a GPU tensor destroyed later (one in a namespace-scope container) frees nothing, its device
    // already let go of all its memory.
    [[nodiscard]] static bool gpu_backends_closed() noexcept { return exiting_.load(std::memory_order_acquire); }

private:
    DeviceRegistry();
    void discover(DeviceKind kind) const;
    // At exit, before the GPU drivers' own exit handlers: waits for every GPU device and frees
    // everything it holds, while its driver still works. The CPU backend stays.
    void close_gpu_backends() noexcept;

    DeviceBackend* cpu_ = nullptr;
    mutable std::mutex mutex_;
    // Discovery appends to the list from const accessors: the devices exist from the start, they
    // are only looked for late.
    mutable std::vector<std::unique_ptr<DeviceBackend>> backends_;
    mutable std::array<std::once_flag, 3> discovery_;  // by DeviceKind
    mutable std::array<bool, 3> discovered_{true, false, false};
    static std::atomic<bool> exiting_;
};

// Makes Device values; only the registry knows which devices exist.
Device make_device(DeviceKind kind, int index);

}  // namespace rayo::detail
