// Builds without the Vulkan backend (RAYO_ENABLE_VULKAN=OFF, or AUTO without volk/glslc) find no
// Vulkan devices, and dispatch no shaders.
#include "rayo/error.hpp"
#include "rayo/vulkan_shader.hpp"
#include "vulkan/discovery.hpp"

namespace rayo {

namespace vulkan {
std::vector<std::unique_ptr<detail::DeviceBackend>> discover_backends() { return {}; }
}  // namespace vulkan

void dispatch_vulkan_shader(Device device, std::span<std::uint32_t const>, std::array<std::uint32_t, 3>,
                            std::initializer_list<KernelArgument>) {
    throw Error("dispatch_vulkan_shader on " + device.id() +
                ": not a Vulkan device (this rayo was built without the Vulkan backend)");
}

}  // namespace rayo
