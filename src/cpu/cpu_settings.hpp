// The CPU backend's settings and their environment variables: the thread pool's size
// (RAYO_NUM_THREADS, rayo::set_num_threads) and the instruction set its kernels use (RAYO_CPU_ARCH,
// rayo::set_cpu_arch). The parsers take the variable's text and return the setting, or throw
// rayo::Error naming the variable, the (escaped, shortened) value and what it accepts.
#pragma once

#include <cstddef>
#include <string_view>

#include "rayo/settings.hpp"

namespace rayo::cpu {

[[nodiscard]] std::size_t parse_num_threads(std::string_view text);  // RAYO_NUM_THREADS: 1 to max_threads
[[nodiscard]] CpuArch parse_cpu_arch(std::string_view text);         // RAYO_CPU_ARCH: an arch's name

}  // namespace rayo::cpu
