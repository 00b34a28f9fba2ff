// Messages to stderr, filtered by rayo::log_level().
#pragma once

#include <string_view>

#include "rayo/settings.hpp"

namespace rayo::detail {

[[nodiscard]] bool log_enabled(LogLevel level) noexcept;
void log(LogLevel level, std::string_view message);

}  // namespace rayo::detail
