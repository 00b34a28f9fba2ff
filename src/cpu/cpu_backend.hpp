// The CPU backend: host memory, and the op families of src/cpu/ops/ run with the kernels of the
// selected instruction set over the thread pool.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dispatch/backend.hpp"

namespace rayo::cpu {

class CpuBackend final : public detail::Backend {
public:
    [[nodiscard]] DeviceKind kind() const noexcept override { return DeviceKind::cpu; }
    [[nodiscard]] int index() const noexcept override { return 0; }
    [[nodiscard]] std::string name() const override;

    [[nodiscard]] std::uintptr_t allocate(std::size_t bytes) override;
    void release(std::uintptr_t buffer) noexcept override;
    void upload(std::uintptr_t dst, std::size_t offset, void const* src, std::size_t bytes) override;
    void download(std::uintptr_t src, std::size_t offset, void* dst, std::size_t bytes) override;
    void copy(std::uintptr_t src, std::size_t src_offset, std::uintptr_t dst, std::size_t dst_offset,
              std::size_t bytes) override;
    void fill(std::uintptr_t dst, std::size_t offset, std::size_t bytes, void const* pattern,
              std::size_t pattern_bytes) override;
    // A buffer's handle is its host address.
    [[nodiscard]] std::byte* host_address(std::uintptr_t buffer) const noexcept override {
        return reinterpret_cast<std::byte*>(buffer);
    }
    // Memory from elsewhere (rayo::from_native_memory): its handle is its host address too.
    [[nodiscard]] std::uintptr_t adopt(NativeMemory const& memory) override {
        return static_cast<std::uintptr_t>(memory.handle);
    }
    void synchronize() override {}
    // Host memory of every CpuBackend together (cpu/host_memory.hpp).
    [[nodiscard]] MemoryUsage memory_usage() const override;
    void reset_peak_memory() override;

    [[nodiscard]] detail::Support supports(detail::OpDescriptor const& op, detail::OpViews const& views) const override;
    void run(detail::OpDescriptor const& op, detail::OpViews const& views) override;
};

}  // namespace rayo::cpu
