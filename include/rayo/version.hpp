// rayo's version as constants (rayo/config.hpp has it as macros, for #if).
#pragma once

#include "rayo/config.hpp"  // IWYU pragma: export

namespace rayo {
inline constexpr int version_major = RAYO_VERSION_MAJOR;
inline constexpr int version_minor = RAYO_VERSION_MINOR;
inline constexpr int version_patch = RAYO_VERSION_PATCH;
inline constexpr char const* version_string = RAYO_VERSION_STRING;
}  // namespace rayo
