#include "vulkan/discovery.hpp"

#include <string>

#include "core/logging.hpp"
#include "vulkan/instance.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace rayo::vulkan {

std::vector<std::unique_ptr<detail::DeviceBackend>> discover_backends() {
    std::vector<std::unique_ptr<detail::DeviceBackend>> out;
    Instance* instance = Instance::get();
    if (!instance) return out;
    try {
        for (VkPhysicalDevice handle : instance->physical_devices()) {
            auto physical = describe(handle);
            if (!physical) continue;
            try {
                out.push_back(std::make_unique<VulkanBackend>(*physical, static_cast<int>(out.size())));
            } catch (std::exception const& e) {
                detail::log(LogLevel::warn, "rayo: skipping Vulkan device " + physical->name() + ": " + e.what());
            }
        }
    } catch (std::exception const& e) {
        detail::log(LogLevel::warn, std::string("rayo: enumerating Vulkan devices: ") + e.what());
    }
    return out;
}

}  // namespace rayo::vulkan
