// Process-wide settings. Each environment knob (RAYO_NUM_THREADS, RAYO_CPU_ARCH, RAYO_LOG,
// RAYO_DEVICE) has a C++ equivalent here or on Device.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace rayo {

// Size of the CPU thread pool (the caller counts as one thread). 0 = hardware threads.
void set_num_threads(std::size_t threads);
[[nodiscard]] std::size_t num_threads();

// Instruction sets the CPU kernels are built for, in increasing order.
enum class CpuArch { sse4_2, avx2, avx512 };
[[nodiscard]] std::string_view to_string(CpuArch arch) noexcept;
// Those this machine runs (and the build contains), in increasing order.
[[nodiscard]] std::vector<CpuArch> available_cpu_archs();
// The arch in use: RAYO_CPU_ARCH (sse4.2 | avx2 | avx512) when set, else the best available.
[[nodiscard]] CpuArch cpu_arch();
// Forces an arch; throws rayo::Unsupported when this machine cannot run it.
void set_cpu_arch(CpuArch arch);

enum class LogLevel { debug, info, warn, error, off };
// Messages at or above this level go to stderr. Default: warn, or RAYO_LOG.
void set_log_level(LogLevel level);
[[nodiscard]] LogLevel log_level();

}  // namespace rayo
