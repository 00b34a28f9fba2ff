// The interface every backend implements: its memory, and running an op descriptor on views of
// that memory. The interface does not grow with the ops: a backend tells the dispatcher which
// descriptors it runs (supports), and runs them (run). What it does not support, the dispatcher
// runs on the CPU through host copies, visibly (logged once per op and device, counted in
// rayo::stats()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "dispatch/op_descriptor.hpp"
#include "rayo/device.hpp"

namespace rayo::detail {

// A backend's answer to "do you run this op on these views?": yes, or no and why (for the log).
struct Support {
    bool native = true;
    std::string reason;

    [[nodiscard]] static Support yes() { return {}; }
    [[nodiscard]] static Support no(std::string why) { return {false, std::move(why)}; }
};

// A recording of a backend's queued work that it can enqueue again as one unit (a CUDA graph).
class NativeGraph {
public:
    virtual ~NativeGraph() = default;
    // Enqueues the recording once more; `written` are the buffers its ops write.
    virtual void replay(std::span<std::uintptr_t const> written) = 0;
};

class Backend {
public:
    virtual ~Backend() = default;

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
    virtual void synchronize() = 0;
    // What the backend holds on its device (Device::memory_usage): everything it allocated there,
    // tensors, temporaries and the free space of its pools. Safe to call from any thread.
    [[nodiscard]] virtual MemoryUsage memory_usage() const = 0;
    // Restarts the peaks from the current values.
    virtual void reset_peak_memory() = 0;

    // Ops. The views are validated by the op layer (shapes, types, devices, aliasing) before
    // either is called; `supports` judges what this backend's kernels can take (types, sizes,
    // alignment, device features) and is asked first.
    [[nodiscard]] virtual Support supports(OpDescriptor const& op, OpViews const& views) const = 0;
    virtual void run(OpDescriptor const& op, OpViews const& views) = 0;

    // Capture (rayo::capture, dispatch/capture.hpp). A backend that can record its queued work
    // itself starts recording and returns true: what run() queues until end_capture is recorded,
    // not run. One that cannot returns false, and the dispatcher keeps the list of ops instead.
    [[nodiscard]] virtual bool begin_capture() { return false; }
    // Ends what begin_capture started: the recording, or nullptr where `keep` is false (the
    // capture's body failed; the backend then drops what it recorded).
    [[nodiscard]] virtual std::unique_ptr<NativeGraph> end_capture(bool keep) {
        (void)keep;
        return nullptr;
    }
};

}  // namespace rayo::detail
