#include "vulkan/instance.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/logging.hpp"
#include "rayo/error.hpp"
#include "vulkan/diagnostics.hpp"
#include "vulkan/vulkan_error.hpp"

namespace rayo::vulkan {

namespace {

std::atomic<std::uint64_t> validation_messages{0};
std::atomic<bool> validation_active{false};

constexpr char const* validation_layer = "VK_LAYER_KHRONOS_validation";

bool validation_requested() {
    char const* env = std::getenv("RAYO_VULKAN_VALIDATION");
    return env && std::string_view(env) == "1";
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT,
                                                     VkDebugUtilsMessengerCallbackDataEXT const* data, void*) {
    validation_messages.fetch_add(1, std::memory_order_relaxed);
    std::string const level = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
    detail::log(LogLevel::error,
                "rayo: vulkan validation " + level + ": " + (data && data->pMessage ? data->pMessage : "(no message)"));
    return VK_FALSE;  // the call that triggered it goes on
}

bool has_layer(char const* name) {
    std::uint32_t count = 0;
    if (vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) return false;
    std::vector<VkLayerProperties> layers(count);
    if (vkEnumerateInstanceLayerProperties(&count, layers.data()) != VK_SUCCESS) return false;
    return std::any_of(layers.begin(), layers.end(),
                       [&](auto const& l) { return std::strcmp(l.layerName, name) == 0; });
}

}  // namespace

bool validation_enabled() noexcept { return validation_active.load(); }
std::uint64_t validation_message_count() noexcept { return validation_messages.load(); }

Instance* Instance::get() {
    static std::unique_ptr<Instance> const instance = []() -> std::unique_ptr<Instance> {
        try {
            return std::unique_ptr<Instance>(new Instance());
        } catch (std::exception const& e) {
            detail::log(LogLevel::debug, std::string("rayo: no Vulkan devices: ") + e.what());
            return nullptr;
        }
    }();
    return instance.get();
}

Instance::Instance() {
    // volk dlopens libvulkan.so.1; without it this machine simply has no Vulkan devices.
    if (volkInitialize() != VK_SUCCESS) throw Error("the Vulkan loader (libvulkan.so.1) was not found");
    if (volkGetInstanceVersion() < VK_API_VERSION_1_1) throw Error("the Vulkan loader is older than Vulkan 1.1");

    std::vector<char const*> layers, extensions;
    bool const validate = validation_requested();
    if (validate) {
        if (has_layer(validation_layer)) {
            layers.push_back(validation_layer);
            extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        } else {
            detail::log(LogLevel::error,
                        "rayo: RAYO_VULKAN_VALIDATION=1 but VK_LAYER_KHRONOS_validation is not "
                        "installed (Debian: vulkan-validationlayers); running without it");
        }
    }
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "rayo";
    app.pEngineName = "rayo";
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.pApplicationInfo = &app;
    info.enabledLayerCount = static_cast<std::uint32_t>(layers.size());
    info.ppEnabledLayerNames = layers.data();
    info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
    info.ppEnabledExtensionNames = extensions.data();
    VkDebugUtilsMessengerCreateInfoEXT messenger{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    messenger.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    messenger.pfnUserCallback = on_validation_message;
    if (!layers.empty()) info.pNext = &messenger;  // also reports on vkCreateInstance/vkDestroyInstance
    VkResult const created = vkCreateInstance(&info, nullptr, &instance_);
    // The loader found no driver it could use: say where to look (a headless NVIDIA machine's GLX
    // manifest fails this way; README).
    check(created, "vkCreateInstance",
          created == VK_ERROR_INCOMPATIBLE_DRIVER
              ? "no usable Vulkan driver; VK_LOADER_DEBUG=error shows why the loader skipped each (on a headless "
                "NVIDIA machine, see rayo's README)"
              : "");
    volkLoadInstanceOnly(instance_);
    if (!layers.empty()) {
        VkResult const r = vkCreateDebugUtilsMessengerEXT(instance_, &messenger, nullptr, &messenger_);
        if (r != VK_SUCCESS) {
            vkDestroyInstance(instance_, nullptr);
            check(r, "vkCreateDebugUtilsMessengerEXT");
        }
        validation_active = true;
        detail::log(LogLevel::info, "rayo: Vulkan validation layer enabled");
    }
}

Instance::~Instance() {
    if (messenger_) vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
    vkDestroyInstance(instance_, nullptr);
}

std::vector<VkPhysicalDevice> Instance::physical_devices() const {
    std::uint32_t count = 0;
    check(vkEnumeratePhysicalDevices(instance_, &count, nullptr), "vkEnumeratePhysicalDevices");
    std::vector<VkPhysicalDevice> devices(count);
    check(vkEnumeratePhysicalDevices(instance_, &count, devices.data()), "vkEnumeratePhysicalDevices");
    devices.resize(count);
    return devices;
}

}  // namespace rayo::vulkan
