// The environment variables' parsers: every accepted spelling, and junk refused with a message
// that names the variable and shows the value escaped and shortened (tests/fuzz/settings_fuzz.cpp
// runs them on arbitrary text).
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "core/environment.hpp"
#include "cpu/cpu_settings.hpp"
#include "rayo/rayo.hpp"

namespace rayo::detail {
namespace {

using cpu::parse_cpu_arch;
using cpu::parse_num_threads;

template <class Parse>
std::string refusal(Parse parse, std::string_view text) {
    try {
        (void)parse(text);
    } catch (Error const& e) {
        return e.what();
    }
    return "(accepted)";
}

TEST(Environment, AcceptsEverySpelling) {
    EXPECT_EQ(parse_num_threads("1"), 1u);
    EXPECT_EQ(parse_num_threads("1024"), 1024u);
    for (auto a : {CpuArch::sse4_2, CpuArch::avx2, CpuArch::avx512, CpuArch::avx512_vnni})
        EXPECT_EQ(parse_cpu_arch(to_string(a)), a);
    for (auto m : {KQuantActivations::q8_k, KQuantActivations::q8_k_residual})
        EXPECT_EQ(parse_kquant_activations(to_string(m)), m);
    EXPECT_EQ(parse_log_level("debug"), LogLevel::debug);
    EXPECT_EQ(parse_log_level("info"), LogLevel::info);
    EXPECT_EQ(parse_log_level("warn"), LogLevel::warn);
    EXPECT_EQ(parse_log_level("error"), LogLevel::error);
    EXPECT_EQ(parse_log_level("off"), LogLevel::off);
}

TEST(Environment, RefusesJunkNamingTheVariableAndWhatItTakes) {
    EXPECT_EQ(refusal(parse_num_threads, "0"), "RAYO_NUM_THREADS='0' is not a thread count from 1 to 1024");
    EXPECT_EQ(refusal(parse_num_threads, "100000"), "RAYO_NUM_THREADS='100000' is not a thread count from 1 to 1024");
    EXPECT_EQ(refusal(parse_num_threads, "4 "), "RAYO_NUM_THREADS='4 ' is not a thread count from 1 to 1024");
    EXPECT_EQ(refusal(parse_cpu_arch, "avx"), "RAYO_CPU_ARCH='avx' is not one of sse4.2, avx2, avx512, avx512-vnni");
    EXPECT_EQ(refusal(parse_kquant_activations, "Q8_K"),
              "RAYO_KQUANT_ACTIVATIONS='Q8_K' is not one of q8_k, q8_k_residual");
    EXPECT_EQ(refusal(parse_log_level, "junk"), "RAYO_LOG='junk' is not one of debug, info, warn, error, off");
}

TEST(Environment, ValuesInMessagesAreEscapedAndShortened) {
    using namespace std::string_view_literals;
    EXPECT_EQ(refusal(parse_log_level, "warn\0x"sv),
              "RAYO_LOG='warn\\x00x' is not one of debug, info, warn, error, off");
    EXPECT_EQ(refusal(parse_log_level, "\x1b[31m"), "RAYO_LOG='\\x1b[31m' is not one of debug, info, warn, error, off");
    std::string const message = refusal(parse_cpu_arch, std::string(1 << 20, 'a'));
    EXPECT_LT(message.size(), 200u) << message;
    EXPECT_NE(message.find("aaa..."), std::string::npos) << message;
    std::string const device = [] {
        try {
            (void)Device::parse(std::string(1 << 20, 'x') + "\n");
        } catch (Error const& e) {
            return std::string(e.what());
        }
        return std::string("(accepted)");
    }();
    EXPECT_LT(device.size(), 300u);
    EXPECT_EQ(device.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace rayo::detail
