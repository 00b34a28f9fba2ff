#include "core/logging.hpp"

#include <cstdio>
#include <mutex>

namespace rayo {

namespace detail {

bool log_enabled(LogLevel level) noexcept { return level >= log_level() && level != LogLevel::off; }

void log(LogLevel level, std::string_view message) {
    if (!log_enabled(level)) return;
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
}

}  // namespace detail

}  // namespace rayo
