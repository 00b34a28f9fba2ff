#include "core/capture_guard.hpp"

#include "rayo/error.hpp"

namespace rayo::detail {

namespace {

thread_local std::optional<Device> current_device;

}  // namespace

std::optional<Device> capturing_device() noexcept { return current_device; }

CaptureMark::CaptureMark(Device device) noexcept { current_device = device; }
CaptureMark::~CaptureMark() { current_device.reset(); }

void refuse_in_capture(std::string const& what) {
    if (current_device)
        throw Error("capture on " + current_device->id() + ": " + what +
                    " inside a capture, which records only ops on its device's tensors (make tensors and move data "
                    "before or after it; inside, use the _into forms of the ops)");
}
void refuse_in_capture(char const* what) {
    if (current_device) refuse_in_capture(std::string(what));
}

}  // namespace rayo::detail
