// Parsers of RAYO_KQUANT_ACTIVATIONS and RAYO_LOG (RAYO_DEVICE is Device::parse; the CPU
// backend's RAYO_NUM_THREADS and RAYO_CPU_ARCH: cpu/cpu_settings.cpp).
// libFuzzer runs them on arbitrary text (tests/fuzz/settings_fuzz.cpp).
#include "core/environment.hpp"

#include <cstdlib>
#include <string>
#include <utility>

#include "core/printable.hpp"
#include "rayo/error.hpp"

namespace rayo::detail {

void refuse_setting(char const* variable, std::string_view text, std::string_view accepted) {
    throw Error(std::string(variable) + "='" + printable(text, 64) + "' is not " + std::string(accepted));
}

std::optional<std::string_view> environment(char const* name) {
    char const* value = std::getenv(name);
    if (!value || !*value) return std::nullopt;
    return std::string_view(value);
}

KQuantActivations parse_kquant_activations(std::string_view text) {
    for (auto m : {KQuantActivations::q8_k, KQuantActivations::q8_k_residual})
        if (text == to_string(m)) return m;
    refuse_setting("RAYO_KQUANT_ACTIVATIONS", text, "one of q8_k, q8_k_residual");
}

LogLevel parse_log_level(std::string_view text) {
    for (auto [name, level] :
         {std::pair{"debug", LogLevel::debug}, std::pair{"info", LogLevel::info}, std::pair{"warn", LogLevel::warn},
          std::pair{"error", LogLevel::error}, std::pair{"off", LogLevel::off}})
        if (text == name) return level;
    refuse_setting("RAYO_LOG", text, "one of debug, info, warn, error, off");
}

}  // namespace rayo::detail
