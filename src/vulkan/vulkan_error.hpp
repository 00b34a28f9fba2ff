// VkResult codes turned into rayo exceptions that carry the code and its name.
#pragma once

#include <volk.h>

#include <string_view>

namespace rayo::vulkan {

[[nodiscard]] std::string_view to_string(VkResult result) noexcept;

// Throws rayo::OutOfMemory for the out-of-memory codes, rayo::DeviceError for any other failure;
// `what` names the call and the device.
void check(VkResult result, std::string_view what);

}  // namespace rayo::vulkan
