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

#include "core/device_backend.hpp"
#include "core/device_registry.hpp"
#include "dispatch/op_descriptor.hpp"

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

// The interface every backend implements: a device and its memory (DeviceBackend), and its ops.
class Backend : public DeviceBackend {
public:
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

// The backend of a device (rayo::Error when that device does not exist), and the CPU's. Every
// backend in the registry is a Backend: the registry is filled by the factories of
// dispatch/backend_list.cpp and by tests, each of which makes Backends.
[[nodiscard]] inline Backend& backend_of(Device device) {
    return static_cast<Backend&>(DeviceRegistry::instance().backend(device));
}
[[nodiscard]] inline Backend& cpu_backend() { return static_cast<Backend&>(DeviceRegistry::instance().cpu()); }

}  // namespace rayo::detail
