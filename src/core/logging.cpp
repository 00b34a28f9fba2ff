#include "core/logging.hpp"

#include <cstdio>
#include <mutex>

namespace rayo {

namespace detail {

bool log_enabled(LogLevel level) noexcept {
    try {
        return level >= log_level() && level != LogLevel::off;
    } catch (...) {  // a bad RAYO_LOG: the registry reports it at the first use of rayo
        return level >= LogLevel::warn;
    }
}

void log(LogLevel level, std::string_view message) {
    if (!log_enabled(level)) return;
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
}

}  // namespace detail

}  // namespace rayo
