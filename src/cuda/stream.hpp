// The device's one stream, on which every transfer, fill, allocation and kernel of the backend is
// enqueued in order, and events that mark a point in it. Non-blocking: it never waits for the
// legacy default stream other libraries in the process may be using.
#pragma once

#include <string_view>

#include "cuda/context.hpp"

namespace rayo::cuda {

class Stream {
public:
    explicit Stream(PrimaryContext const& context);
    // Waits for the stream's work, then destroys it.
    ~Stream();
    Stream(Stream const&) = delete;
    Stream& operator=(Stream const&) = delete;

    [[nodiscard]] CUstream handle() const noexcept { return stream_; }
    [[nodiscard]] PrimaryContext const& context() const noexcept { return context_; }
    // Waits until everything enqueued so far has finished; errors of earlier asynchronous work
    // (a faulting kernel) surface here. `what` says what was waiting, for the message.
    void synchronize(std::string_view what) const;

private:
    PrimaryContext const& context_;
    CUstream stream_ = nullptr;
};

// A point in a stream that the host can wait for (without timing, the cheap kind).
class Event {
public:
    explicit Event(PrimaryContext const& context);
    ~Event();
    Event(Event const&) = delete;
    Event& operator=(Event const&) = delete;

    // Marks the end of what `stream` has enqueued so far; replaces the previous mark.
    void record(Stream const& stream);
    // Waits until the marked work has finished (at once when nothing was recorded).
    void wait() const;

private:
    PrimaryContext const& context_;
    CUevent event_ = nullptr;
};

}  // namespace rayo::cuda
