// The CUDA backend for one device: tensors in stream-ordered pool memory, transfers through
// pinned staging, every operation enqueued on the device's one stream. One mutex per device makes
// it safe to use from several host threads; the handles it gives out are device addresses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cuda/context.hpp"
#include "cuda/kernel_runner.hpp"
#include "cuda/driver_api.hpp"
#include "cuda/kernel_profile.hpp"
#include "cuda/memory_pool.hpp"
#include "cuda/module_cache.hpp"
#include "cuda/pinned_staging.hpp"
#include "cuda/stream.hpp"
#include "dispatch/backend.hpp"
#include "rayo/cuda_kernel.hpp"

namespace rayo::cuda {

// What the driver says about a device, read once.
struct DeviceProperties {
    std::string name;               // "NVIDIA H200 (139.8 GiB, sm_90)"
    int compute_capability = 0;     // major * 10 + minor
    unsigned max_shared_bytes = 0;  // per block, opted in
    int multiprocessor_count = 0;
    MultiprocessorSharedMemory multiprocessor_shared;
};

// What tests check about memory reuse (and nothing else uses).
struct MemoryStats {
    std::size_t live_buffers = 0;  // tensor allocations not yet released
    PoolUsage pool;
    DeviceMemoryInfo device;
};

class CudaBackend final : public detail::Backend {
public:
    // Retains the device's primary context and creates its stream; throws rayo::Unsupported for a
    // device without stream-ordered memory pools, rayo::DeviceError for a driver failure.
    CudaBackend(Driver const& driver, CUdevice device, int index);
    ~CudaBackend() override;

    [[nodiscard]] DeviceKind kind() const noexcept override { return DeviceKind::cuda; }
    [[nodiscard]] int index() const noexcept override { return index_; }
    [[nodiscard]] std::string name() const override { return properties_.name; }
    [[nodiscard]] bool is_discrete_gpu() const noexcept override { return true; }

    [[nodiscard]] std::uintptr_t allocate(std::size_t bytes) override;
    void release(std::uintptr_t buffer) noexcept override;
    void upload(std::uintptr_t dst, std::size_t offset, void const* src, std::size_t bytes) override;
    void download(std::uintptr_t src, std::size_t offset, void* dst, std::size_t bytes) override;
    void copy(std::uintptr_t src, std::size_t src_offset, std::uintptr_t dst, std::size_t dst_offset,
              std::size_t bytes) override;
    void fill(std::uintptr_t dst, std::size_t offset, std::size_t bytes, void const* pattern,
              std::size_t pattern_bytes) override;
    void synchronize() override;
    // The device's memory pool, which every allocation of the backend comes from: tensors,
    // temporaries and the fault record.
    [[nodiscard]] MemoryUsage memory_usage() const override;
    void reset_peak_memory() override;

    // Defined in native_handles.cpp (rayo/native.hpp): device addresses; adopted memory joins the
    // buffers (unsettled, as the owner's work may still write it), and forget() waits for the
    // stream before it drops one that work queued since the last wait may use.
    [[nodiscard]] NativeMemory native_memory(std::uintptr_t buffer) const override;
    [[nodiscard]] std::uintptr_t adopt(NativeMemory const& memory) override;
    void forget(std::uintptr_t buffer) noexcept override;
    [[nodiscard]] NativeHandles native_handles() const override;

    // Defined in cuda_backend_ops.cpp (rayo/cuda_kernel.hpp, checked by launch_cuda_kernel): a
    // kernel of the caller's, cached under `key`, with its tensor arguments counted as written.
    void launch_user_kernel(std::string_view key, ptx::Kernel const& kernel, LaunchDims dims,
                            std::span<KernelArgument const> arguments);

    // Defined in cuda_backend_ops.cpp: the op families of cuda/ops/, with the device's KernelRunner.
    [[nodiscard]] detail::Support supports(detail::OpDescriptor const& op, detail::OpViews const& views) const override;
    void run(detail::OpDescriptor const& op, detail::OpViews const& views) override;

    // Defined in captured_graph.cpp: stream capture into a CUDA graph (relaxed mode), where the
    // driver has the graph entry points (else false: the dispatcher keeps the list of ops). While
    // the stream is being captured, work from any other thread is refused with rayo::Error, tensors
    // released are freed once the capture ends, and a buffer counts as settled unless an op of the
    // capture writes it.
    [[nodiscard]] bool begin_capture() override;
    [[nodiscard]] std::unique_ptr<detail::NativeGraph> end_capture(bool keep) override;

