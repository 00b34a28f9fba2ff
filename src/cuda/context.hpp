// A device's primary context, the one the CUDA runtime and other libraries in the process share,
// retained for the backend's lifetime; and a guard that makes it current on the calling thread.
#pragma once

#include <string>

#include "cuda/driver_api.hpp"

namespace rayo::cuda {

class PrimaryContext {
public:
    // `label` names the device in error messages, e.g. "cuda:0".
    PrimaryContext(Driver const& driver, CUdevice device, std::string label);
    ~PrimaryContext();
    PrimaryContext(PrimaryContext const&) = delete;
    PrimaryContext& operator=(PrimaryContext const&) = delete;

    [[nodiscard]] Driver const& driver() const noexcept { return driver_; }
    [[nodiscard]] CUdevice device() const noexcept { return device_; }
    [[nodiscard]] CUcontext handle() const noexcept { return context_; }
    [[nodiscard]] std::string const& label() const noexcept { return label_; }

private:
    Driver const& driver_;
    CUdevice device_;
    CUcontext context_ = nullptr;
    std::string label_;
};

// Makes `context` current on this thread for the guard's scope and restores the previous one
// after. Costs one driver query when the context already is current (the usual case), so every
// entry into the backend takes one; nesting is fine.
class ScopedCurrent {
public:
    explicit ScopedCurrent(PrimaryContext const& context);
    ~ScopedCurrent();
    ScopedCurrent(ScopedCurrent const&) = delete;
    ScopedCurrent& operator=(ScopedCurrent const&) = delete;

private:
    PrimaryContext const& context_;
    bool pushed_ = false;
};

}  // namespace rayo::cuda
