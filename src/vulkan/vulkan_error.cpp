#include "vulkan/vulkan_error.hpp"

#include <string>

#include "rayo/error.hpp"

namespace rayo::vulkan {

std::string_view to_string(VkResult result) noexcept {
    switch (result) {
#define RAYO_VK_RESULT_NAME(code) \
    case code: return #code;
        RAYO_VK_RESULT_NAME(VK_SUCCESS)
        RAYO_VK_RESULT_NAME(VK_NOT_READY)
        RAYO_VK_RESULT_NAME(VK_TIMEOUT)
        RAYO_VK_RESULT_NAME(VK_INCOMPLETE)
        RAYO_VK_RESULT_NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
        RAYO_VK_RESULT_NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        RAYO_VK_RESULT_NAME(VK_ERROR_INITIALIZATION_FAILED)
        RAYO_VK_RESULT_NAME(VK_ERROR_DEVICE_LOST)
        RAYO_VK_RESULT_NAME(VK_ERROR_MEMORY_MAP_FAILED)
        RAYO_VK_RESULT_NAME(VK_ERROR_LAYER_NOT_PRESENT)
        RAYO_VK_RESULT_NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
        RAYO_VK_RESULT_NAME(VK_ERROR_FEATURE_NOT_PRESENT)
        RAYO_VK_RESULT_NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
        RAYO_VK_RESULT_NAME(VK_ERROR_TOO_MANY_OBJECTS)
        RAYO_VK_RESULT_NAME(VK_ERROR_FORMAT_NOT_SUPPORTED)
        RAYO_VK_RESULT_NAME(VK_ERROR_FRAGMENTED_POOL)
        RAYO_VK_RESULT_NAME(VK_ERROR_UNKNOWN)
        RAYO_VK_RESULT_NAME(VK_ERROR_OUT_OF_POOL_MEMORY)
        RAYO_VK_RESULT_NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        RAYO_VK_RESULT_NAME(VK_ERROR_FRAGMENTATION)
#undef RAYO_VK_RESULT_NAME
        default: return "VkResult(unknown)";
    }
}

void check(VkResult result, std::string_view what, std::string_view hint) {
    if (result == VK_SUCCESS) return;
    std::string const message = "vulkan: " + std::string(what) + " failed: " + std::string(to_string(result)) + " (" +
                                std::to_string(static_cast<int>(result)) + ")" +
                                (hint.empty() ? "" : ": " + std::string(hint));
    if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY) throw OutOfMemory(message);
    throw DeviceError(message, result, std::string(to_string(result)));
}

}  // namespace rayo::vulkan
