// Assembles generated PTX with the CUDA toolkit's ptxas (found by CMake) and reports, on failure,
// ptxas's log with the PTX lines it names. Skips when the build found no ptxas.
#pragma once

#include <gtest/gtest.h>

#include <rayo/ptx/ptx.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace rayo::test {

inline std::string ptxas_path() { return RAYO_PTXAS; }

#define RAYO_SKIP_WITHOUT_PTXAS()                                                                       \
    do {                                                                                                \
        if (::rayo::test::ptxas_path().empty())                                                         \
            GTEST_SKIP() << "ptxas not found at configure time (install the CUDA toolkit; RAYO_PTXAS)"; \
    } while (false)

// The ptxas architecture name of a target ("sm_90a" stays as it is).
inline std::string ptxas_arch(ptx::Target t) { return std::string(ptx::to_string(t)); }

// Runs ptxas on `text` for `target`; returns "" on success, else the log followed by every PTX
// line the log names. At -O0: ptxas parses, checks and assembles the PTX at every level, and its
// optimiser is nearly half the time of the suite's thousands of kernels without being what these
// tests look at (the register and spill tests run ptxas at its default level themselves).
inline std::string ptxas_failure(std::string const& name, std::string const& text, ptx::Target target) {
    namespace fs = std::filesystem;
    fs::path const dir = fs::path(RAYO_PTX_TEST_DIR);
    fs::create_directories(dir);
    std::string const stem = name + "." + ptxas_arch(target);
    fs::path const source = dir / (stem + ".ptx"), cubin = dir / (stem + ".cubin"), log = dir / (stem + ".log");
    std::ofstream(source) << text;
    std::string const command = "'" + ptxas_path() + "' -O0 -arch=" + ptxas_arch(target) + " '" + source.string() +
                                "' -o '" + cubin.string() + "' > '" + log.string() + "' 2>&1";
    int const status = std::system(command.c_str());
    if (status == 0) return {};
    std::stringstream log_text;
    log_text << std::ifstream(log).rdbuf();
    std::string report = "ptxas -arch=" + ptxas_arch(target) + " failed (status " + std::to_string(status) + ") on " +
                         source.string() + ":\n" + log_text.str();
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::string const log_string = log_text.str();
    std::regex const line_ref(R"(line (\d+))");
    for (std::sregex_iterator it(log_string.begin(), log_string.end(), line_ref), end; it != end; ++it) {
        std::size_t const n = std::stoul((*it)[1].str());
        if (n >= 1 && n <= lines.size()) report += "  PTX line " + std::to_string(n) + ": " + lines[n - 1] + "\n";
    }
    return report;
}

// Emits `kernel` for `target` and expects ptxas to accept it.
inline void expect_assembles(ptx::Kernel const& kernel, ptx::Target target) {
    std::string const text = kernel.emit(target);
    std::string const failure = ptxas_failure(kernel.name(), text, target);
    EXPECT_TRUE(failure.empty()) << failure;
}

}  // namespace rayo::test
