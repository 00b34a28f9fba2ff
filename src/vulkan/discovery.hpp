// The GPU backends this process can use, found at run time (none when the build has no Vulkan
// backend or the machine has no Vulkan loader or device).
#pragma once

#include <memory>
#include <vector>

#include "core/device_backend.hpp"

namespace rayo::vulkan {

// One backend per usable physical device, numbered vulkan:0, vulkan:1, ... in the loader's order.
[[nodiscard]] std::vector<std::unique_ptr<detail::DeviceBackend>> discover_backends();

}  // namespace rayo::vulkan
