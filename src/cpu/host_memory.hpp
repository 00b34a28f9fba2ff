// The host memory rayo's CPU backend holds, for Device::cpu().memory_usage(): tensor buffers (in
// use: their bytes; reserved: with each buffer's header) and the CPU kernels' per-thread scratch
// panels, kept between calls (reserved only). One count for the process: every thread's scratch
// serves whichever op runs on it.
#pragma once

#include "dispatch/memory_counter.hpp"

namespace rayo::cpu {

[[nodiscard]] detail::MemoryCounters& host_memory() noexcept;

}  // namespace rayo::cpu
