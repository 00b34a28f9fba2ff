// Counters that make fallbacks visible: an op a backend cannot run is run on the CPU, logged once
// per (op, device) and counted here.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "rayo/export.hpp"

namespace rayo {

struct RAYO_API Stats {
    std::uint64_t ops = 0;            // ops dispatched to any backend
    std::uint64_t cpu_fallbacks = 0;  // of those, run on the CPU because the backend could not
    // "op on device" -> count, e.g. "softmax on vulkan:0"
    std::map<std::string, std::uint64_t> fallbacks_by_op;
};

[[nodiscard]] RAYO_API Stats stats();
RAYO_API void reset_stats();

}  // namespace rayo
