// libFuzzer target: any bytes as "NAME=VALUE", handed to the parser of that environment variable
// (RAYO_NUM_THREADS, RAYO_CPU_ARCH, RAYO_KQUANT_ACTIVATIONS, RAYO_LOG; RAYO_DEVICE is
// Device::parse); bytes of any other form go to every parser. A parser either returns a setting
// that reads back as the text it came from, or throws rayo::Error whose message names the variable
// and is short and printable (no control characters, no NUL, whatever the input held). Anything
// else, or a sanitizer report, is a finding.
#include <rayo/rayo.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "core/environment.hpp"
#include "cpu/cpu_settings.hpp"

namespace {

constexpr std::size_t max_message = 600;

[[noreturn]] void finding(std::string_view what, std::string_view text) {
    std::cerr << "settings_fuzz: " << what << " (input of " << text.size() << " bytes)\n";
    std::abort();
}

void check_message(rayo::Error const& e, std::string_view names, std::string_view text) {
    std::string_view const message = e.what();
    if (message.size() > max_message) finding("message longer than " + std::to_string(max_message) + " bytes", text);
    for (char c : message)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) finding("control character in message", text);
    if (message.find(names) == std::string_view::npos) finding("message does not name " + std::string(names), text);
}

// Runs parse(text); a result must satisfy reads_back(result).
template <class Parse, class ReadsBack>
void run(std::string_view names, std::string_view text, Parse parse, ReadsBack reads_back) {
    try {
        if (!reads_back(parse(text))) finding(std::string(names) + ": result does not read back", text);
    } catch (rayo::Error const& e) {
        check_message(e, names, text);
    }
}

void num_threads(std::string_view text) {
    run("RAYO_NUM_THREADS", text, rayo::cpu::parse_num_threads, [](std::size_t n) { return n >= 1 && n <= 1024; });
}
void cpu_arch(std::string_view text) {
    run("RAYO_CPU_ARCH", text, rayo::cpu::parse_cpu_arch, [&](rayo::CpuArch a) { return rayo::to_string(a) == text; });
}
void kquant_activations(std::string_view text) {
    run("RAYO_KQUANT_ACTIVATIONS", text, rayo::detail::parse_kquant_activations,
        [&](rayo::KQuantActivations m) { return rayo::to_string(m) == text; });
}
void log_level(std::string_view text) {
    run("RAYO_LOG", text, rayo::detail::parse_log_level,
        [&](rayo::LogLevel level) { return level >= rayo::LogLevel::debug && level <= rayo::LogLevel::off; });
}
void device(std::string_view text) {
    run("unknown device", text, rayo::Device::parse,
        [](rayo::Device const& d) { return rayo::Device::parse(d.id()) == d; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    std::string_view const input(reinterpret_cast<char const*>(data), size);
    auto const eq = input.find('=');
    std::string_view const name = input.substr(0, eq == std::string_view::npos ? 0 : eq);
    std::string_view const value = eq == std::string_view::npos ? input : input.substr(eq + 1);
    if (name == "RAYO_NUM_THREADS")
        num_threads(value);
    else if (name == "RAYO_CPU_ARCH")
        cpu_arch(value);
    else if (name == "RAYO_KQUANT_ACTIVATIONS")
        kquant_activations(value);
    else if (name == "RAYO_LOG")
        log_level(value);
    else if (name == "RAYO_DEVICE")
        device(value);
    else
        for (auto parse : {num_threads, cpu_arch, kquant_activations, log_level, device}) parse(input);
    return 0;
}
