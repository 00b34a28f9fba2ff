// The backends present in this process: the CPU, then those found at run time. GPU backends are
// looked for the first time a device of their kind is asked for (Device::all(), best(), parse(),
// or a tensor on such a device), so a program that only uses the CPU never loads a GPU driver.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "dispatch/backend.hpp"

namespace rayo::detail {

class Registry {
public:
    static Registry& instance();

    // The backend for a device; throws rayo::Error when that device does not exist.
    [[nodiscard]] Backend& backend(Device device) const;
    [[nodiscard]] Backend& cpu() const { return *cpu_; }
    // Every backend, each GPU kind looked for first: the CPU, then CUDA devices, then Vulkan
    // devices (the order Device::best() prefers), each kind in registration order.
    [[nodiscard]] std::vector<Backend*> backends() const;
    // The backends of one kind, looked for on the first call.
    [[nodiscard]] std::vector<Backend*> backends(DeviceKind kind) const;
    // Whether the devices of a kind have been looked for yet.
    [[nodiscard]] bool discovered(DeviceKind kind) const;

    // Adds a backend (GPU backends at discovery; tests add fakes). Returns its index among those of its kind.
    int add(std::unique_ptr<Backend> backend);
    // Removes a backend added by add() (tests only); its tensors must be gone.
    void remove(Backend const* backend);

    // Frees a tensor's memory. Once the process has begun to exit, the GPU backends are closed
    // (close_gpu_backends) and a GPU tensor destroyed later (one in a namespace-scope container)
    // frees nothing: its device already let go of all its memory.
    void release(Device device, std::uintptr_t handle) const;

private:
    Registry();
    void discover(DeviceKind kind) const;
    // At exit, before the GPU drivers' own exit handlers: waits for every GPU device and frees
    // everything it holds, while its driver still works. The CPU backend stays.
    void close_gpu_backends() noexcept;

    Backend* cpu_ = nullptr;
    mutable std::mutex mutex_;
    // Discovery appends to the list from const accessors: the devices exist from the start, they
    // are only looked for late.
    mutable std::vector<std::unique_ptr<Backend>> backends_;
    mutable std::array<std::once_flag, 3> discovery_;  // by DeviceKind
    mutable std::array<bool, 3> discovered_{true, false, false};
    static std::atomic<bool> exiting_;
};

// Makes Device values; only the registry knows which devices exist.
Device make_device(DeviceKind kind, int index);

}  // namespace rayo::detail
