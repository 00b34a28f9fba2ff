// The Vulkan backend for one physical device: tensors in suballocated device-local memory,
// uploads and downloads through staging memory, and the op families of src/vulkan/ops/ recorded
// into batched command buffers through a ShaderRunner. One mutex per device makes it safe to use
// from several host threads.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <optional>
#include <unordered_map>
#include <vector>

#include "dispatch/backend.hpp"
#include "dispatch/memory_counter.hpp"
#include "rayo/kernel_argument.hpp"
#include "vulkan/command_stream.hpp"
#include "vulkan/diagnostics.hpp"
#include "vulkan/logical_device.hpp"
#include "vulkan/memory_allocator.hpp"
#include "vulkan/pipeline_cache.hpp"
#include "vulkan/shader_runner.hpp"

namespace rayo::vulkan {

class VulkanBackend final : public detail::Backend {
public:
    VulkanBackend(PhysicalDevice const& physical, int index);
    ~VulkanBackend() override;

    [[nodiscard]] DeviceKind kind() const noexcept override { return DeviceKind::vulkan; }
    [[nodiscard]] int index() const noexcept override { return index_; }
    [[nodiscard]] std::string name() const override { return device_.physical().description(); }
    [[nodiscard]] bool is_software() const noexcept override { return device_.physical().is_software(); }
    [[nodiscard]] bool is_discrete_gpu() const noexcept override { return device_.physical().is_discrete(); }

    [[nodiscard]] std::uintptr_t allocate(std::size_t bytes) override;
    void release(std::uintptr_t buffer) noexcept override;
    void upload(std::uintptr_t dst, std::size_t offset, void const* src, std::size_t bytes) override;
    void download(std::uintptr_t src, std::size_t offset, void* dst, std::size_t bytes) override;
    void copy(std::uintptr_t src, std::size_t src_offset, std::uintptr_t dst, std::size_t dst_offset,
              std::size_t bytes) override;
    void fill(std::uintptr_t dst, std::size_t offset, std::size_t bytes, void const* pattern,
              std::size_t pattern_bytes) override;
    void synchronize() override;
    // Device-local VkDeviceMemory: the tensor blocks, and the staging blocks where staging memory
    // lives in a device-local heap (integrated GPUs, lavapipe). Lock-free.
    [[nodiscard]] MemoryUsage memory_usage() const override { return memory_counters_.usage(); }
    void reset_peak_memory() override { memory_counters_.reset_peaks(); }

    [[nodiscard]] detail::Support supports(detail::OpDescriptor const& op, detail::OpViews const& views) const override;
    void run(detail::OpDescriptor const& op, detail::OpViews const& views) override;
    // rayo::capture: the ops' commands recorded into a secondary command buffer (captured_graph.cpp).
    [[nodiscard]] bool begin_capture() override;
    [[nodiscard]] std::unique_ptr<detail::NativeGraph> end_capture(bool keep) override;

    // Defined in native_handles.cpp (rayo/native.hpp): a buffer's VkBuffer and offset; adopted
    // ranges of VkBuffers on this VkDevice bind as tensors, and forget() waits for the last batch
    // that used one.
    [[nodiscard]] NativeMemory native_memory(std::uintptr_t buffer) const override;
    [[nodiscard]] std::uintptr_t adopt(NativeMemory const& memory) override;
    void forget(std::uintptr_t buffer) noexcept override;
    [[nodiscard]] NativeHandles native_handles() const override;

    // Defined in user_shader.cpp (rayo/vulkan_shader.hpp): a caller's SPIR-V dispatched on its
    // tensor arguments, the scalars as push constants; `what` names the call for messages.
    void dispatch_user_shader(std::span<std::uint32_t const> spirv, Groups groups,
                              std::span<KernelArgument const> arguments, std::string const& what);

