// Builds without the Vulkan backend (RAYO_ENABLE_VULKAN=OFF, or AUTO without volk/glslc) find no
// Vulkan devices.
#include "vulkan/discovery.hpp"

namespace rayo::vulkan {

std::vector<std::unique_ptr<detail::DeviceBackend>> discover_backends() { return {}; }

}  // namespace rayo::vulkan
