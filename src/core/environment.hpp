// The environment variables' values, parsed: each parser takes the variable's text and returns the
// setting, or throws rayo::Error naming the variable, the (escaped, shortened) value and what it
// accepts. Unset or empty variables are the callers' business (they mean "the default").
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "rayo/settings.hpp"

namespace rayo::detail {

// The variable's text, or nullopt when it is unset or empty.
[[nodiscard]] std::optional<std::string_view> environment(char const* name);

[[nodiscard]] std::size_t parse_num_threads(std::string_view text);               // RAYO_NUM_THREADS: 1 to max_threads
[[nodiscard]] CpuArch parse_cpu_arch(std::string_view text);                      // RAYO_CPU_ARCH: an arch's name
[[nodiscard]] KQuantActivations parse_kquant_activations(std::string_view text);  // RAYO_KQUANT_ACTIVATIONS
[[nodiscard]] LogLevel parse_log_level(std::string_view text);                    // RAYO_LOG

}  // namespace rayo::detail
