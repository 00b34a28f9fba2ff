// Element types: IEEE binary16 (`rayo::half`), bfloat16 and the DType tag that names them at run time.
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "rayo/export.hpp"

namespace rayo {

namespace detail {

// float -> binary16 bits, round to nearest even; NaN stays NaN (quiet, sign kept), overflow -> Inf.
// The template's parameter only names a copy: the CPU kernels, compiled once per instruction set,
// instantiate their own (float_to_half_bits_as<A>), so no TU links another's out-of-line copy.
template <class Copy>
constexpr std::uint16_t float_to_half_bits_as(float value) noexcept {
    std::uint32_t const f = std::bit_cast<std::uint32_t>(value);
    std::uint32_t const sign = (f >> 16) & 0x8000u;
    std::uint32_t const abs = f & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // Inf or NaN
        std::uint32_t const payload = abs > 0x7f800000u ? (0x0200u | ((abs >> 13) & 0x03ffu)) : 0u;
        return static_cast<std::uint16_t>(sign | 0x7c00u | payload);
    }
    if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to >= 65520
    if (abs < 0x38800000u) {                                             // result is subnormal (or zero) in binary16
        if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);  // < 2^-25 rounds to 0
        std::uint32_t const exponent = abs >> 23;
        std::uint32_t const mantissa = (abs & 0x7fffffu) | 0x800000u;
        std::uint32_t const shift = 126u - exponent;  // 14..24 so the value lands on 2^-24 units
        std::uint32_t half_mant = mantissa >> shift;
        std::uint32_t const rest = mantissa & ((1u << shift) - 1u);
        std::uint32_t const halfway = 1u << (shift - 1u);
        if (rest > halfway || (rest == halfway && (half_mant & 1u))) ++half_mant;
        return static_cast<std::uint16_t>(sign | half_mant);
    }
    std::uint32_t bits = abs - 0x38000000u;  // rebias exponent 127 -> 15 (still in float position)
    std::uint32_t const rest = bits & 0x1fffu;
    bits >>= 13;
    if (rest > 0x1000u || (rest == 0x1000u && (bits & 1u))) ++bits;  // carry into exponent is correct
    return static_cast<std::uint16_t>(sign | bits);
}
constexpr std::uint16_t float_to_half_bits(float value) noexcept { return float_to_half_bits_as<void>(value); }

constexpr float half_bits_to_float(std::uint16_t h) noexcept {
    std::uint32_t const sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    std::uint32_t const exponent = (h >> 10) & 0x1fu;
    std::uint32_t mantissa = h & 0x03ffu;
    if (exponent == 0x1fu) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    if (mantissa == 0) return std::bit_cast<float>(sign);
    // Subnormal half: normalise into a float.
    std::uint32_t e = 113;
    while ((mantissa & 0x0400u) == 0) {
        mantissa <<= 1;
        --e;
    }
    return std::bit_cast<float>(sign | (e << 23) | ((mantissa & 0x03ffu) << 13));
}

// float -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN. Copy: as for half.
template <class Copy>
constexpr std::uint16_t float_to_bfloat16_bits_as(float value) noexcept {
    std::uint32_t const f = std::bit_cast<std::uint32_t>(value);
    if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((f >> 16) | 0x0040u);
    std::uint32_t const rounding = 0x7fffu + ((f >> 16) & 1u);
    return static_cast<std::uint16_t>((f + rounding) >> 16);
}
constexpr std::uint16_t float_to_bfloat16_bits(float value) noexcept { return float_to_bfloat16_bits_as<void>(value); }

