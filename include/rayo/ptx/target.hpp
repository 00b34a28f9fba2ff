// The GPU a PTX module is written for, and the PTX ISA version that goes with it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rayo/export.hpp"

namespace rayo::ptx {

// sm_90a enables the architecture-specific instructions of Hopper (wgmma, setmaxnreg); code built
// for it runs only on sm_90 devices.
enum class Target : std::uint8_t { sm_80, sm_86, sm_89, sm_90, sm_90a };

struct RAYO_API IsaVersion {
    int major = 8;
    int minor = 0;
    friend constexpr auto operator<=>(IsaVersion, IsaVersion) = default;
};

constexpr std::string_view to_string(Target t) noexcept {
    switch (t) {
        case Target::sm_80: return "sm_80";
        case Target::sm_86: return "sm_86";
        case Target::sm_89: return "sm_89";
        case Target::sm_90: return "sm_90";
        case Target::sm_90a: return "sm_90a";
    }
    return "sm_?";
}

// The compute capability as major*10 + minor (90 for sm_90 and sm_90a).
constexpr int compute_capability(Target t) noexcept {
    switch (t) {
        case Target::sm_80: return 80;
        case Target::sm_86: return 86;
        case Target::sm_89: return 89;
        case Target::sm_90:
        case Target::sm_90a: return 90;
    }
    return 0;
}

// The oldest PTX ISA that knows the target (PTX ISA, "Release notes" table).
constexpr IsaVersion minimum_isa(Target t) noexcept {
    switch (t) {
        case Target::sm_80: return {7, 0};
        case Target::sm_86: return {7, 1};
        case Target::sm_89: return {7, 8};
        case Target::sm_90: return {7, 8};
        case Target::sm_90a: return {8, 0};
    }
    return {8, 0};
}

// What rayo emits by default: PTX 8.0, which every driver since CUDA 12.0 accepts for all targets.
constexpr IsaVersion default_isa(Target) noexcept { return {8, 0}; }

// The best target for a device of compute capability `cc` (major*10 + minor) among those rayo
// emits; architecture-specific sm_90a is chosen only when asked for.
constexpr Target target_for_compute_capability(int cc) noexcept {
    if (cc >= 90) return Target::sm_90;
    if (cc >= 89) return Target::sm_89;
    if (cc >= 86) return Target::sm_86;
    return Target::sm_80;
}

inline std::string to_string(IsaVersion v) { return std::to_string(v.major) + "." + std::to_string(v.minor); }

}  // namespace rayo::ptx
