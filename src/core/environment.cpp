// Parsers of RAYO_NUM_THREADS, RAYO_CPU_ARCH, RAYO_KQUANT_ACTIVATIONS and RAYO_LOG (RAYO_DEVICE is
// Device::parse). libFuzzer runs them on arbitrary text (tests/fuzz/settings_fuzz.cpp).
#include "core/environment.hpp"

#include <charconv>
#include <cstdlib>
#include <string>
#include <utility>

#include "cpu/thread_pool.hpp"
#include "rayo/error.hpp"
#include "rayo/gguf.hpp"

namespace rayo::detail {

namespace {

[[noreturn]] void refuse(char const* variable, std::string_view text, std::string_view accepted) {
    throw Error(std::string(variable) + "='" + gguf::printable(text, 64) + "' is not " + std::string(accepted));
}

}  // namespace

std::optional<std::string_view> environment(char const* name) {
    char const* value = std::getenv(name);
    if (!value || !*value) return std::nullopt;
    return std::string_view(value);
}

std::size_t parse_num_threads(std::string_view text) {
    std::size_t n = 0;
    auto const [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc{} || end != text.data() + text.size() || n == 0 || n > cpu::max_threads)
        refuse("RAYO_NUM_THREADS", text, "a thread count from 1 to " + std::to_string(cpu::max_threads));
    return n;
}

CpuArch parse_cpu_arch(std::string_view text) {
    for (auto a : {CpuArch::sse4_2, CpuArch::avx2, CpuArch::avx512, CpuArch::avx512_vnni})
        if (text == to_string(a)) return a;
    refuse("RAYO_CPU_ARCH", text, "one of sse4.2, avx2, avx512, avx512-vnni");
}

KQuantActivations parse_kquant_activations(std::string_view text) {
    for (auto m : {KQuantActivations::q8_k, KQuantActivations::q8_k_residual})
        if (text == to_string(m)) return m;
    refuse("RAYO_KQUANT_ACTIVATIONS", text, "one of q8_k, q8_k_residual");
}

LogLevel parse_log_level(std::string_view text) {
    for (auto [name, level] :
         {std::pair{"debug", LogLevel::debug}, std::pair{"info", LogLevel::info}, std::pair{"warn", LogLevel::warn},
          std::pair{"error", LogLevel::error}, std::pair{"off", LogLevel::off}})
        if (text == name) return level;
    refuse("RAYO_LOG", text, "one of debug, info, warn, error, off");
}

}  // namespace rayo::detail
