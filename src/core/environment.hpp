// The environment variables' values, parsed: each parser takes the variable's text and returns the
// setting, or throws rayo::Error naming the variable, the (escaped, shortened) value and what it
// accepts. Unset or empty variables are the callers' business (they mean "the default").
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "rayo/settings.hpp"

namespace rayo::detail {

// Throws rayo::Error: "VARIABLE='text' is not <accepted>", the text escaped and shortened.
[[noreturn]] void refuse_setting(char const* variable, std::string_view text, std::string_view accepted);

// The variable's text, or nullopt when it is unset or empty.
[[nodiscard]] std::optional<std::string_view> environment(char const* name);

[[nodiscard]] KQuantActivations parse_kquant_activations(std::string_view text);  // RAYO_KQUANT_ACTIVATIONS
[[nodiscard]] LogLevel parse_log_level(std::string_view text);                    // RAYO_LOG

}  // namespace rayo::detail