    // major * 10 + minor, e.g. 90 for sm_90.
    [[nodiscard]] int compute_capability() const noexcept { return properties_.compute_capability; }
    [[nodiscard]] int multiprocessor_count() const noexcept { return properties_.multiprocessor_count; }
    [[nodiscard]] unsigned max_shared_bytes() const noexcept { return properties_.max_shared_bytes; }
    [[nodiscard]] MultiprocessorSharedMemory multiprocessor_shared() const noexcept {
        return properties_.multiprocessor_shared;
    }
    // "cuda:0", for messages.
    [[nodiscard]] std::string const& label() const noexcept { return context_.label(); }
    [[nodiscard]] PrimaryContext const& context() const noexcept { return context_; }
    [[nodiscard]] Stream& stream() noexcept { return stream_; }
    [[nodiscard]] ModuleCache& modules() noexcept { return modules_; }
    [[nodiscard]] MemoryStats memory_stats() const;
    // GPU time by kernel (kernel_profile.hpp; RAYO_CUDA_PROFILE=1 turns it on from the start and
    // prints the table when the backend closes). set_profiling: on or off for the launches from now
    // on; profile_table: waits for what was timed and returns the table, nullopt when profiling
    // never ran on the device.
    void set_profiling(bool on);
    [[nodiscard]] std::optional<std::string> profile_table();
    // Runs body with the device's KernelRunner, the lock held and the context current: how the
    // tests drive the op glue in cuda/ops/ directly.
    void with_runner(std::function<void(KernelRunner&)> const& body);

private:
    class Runner;  // the KernelRunner the op glue sees (cuda_backend_ops.cpp)
    class Graph;   // an instantiated CUDA graph (captured_graph.cpp)
    // Throws rayo::Error when another thread's `what` would reach the stream while this thread
    // captures it. Call with mutex_ held.
    void refuse_while_captured(char const* what) const;
    // Enqueues an instantiated graph; the buffers it writes become unsettled (captured_graph.cpp).
    void launch_graph(CUgraphExec exec, std::span<std::uintptr_t const> written);
    // Runs body(runner) with the mutex held and the context current, and notes that it writes
    // `outputs`; without them (with_runner: the body may write anything) the runner reports nothing
    // settled.
    template <class Body>
    void run_op(std::span<detail::TensorView const> outputs, bool tracked, Body&& body);

    // The device address of `bytes` bytes at `offset` in the buffer `handle`. Throws rayo::Error
    // for a handle this backend did not allocate (or has released) and for a range outside it.
    // Call with mutex_ held.
    [[nodiscard]] CUdeviceptr address(std::uintptr_t handle, std::size_t offset, std::size_t bytes,
                                      char const* what) const;
    // Notes that work queued now writes the buffer `handle` (unknown handles are ignored: address()
    // reports them). Call with mutex_ held.
    void mark_written(std::uintptr_t handle) noexcept;
    // True when nothing queued so far that writes the buffer can still be running: the host has
    // waited for the whole stream since such work was last queued (synchronize, a download).
    // Kernels may then read it before they wait for the kernel before them. Call with mutex_ held.
    [[nodiscard]] bool settled(std::uintptr_t handle) const noexcept;
    // The fault record's address, allocated (zeroed) at the first kernel that asks; the next wait
    // for the stream reads it. Call with mutex_ held and the context current.
    [[nodiscard]] CUdeviceptr fault_record();
    // After a wait for the whole stream: when a kernel that may record a fault ran since the last
    // look, reads the record, and if one was recorded clears it and throws its IndexError. Call
    // with mutex_ held.
    void raise_recorded_fault();

    int index_;
    DeviceProperties properties_;
    // Destroyed in reverse: modules and staging (both wait for the stream), the stream, then the context.
    PrimaryContext context_;
    Stream stream_;
    MemoryPool memory_;
    PinnedStaging staging_;
    ModuleCache modules_;
    std::unique_ptr<KernelProfile> profile_;  // kept when profiling stops, for its table
    bool profiling_ = false;
    // Guards the stream's order, the pool, the staging chunks and buffers_; op methods take it too.
    mutable std::mutex mutex_;
    struct Buffer {
        std::size_t bytes = 0;
        std::uint64_t written = 0;        // drains_ when work writing it was last queued (or it was allocated)
        bool written_in_capture = false;  // by an op of the capture in progress
        bool adopted = false;             // memory allocated elsewhere (adopt)
    };
    std::unordered_map<CUdeviceptr, Buffer> buffers_;  // live allocations
    // How often the host has waited for everything queued on the stream to finish.
    std::uint64_t drains_ = 0;
    CUdeviceptr fault_record_ = 0;  // 0 until a kernel asks for it
    bool fault_pending_ = false;    // such a kernel was queued since the record was last read
    // A stream capture in progress: the thread running it, and the tensors released meanwhile,
    // freed when it ends (a free queued now would be recorded into the graph).
    std::optional<std::thread::id> capture_thread_;
    std::vector<CUdeviceptr> released_in_capture_;
    bool pending_before_capture_ = false;  // fault_pending_ when the capture began
    struct KeyHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view key) const noexcept { return std::hash<std::string_view>{}(key); }
    };
    // By op key, found by the key's text without a copy: launches skip the module cache.
    std::unordered_map<std::string, CUfunction, KeyHash, std::equal_to<>> kernels_;
};

}  // namespace rayo::cuda
