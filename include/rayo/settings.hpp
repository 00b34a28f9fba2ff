// Process-wide settings. Each environment knob (RAYO_NUM_THREADS, RAYO_CPU_ARCH,
// RAYO_KQUANT_ACTIVATIONS, RAYO_LOG, RAYO_DUMP_KERNELS, RAYO_DEVICE) has a C++ equivalent here or on
// Device.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "rayo/export.hpp"

namespace rayo {

// Size of the CPU thread pool (the caller counts as one thread). 0 = hardware threads.
RAYO_API void set_num_threads(std::size_t threads);
[[nodiscard]] RAYO_API std::size_t num_threads();

// Instruction sets the CPU kernels are built for, in increasing order. avx512_vnni is avx512 plus
// the int8 dot-product instructions (used by the K-quant kernels).
enum class CpuArch { sse4_2, avx2, avx512, avx512_vnni };
[[nodiscard]] RAYO_API std::string_view to_string(CpuArch arch) noexcept;
// Those this machine runs (and the build contains), in increasing order.
[[nodiscard]] RAYO_API std::vector<CpuArch> available_cpu_archs();
// The arch in use: RAYO_CPU_ARCH (sse4.2 | avx2 | avx512 | avx512-vnni) when set, else the best available.
[[nodiscard]] RAYO_API CpuArch cpu_arch();
// Forces an arch; throws rayo::Unsupported when this machine cannot run it.
RAYO_API void set_cpu_arch(CpuArch arch);

// How linear with block-quantized weights quantizes its activations on the CPU and CUDA backends when
// they take the integer dot products (a few rows of x; larger batches do not quantize x and are not
// affected, nor is the Vulkan backend, whose GEMV reads x as f32):
//   q8_k_residual  (default) x as a q8_k block plus a q8_k of what that leaves over: ~1e-5
//                  relative error from the activations, about twice the multiply work of
//   q8_k           one q8_k block per 256 values, exactly as ggml: ~0.5% relative error.
// CUDA's spanning GEMV (one row of x, q4_k weights) runs only with q8_k_residual: x as int16, as
// accurate.
// Default: q8_k_residual, or RAYO_KQUANT_ACTIVATIONS=q8_k|q8_k_residual.
enum class KQuantActivations { q8_k, q8_k_residual };
[[nodiscard]] RAYO_API std::string_view to_string(KQuantActivations mode) noexcept;
RAYO_API void set_kquant_activations(KQuantActivations mode);
[[nodiscard]] RAYO_API KQuantActivations kquant_activations();

enum class LogLevel { debug, info, warn, error, off };
// Messages at or above this level go to stderr. Default: warn, or RAYO_LOG.
RAYO_API void set_log_level(LogLevel level);
[[nodiscard]] RAYO_API LogLevel log_level();

// Where the backends write every kernel they load from now on, as they hand it to the driver:
// CUDA's PTX modules as NAME.TARGET.ptx, Vulkan's SPIR-V modules as NAME.spv, named by the kernel
// or shader (a kernel loaded again, on another device, overwrites its file). "" (the default, or
// RAYO_DUMP_KERNELS unset) writes nothing. The directory is created when set; rayo::Error names
// it where it cannot be, and the kernel load that cannot write its file throws the same way.
RAYO_API void set_kernel_dump_directory(std::string const& directory);
[[nodiscard]] RAYO_API std::string kernel_dump_directory();

}  // namespace rayo
