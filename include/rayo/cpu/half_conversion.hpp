// f16 and bf16 -> f32 for the CPU kernels. These are templates on the xsimd arch (rather than the
// constexpr converters of rayo/dtype.hpp) so that each per-ISA TU gets its own copy: an inline
// function shared by TUs built with different flags could be linked in its AVX2 form for all.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

namespace rayo::cpu {

template <class A>
[[gnu::always_inline]] inline float half_bits_to_f32(std::uint16_t h) noexcept {
    if constexpr (std::is_base_of_v<xsimd::avx2, A> || std::is_base_of_v<xsimd::avx512f, A>) {
        return _cvtsh_ss(h);  // F16C: every AVX2 and AVX-512 build enables it
    } else {
        std::uint32_t const sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
        std::uint32_t const exponent = (h >> 10) & 0x1fu;
        std::uint32_t mantissa = h & 0x03ffu;
        std::uint32_t bits;
        if (exponent == 0x1fu) {
            bits = sign | 0x7f800000u | (mantissa << 13);
        } else if (exponent != 0) {
            bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
        } else if (mantissa == 0) {
            bits = sign;
        } else {  // subnormal half: normalise into a float
            std::uint32_t e = 113;
            while ((mantissa & 0x0400u) == 0) {
                mantissa <<= 1;
                --e;
            }
            bits = sign | (e << 23) | ((mantissa & 0x03ffu) << 13);
        }
        float value;
        std::memcpy(&value, &bits, sizeof value);
        return value;
    }
}

template <class A>
[[gnu::always_inline]] inline float bf16_bits_to_f32(std::uint16_t b) noexcept {
    std::uint32_t const bits = static_cast<std::uint32_t>(b) << 16;
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

}  // namespace rayo::cpu