constexpr float bfloat16_bits_to_float(std::uint16_t b) noexcept {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace detail

// IEEE 754 binary16. Arithmetic happens in float; storage is 16 bits.
struct RAYO_API half {
    std::uint16_t bits = 0;

    constexpr half() noexcept = default;
    constexpr half(float value) noexcept : bits(detail::float_to_half_bits(value)) {}  // NOLINT: implicit like float
    constexpr operator float() const noexcept { return detail::half_bits_to_float(bits); }  // NOLINT
    static constexpr half from_bits(std::uint16_t b) noexcept {
        half h;
        h.bits = b;
        return h;
    }
    friend constexpr bool operator==(half, half) noexcept = default;  // bitwise
};

// bfloat16: the top 16 bits of a float.
struct RAYO_API bfloat16 {
    std::uint16_t bits = 0;

    constexpr bfloat16() noexcept = default;
    constexpr bfloat16(float value) noexcept : bits(detail::float_to_bfloat16_bits(value)) {}   // NOLINT
    constexpr operator float() const noexcept { return detail::bfloat16_bits_to_float(bits); }  // NOLINT
    static constexpr bfloat16 from_bits(std::uint16_t b) noexcept {
        bfloat16 h;
        h.bits = b;
        return h;
    }
    friend constexpr bool operator==(bfloat16, bfloat16) noexcept = default;  // bitwise
};

static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2);
static_assert(std::is_trivially_copyable_v<half> && std::is_trivially_copyable_v<bfloat16>);

// Element types. q4_k, q6_k, q8_k, q8_0, q4_0 and q5_k are GGUF block types: one element of
// storage is a block of 256 values (32 for q8_0 and q4_0; see rayo/quant.hpp).
enum class DType : std::uint8_t { f32, f16, bf16, i32, i64, q4_k, q6_k, q8_k, q8_0, q4_0, q5_k };

constexpr std::string_view to_string(DType t) noexcept {
    switch (t) {
        case DType::f32: return "f32";
        case DType::f16: return "f16";
        case DType::bf16: return "bf16";
        case DType::i32: return "i32";
        case DType::i64: return "i64";
        case DType::q4_k: return "q4_k";
        case DType::q6_k: return "q6_k";
        case DType::q8_k: return "q8_k";
        case DType::q8_0: return "q8_0";
        case DType::q4_0: return "q4_0";
        case DType::q5_k: return "q5_k";
    }
    return "?";
}

// Values per storage element: 256 for the K-quant block types, 32 for q8_0 and q4_0, else 1.
constexpr std::size_t block_elements(DType t) noexcept {
    switch (t) {
        case DType::q4_k:
        case DType::q6_k:
        case DType::q8_k:
        case DType::q5_k: return 256;
        case DType::q8_0:
        case DType::q4_0: return 32;
        case DType::f32:
        case DType::f16:
        case DType::bf16:
        case DType::i32:
        case DType::i64: return 1;
    }
    return 1;
}

// Bytes per storage element (per block for the block types).
constexpr std::size_t size_of(DType t) noexcept {
    switch (t) {
        case DType::f32:
        case DType::i32: return 4;
        case DType::f16:
        case DType::bf16: return 2;
        case DType::i64: return 8;
        case DType::q4_k: return 144;
        case DType::q6_k: return 210;
        case DType::q8_k: return 292;
        case DType::q8_0: return 34;
        case DType::q4_0: return 18;
        case DType::q5_k: return 176;
    }
    return 0;
}

// Bytes that `values` values of type t occupy (values a multiple of block_elements(t)).
constexpr std::size_t bytes_for(DType t, std::size_t values) noexcept {
    return values / block_elements(t) * size_of(t);
}

// The element types a Tensor may hold, and their run-time tags.
template <class T>
struct dtype_traits;
template <>
struct dtype_traits<float> {
    static constexpr DType value = DType::f32;
};
template <>
struct dtype_traits<half> {
    static constexpr DType value = DType::f16;
};
template <>
struct dtype_traits<bfloat16> {
    static constexpr DType value = DType::bf16;
};
template <>
struct dtype_traits<std::int32_t> {
    static constexpr DType value = DType::i32;
};
template <>
struct dtype_traits<std::int64_t> {
    static constexpr DType value = DType::i64;
};

template <class T>
concept Element = requires {
    dtype_traits<T>::value;
};

template <class T>
concept FloatingElement = std::same_as<T, float> || std::same_as<T, half> || std::same_as<T, bfloat16>;

template <Element T>
inline constexpr DType dtype_of = dtype_traits<T>::value;

}  // namespace rayo
