// Devices: the CPU, and GPUs found at run time through the Vulkan loader or the CUDA driver.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rayo/export.hpp"

namespace rayo {

enum class DeviceKind : std::uint8_t { cpu, vulkan, cuda };

constexpr std::string_view to_string(DeviceKind k) noexcept {
    switch (k) {
        case DeviceKind::cpu: return "cpu";
        case DeviceKind::vulkan: return "vulkan";
        case DeviceKind::cuda: return "cuda";
    }
    return "?";
}

// The memory a device's backend holds, in bytes (Device::memory_usage). The peaks are the highest
// values since the backend started or since the last Device::reset_peak_memory(). docs/api.md says
// what each backend counts.
struct MemoryUsage {
    // Bytes of live tensors and temporaries handed out: at least the bytes asked for, as the
    // allocator rounds them. A buffer freed while queued work still uses it may count until that
    // work is done.
    std::size_t in_use_bytes = 0;
    std::size_t peak_in_use_bytes = 0;
    // Device memory the backend holds from the driver, pools and blocks included (their free space
    // too): what other processes cannot use. Never less than in_use_bytes.
    std::size_t reserved_bytes = 0;
    std::size_t peak_reserved_bytes = 0;
};

// A device is a small value (kind and index); the backend behind it lives for the whole process.
class RAYO_API Device {
public:
    // The host CPU; always present.
    static Device cpu();
    // RAYO_DEVICE when set (cpu | vulkan | cuda | vulkan:N | cuda:N), else CUDA > Vulkan GPU > CPU.
    // Software Vulkan devices (lavapipe) are never chosen here, only when named.
    static Device best();
    // Every device found, the CPU first.
    static std::vector<Device> all();
    // "cpu", "vulkan", "vulkan:1", "cuda:0"; throws rayo::Error naming the valid spellings and the
    // devices present when the text names none of them.
    static Device parse(std::string_view text);

    [[nodiscard]] DeviceKind kind() const noexcept { return kind_; }
    [[nodiscard]] int index() const noexcept { return index_; }
    // A human-readable name, e.g. "AMD EPYC 7B13 (avx2, 2 threads)" or "NVIDIA H100 80GB HBM3".
    [[nodiscard]] std::string name() const;
    // The parseable identifier: "cpu", "vulkan:0", "cuda:1".
    [[nodiscard]] std::string id() const;
    // Waits until every operation queued on this device has finished.
    void synchronize() const;
    // What the device's backend holds now and at its peaks; safe to call from any thread.
    [[nodiscard]] MemoryUsage memory_usage() const;
    // Restarts the peaks of memory_usage() from the current values.
    void reset_peak_memory() const;

    friend bool operator==(Device, Device) noexcept = default;

private:
    constexpr Device(DeviceKind kind, int index) noexcept : kind_(kind), index_(index) {}
    friend class DeviceRegistryAccess;

    DeviceKind kind_ = DeviceKind::cpu;
    int index_ = 0;
};

inline std::string to_string(Device d) { return d.id(); }

}  // namespace rayo
