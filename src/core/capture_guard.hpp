// Whether this thread is inside a capture's body (rayo::capture), as the core sees it: the device
// whose ops it records. The dispatcher marks the body (CaptureMark) and keeps what it records
// (dispatch/capture.hpp); the storage and device layers ask here before they touch memory or wait.
#pragma once

#include <optional>
#include <string>

#include "rayo/device.hpp"

namespace rayo::detail {

// The device of the capture running on this thread, or nullopt.
[[nodiscard]] std::optional<Device> capturing_device() noexcept;

// Marks this thread as capturing on `device` for the mark's lifetime.
class CaptureMark {
public:
    explicit CaptureMark(Device device) noexcept;
    ~CaptureMark();
    CaptureMark(CaptureMark const&) = delete;
    CaptureMark& operator=(CaptureMark const&) = delete;
};

// Throws rayo::Error where this thread is capturing: `what` ("making a tensor of 64 bytes on
// cuda:0", "a host read") is not something a capture records.
void refuse_in_capture(char const* what);
void refuse_in_capture(std::string const& what);

}  // namespace rayo::detail
