// The float formats of rayo's element types, for references that round to them: a float64 value
// rounded to f32, f16 or bf16 exactly (no double rounding through f32), and errors in units in the
// last place of the format.
#pragma once

#include <rayo/dtype.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace rayo::test::ops {

// A float format: significand bits after the point, smallest normal exponent, and the magnitude
// from which values round to infinity.
struct Format {
    int mantissa, min_exponent;
    double overflow;
    double max;  // the largest finite value
};
constexpr Format f32_format{23, -126, 0x1p128 - 0x1p103, 0x1.fffffep127};
constexpr Format f16_format{10, -14, 65520.0, 65504.0};
constexpr Format bf16_format{7, -126, 0x1p128 - 0x1p119, 0x1.fep127};

template <class T>
constexpr Format format_of() {
    if constexpr (std::is_same_v<T, half>)
        return f16_format;
    else if constexpr (std::is_same_v<T, bfloat16>)
        return bf16_format;
    else
        return f32_format;
}

// v rounded to nearest even in `f` (exact arithmetic in double for every value these tests make).
inline double round_to(double v, Format f) {
    if (std::isnan(v) || v == 0 || std::isinf(v)) return v;
    if (std::abs(v) >= f.overflow) return std::copysign(std::numeric_limits<double>::infinity(), v);
    int const e = std::max(std::ilogb(v), f.min_exponent);
    double const quantum = std::ldexp(1.0, e - f.mantissa);
    return std::copysign(std::nearbyint(std::abs(v) / quantum) * quantum, v);
}

// The error of `got` (a value of format f) against the exact `want`, in units in the last place of
// f at `want` rounded to f: 0 when got is want, at most 0.5 when got is want rounded to nearest.
// Both NaN: 0; an infinity must match, or be the largest finite value (1 ulp).
inline double ulp_error_in(Format f, double got, double want) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    if (std::isnan(want)) return std::isnan(got) ? 0.0 : inf;
    if (std::isnan(got)) return inf;
    double const rounded = round_to(want, f);
    if (std::isinf(rounded))
        return got == rounded ? 0.0
                              : (std::abs(got) == f.max && std::signbit(got) == std::signbit(rounded) ? 1.0 : inf);
    if (std::isinf(got)) return inf;
    int const e = rounded == 0 ? f.min_exponent : std::max(std::ilogb(rounded), f.min_exponent);
    return std::abs(got - want) / std::ldexp(1.0, e - f.mantissa);
}

}  // namespace rayo::test::ops
