#include "cuda/stream.hpp"

#include <exception>
#include <string>

#include "core/logging.hpp"

namespace rayo::cuda {

Stream::Stream(PrimaryContext const& context) : context_(context) {
    ScopedCurrent const current(context_);
    check(context_.driver().cuStreamCreate(&stream_, stream_non_blocking), context_.label() + ": cuStreamCreate");
}

Stream::~Stream() {
    try {
        ScopedCurrent const current(context_);
        Driver const& d = context_.driver();
        CUresult result = d.cuStreamSynchronize(stream_);
        if (result == CUresult::success) result = d.cuStreamDestroy(stream_);
        if (result != CUresult::success && result != CUresult::deinitialized)
            detail::log(LogLevel::error, "rayo: " + context_.label() + ": destroying the stream: " + describe(result));
    } catch (std::exception const& e) {  // the driver is gone at exit: so is the stream
        detail::log(LogLevel::debug, "rayo: " + context_.label() + ": destroying the stream: " + e.what());
    }
}

void Stream::synchronize(std::string_view what) const {
    ScopedCurrent const current(context_);
    if (CUresult const r = context_.driver().cuStreamSynchronize(stream_); r != CUresult::success)
        throw_error(r, context_.label() + ": cuStreamSynchronize (" + std::string(what) + ")");
}

Event::Event(PrimaryContext const& context) : context_(context) {
    ScopedCurrent const current(context_);
    check(context_.driver().cuEventCreate(&event_, event_disable_timing), context_.label() + ": cuEventCreate");
}

Event::~Event() {
    try {
        ScopedCurrent const current(context_);
        CUresult const result = context_.driver().cuEventDestroy(event_);
        if (result != CUresult::success && result != CUresult::deinitialized)
            detail::log(LogLevel::error, "rayo: " + context_.label() + ": cuEventDestroy: " + describe(result));
    } catch (std::exception const& e) {
        detail::log(LogLevel::debug, "rayo: " + context_.label() + ": cuEventDestroy: " + e.what());
    }
}

void Event::record(Stream const& stream) {
    if (CUresult const r = context_.driver().cuEventRecord(event_, stream.handle()); r != CUresult::success)
        throw_error(r, context_.label() + ": cuEventRecord");
}

void Event::wait() const {
    if (CUresult const r = context_.driver().cuEventSynchronize(event_); r != CUresult::success)
        throw_error(r, context_.label() + ": cuEventSynchronize");
}

}  // namespace rayo::cuda
