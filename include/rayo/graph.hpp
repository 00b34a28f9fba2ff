// Capture and replay: a fixed sequence of ops on fixed tensors, recorded once and enqueued again
// as one unit, without the host work of dispatching each op.
//
//   rayo::FTensor x = ..., w = ..., y = rayo::FTensor::empty({n, out}, dev);
//   rayo::Graph step = rayo::capture(dev, [&] {
//       rayo::linear_into(x, w, y);
//       rayo::silu_into(y, y);
//   });
//   for (...) { /* write x */ step.replay(); }   // the same ops on the tensors' current contents
//
// The body runs once, on the calling thread, to record: its ops are not run then. What the ops
// read is read at each replay, so values that change between replays (a position, a length, the
// next token's id) live in device tensors the body's ops take, and are written before replay().
// On CUDA the ops become a CUDA graph (stream capture, instantiated once, launched by replay());
// on the CPU and Vulkan, replay() runs the recorded ops through the backend in order, the
// dispatcher's per-op checks and planning already done.
//
// A capture records the ops of one device, and nothing else. Inside the body these throw
// rayo::Error, the capture is abandoned and the device stays usable:
//   * an op on another device, or one the device would run on the CPU (a fallback);
//   * making a tensor (empty, zeros, from, an op form that returns its result): make the outputs
//     before the capture and call the _into forms;
//   * moving data between the host and a device (to_vector, item, from, a host copy) and
//     Device::synchronize();
//   * a capture inside a capture.
// Another thread's ops and transfers on the capturing device are refused with rayo::Error while
// the capture runs (on CUDA the device's one stream is being recorded).
//
// The graph does not own the tensors it uses: replay() after one of them has been destroyed
// throws rayo::Error naming the op and operand, and runs nothing.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "rayo/device.hpp"
#include "rayo/export.hpp"

namespace rayo {

namespace detail {
struct GraphState;
}

class RAYO_API Graph {
public:
    Graph(Graph&&) noexcept;
    Graph& operator=(Graph&&) noexcept;
    ~Graph();

    // Enqueues the recorded ops once more, in the device's order with every other op (asynchronous,
    // as ops are; a host read or synchronize() waits for it). Throws rayo::Error where a tensor the
    // capture used has been destroyed, before enqueueing anything.
    void replay();

    [[nodiscard]] Device device() const noexcept;
    // The ops recorded (each counts in rayo::stats().ops at every replay).
    [[nodiscard]] std::size_t ops() const noexcept;
    // Whether replay() is the backend's own (a CUDA graph) rather than the recorded ops run again.
    [[nodiscard]] bool native() const noexcept;

private:
    friend RAYO_API Graph capture(Device device, std::function<void()> const& body);
    Graph() noexcept;  // capture() gives it its state
    std::unique_ptr<detail::GraphState> state_;
};

// Records the ops `body` issues on `device` (see above).
[[nodiscard]] RAYO_API Graph capture(Device device, std::function<void()> const& body);

}  // namespace rayo
