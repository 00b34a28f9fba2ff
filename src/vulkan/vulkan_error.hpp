// VkResult codes turned into rayo exceptions that carry the code and its name.
#pragma once

#include <volk.h>

#include <string_view>

namespace rayo::vulkan {

[[nodiscard]] std::string_view to_string(VkResult result) noexcept;

// Throws rayo::OutOfMemory for the out-of-memory codes, rayo::DeviceError for any other failure;
// `what` names the call and the device, `hint` (when not empty) follows the code in the message.
void check(VkResult result, std::string_view what, std::string_view hint = {});

}  // namespace rayo::vulkan
