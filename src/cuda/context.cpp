#include "cuda/context.hpp"

#include <string>
#include <utility>

#include "core/logging.hpp"

namespace rayo::cuda {

PrimaryContext::PrimaryContext(Driver const& driver, CUdevice device, std::string label)
    : driver_(driver), device_(device), label_(std::move(label)) {
    check(driver_.cuDevicePrimaryCtxRetain(&context_, device_), label_ + ": cuDevicePrimaryCtxRetain");
}

PrimaryContext::~PrimaryContext() {
    CUresult const result = driver_.cuDevicePrimaryCtxRelease(device_);
    // At process exit the driver may have shut down before us; nothing is left to release then.
    if (result != CUresult::success && result != CUresult::deinitialized)
        detail::log(LogLevel::error, "rayo: " + label_ + ": cuDevicePrimaryCtxRelease: " + describe(result));
}

ScopedCurrent::ScopedCurrent(PrimaryContext const& context) : context_(context) {
    Driver const& d = context_.driver();
    CUcontext current = nullptr;
    // Messages are built only on failure: this runs on every call into the backend.
    if (CUresult const r = d.cuCtxGetCurrent(&current); r != CUresult::success)
        throw_error(r, context_.label() + ": cuCtxGetCurrent");
    if (current == context_.handle()) return;
    if (CUresult const r = d.cuCtxPushCurrent(context_.handle()); r != CUresult::success)
        throw_error(r, context_.label() + ": cuCtxPushCurrent");
    pushed_ = true;
}

ScopedCurrent::~ScopedCurrent() {
    if (!pushed_) return;
    CUcontext popped = nullptr;
    CUresult const result = context_.driver().cuCtxPopCurrent(&popped);
    if (result != CUresult::success && result != CUresult::deinitialized)
        detail::log(LogLevel::error, "rayo: " + context_.label() + ": cuCtxPopCurrent: " + describe(result));
}

}  // namespace rayo::cuda