    [[nodiscard]] PhysicalDevice const& physical() const noexcept { return device_.physical(); }
    // Diagnostics and the tests' path switches (diagnostics.hpp).
    [[nodiscard]] MemoryStats memory_stats() const;
    [[nodiscard]] SubnormalSupport subnormal_support() const;
    [[nodiscard]] PathSwitches switches() const;
    void set_switches(PathSwitches const& switches);
    void set_profiling(bool on);
    [[nodiscard]] std::optional<std::string> profile_table();

private:
    class Graph;
    friend class ShaderRunner;
    friend class ScratchBuffer;
    friend class ScratchTensor;
    // allocate and release with mutex_ held (by run(), for an op's temporary tensors).
    [[nodiscard]] std::uintptr_t allocate_locked(std::size_t bytes);
    void release_locked(std::uintptr_t handle) noexcept;
    struct Buffer {
        Allocation allocation;
        std::uint64_t last_use = 0;  // serial of the last batch that touched it
        bool adopted = false;        // a VkBuffer range allocated elsewhere (adopt)
    };
    struct PendingFree {
        std::uint64_t serial;
        Allocation allocation;
        bool staging;
    };

    Buffer& buffer(std::uintptr_t handle);
    void reclaim();  // frees what the GPU has finished with
    void free_after(std::uint64_t serial, Allocation const& a, bool staging);
    // Throws when another thread than the capturing one records `what` while a capture runs.
    void refuse_while_captured(char const* what) const;
    // `bytes` of staging or device memory from the blocks already held, waiting for the oldest
    // pending free that would serve rather than asking the driver for a new block (which costs
    // milliseconds: it clears the memory). nullopt when nothing held or pending serves. Tensors
    // made and dropped faster than the GPU runs, and uploads larger than a block, then cycle
    // through the same blocks. Call with mutex_ held.
    std::optional<Allocation> reserve_or_wait(bool staging, std::size_t bytes);
    void check_range(Buffer const& b, std::size_t offset, std::size_t bytes, char const* what) const;
    // The fault record (dispatch/device_fault.hpp) as a dispatch argument, allocated and cleared at
    // the first dispatch that asks; the next wait for the device reads it.
    [[nodiscard]] Binding fault_record();
    // After a wait for everything recorded: when a dispatch that may record a fault ran since the
    // last look, reads the record, and if one was recorded clears it and throws its IndexError.
    void raise_recorded_fault();
    // The DenormPreserve builds wherever the device can run them, unless the tests turned them off.
    [[nodiscard]] DenormMode denorm_mode() const noexcept {
        return switches_.denorm_preserve && device_.physical().preserves_f32_subnormals() ? DenormMode::preserve
                                                                                          : DenormMode::device_default;
    }

    int index_;
    // Destroyed in reverse: pipelines, the stream (waits for the GPU), memory, then the device.
    LogicalDevice device_;
    detail::MemoryCounters memory_counters_;  // the allocators count into it
    MemoryAllocator device_memory_;
    MemoryAllocator staging_memory_;
    CommandStream stream_;
    PipelineCache pipelines_;
    mutable std::mutex mutex_;
    std::unordered_map<std::uintptr_t, Buffer> buffers_;
    std::uintptr_t next_handle_ = 1;
    std::vector<PendingFree> pending_;
    std::optional<ScratchBuffer> kept_scratch_;  // ShaderRunner::kept_scratch
    std::optional<Allocation> fault_record_;     // until a dispatch asks for it: none
    bool fault_pending_ = false;                 // such a dispatch was recorded since the last look
    PathSwitches switches_;
    // While a capture records: its thread, the buffers its commands bind (whose last use each
    // replay renews), and the memory freed meanwhile, which its commands may use at every replay
    // and which the graph therefore keeps.
    struct Capture {
        std::thread::id thread;
        std::vector<std::uintptr_t> buffers;
        std::vector<PendingFree> kept;
        bool fault_pending_before = false;
    };
    std::optional<Capture> capture_;
};

// The Vulkan backend behind `device` (the diagnostics and test switches of diagnostics.hpp);
// throws rayo::Error when `device` is not a Vulkan device of this process.
[[nodiscard]] VulkanBackend& backend_of(Device device);

}  // namespace rayo::vulkan
