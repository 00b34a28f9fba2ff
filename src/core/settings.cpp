// Process-wide knobs and their environment variables (the CPU backend's own: cpu/cpu_settings.cpp).
#include "rayo/settings.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "core/environment.hpp"
#include "core/logging.hpp"
#include "rayo/error.hpp"

namespace rayo {

namespace {

KQuantActivations initial_kquant_activations() {
    auto const env = detail::environment("RAYO_KQUANT_ACTIVATIONS");
    return env ? detail::parse_kquant_activations(*env) : KQuantActivations::q8_k_residual;
}

std::atomic<KQuantActivations>& kquant_activations_state() {
    static std::atomic<KQuantActivations> mode{initial_kquant_activations()};
    return mode;
}

LogLevel initial_log_level() {
    auto const env = detail::environment("RAYO_LOG");
    return env ? detail::parse_log_level(*env) : LogLevel::warn;
}

std::atomic<LogLevel>& log_state() {
    static std::atomic<LogLevel> level{initial_log_level()};
    return level;
}

}  // namespace

std::string_view to_string(KQuantActivations mode) noexcept {
    return mode == KQuantActivations::q8_k ? "q8_k" : "q8_k_residual";
}
void set_kquant_activations(KQuantActivations mode) { kquant_activations_state().store(mode); }
KQuantActivations kquant_activations() { return kquant_activations_state().load(); }

void set_log_level(LogLevel level) { log_state().store(level); }
LogLevel log_level() { return log_state().load(); }

}  // namespace rayo
