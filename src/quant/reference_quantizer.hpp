// The scalar reference quantizers: one block at a time (256 values, 32 for q8_0 / q4_0), exactly
// the algorithms of ggml's quantize_row_q{4,5,6,8}_K_ref and quantize_row_q{8,4}_0_ref
// (docs/quantization.md, /shared/QUANT.md): plain f32 arithmetic, accumulations in index order, no
// fused multiply-add, round-half-to-even through the 1.5·2^23 trick, and ggml's float -> int8
// conversions as x86 performs them. This is the oracle the fast kernels and the tests compare
// against; the CPU backend also runs every weight type's quantization through it.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "rayo/quant.hpp"

namespace rayo::quant::reference {

inline constexpr std::size_t block_values = quant_block_values;  // QK_K = 256

// Round to nearest, ties to even, for |value| <= 2^22: adding 1.5·2^23 leaves the integer in the
// low mantissa bits (ggml's nearest_int).
constexpr int nearest_int(float value) noexcept {
    float const shifted = value + 12582912.0f;
    return static_cast<int>(std::bit_cast<std::uint32_t>(shifted) & 0x007fffffu) - 0x00400000;
}

// C's float -> int8_t conversion as ggml's x86 builds perform it (cvttss2si, then the low byte):
// toward zero, and NaN or a value outside int32's range gives INT32_MIN, whose low byte is 0.
constexpr std::int8_t truncate_to_int8(float value) noexcept {
    std::uint32_t const i = value >= -2147483648.0f && value < 2147483648.0f
                                ? static_cast<std::uint32_t>(static_cast<std::int32_t>(value))
                                : 0x80000000u;
    return static_cast<std::int8_t>(static_cast<std::uint8_t>(i & 0xFFu));
}

// ---- q4_k / q5_k: 6-bit scale / min j (0..7) from the 12 packed bytes --------------------------------
struct ScaleMin {
    std::uint8_t scale;
    std::uint8_t min;
};

constexpr ScaleMin get_scale_min_k4(std::size_t j, std::uint8_t const* s) noexcept {
    if (j < 4) return {static_cast<std::uint8_t>(s[j] & 63), static_cast<std::uint8_t>(s[j + 4] & 63)};
    return {static_cast<std::uint8_t>((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4)),
            static_cast<std::uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4))};
}

// Packs eight 6-bit scales and mins into the 12 bytes (inverse of get_scale_min_k4).
constexpr void set_scale_min_k4(std::uint8_t const* ls, std::uint8_t const* lm, std::uint8_t* s) noexcept {
    for (std::size_t j = 0; j < 12; ++j) s[j] = 0;
    for (std::size_t j = 0; j < 8; ++j) {
        if (j < 4) {
            s[j] = ls[j];
            s[j + 4] = lm[j];
        } else {
            s[j + 4] = static_cast<std::uint8_t>((ls[j] & 0x0F) | ((lm[j] & 0x0F) << 4));
            s[j - 4] = static_cast<std::uint8_t>(s[j - 4] | ((ls[j] >> 4) << 6));
            s[j] = static_cast<std::uint8_t>(s[j] | ((lm[j] >> 4) << 6));
        }
    }
}

// Value i (0..255) of a q4_k block: byte of qs, nibble shift (0 or 4), sub-block (scale index).
constexpr std::size_t q4_k_byte(std::size_t i) noexcept { return (i / 64) * 32 + i % 32; }
constexpr unsigned q4_k_shift(std::size_t i) noexcept { return (i / 32) % 2 ? 4u : 0u; }
constexpr std::size_t q4_k_sub_block(std::size_t i) noexcept { return i / 32; }

// Value i (0..255) of a q5_k block: its low 4 bits as q4_k's (q4_k_byte, q4_k_shift), its
// fifth bit in bit q5_k_qh_bit(i) of qh[i % 32].
constexpr unsigned q5_k_qh_bit(std::size_t i) noexcept { return static_cast<unsigned>(i / 32); }

// Value i (0..31) of a q4_0 block: byte i % 16, low nibble for i < 16.
constexpr std::size_t q4_0_byte(std::size_t i) noexcept { return i % 16; }
constexpr unsigned q4_0_shift(std::size_t i) noexcept { return i < 16 ? 0u : 4u; }

// Value i (0..255) of a q6_k block: byte of ql and its nibble shift, byte of qh and its 2-bit
// shift, and the int8 scale index.
constexpr std::size_t q6_k_ql_byte(std::size_t i) noexcept { return (i / 128) * 64 + i % 64; }
constexpr unsigned q6_k_ql_shift(std::size_t i) noexcept { return (i % 128) / 64 ? 4u : 0u; }
constexpr std::size_t q6_k_qh_byte(std::size_t i) noexcept { return (i / 128) * 32 + i % 32; }
constexpr unsigned q6_k_qh_shift(std::size_t i) noexcept { return static_cast<unsigned>(2 * ((i % 128) / 32)); }
constexpr std::size_t q6_k_scale(std::size_t i) noexcept { return i / 16; }

// q8_k: bsums[g] covers quants [16g, 16g + 16).
constexpr std::size_t q8_k_bsum(std::size_t i) noexcept { return i / 16; }

// ---- one block --------------------------------------------------------------------------------
// x: 256 floats (32 for q8_0 / q4_0).
void quantize_q4_k(float const* x, q4_k& out) noexcept;
void quantize_q5_k(float const* x, q5_k& out) noexcept;
void quantize_q6_k(float const* x, q6_k& out) noexcept;
// An all-zero block gets d = 0 and zero quants and bsums (ggml leaves its bsums unwritten).
void quantize_q8_k(float const* x, q8_k& out) noexcept;
void quantize_q8_0(float const* x, q8_0& out) noexcept;
void quantize_q4_0(float const* x, q4_0& out) noexcept;

// y: 256 floats (32 for q8_0 / q4_0).
void dequantize_q4_k(q4_k const& b, float* y) noexcept;
void dequantize_q5_k(q5_k const& b, float* y) noexcept;
void dequantize_q6_k(q6_k const& b, float* y) noexcept;
void dequantize_q8_k(q8_k const& b, float* y) noexcept;
void dequantize_q8_0(q8_0 const& b, float* y) noexcept;
void dequantize_q4_0(q4_0 const& b, float* y) noexcept;

// Many consecutive blocks (values = blocks·block_values_of<B>), single-threaded.
template <QuantBlock B>
void quantize(float const* x, B* out, std::size_t blocks) noexcept {
    constexpr std::size_t n = block_values_of<B>;
    for (std::size_t i = 0; i < blocks; ++i) {
        if constexpr (std::same_as<B, q4_k>)
            quantize_q4_k(x + i * n, out[i]);
        else if constexpr (std::same_as<B, q5_k>)
            quantize_q5_k(x + i * n, out[i]);
        else if constexpr (std::same_as<B, q6_k>)
            quantize_q6_k(x + i * n, out[i]);
        else if constexpr (std::same_as<B, q8_0>)
            quantize_q8_0(x + i * n, out[i]);
        else if constexpr (std::same_as<B, q4_0>)
            quantize_q4_0(x + i * n, out[i]);
        else
            quantize_q8_k(x + i * n, out[i]);
    }
}
template <QuantBlock B>
void dequantize(B const* in, float* y, std::size_t blocks) noexcept {
    constexpr std::size_t n = block_values_of<B>;
    for (std::size_t i = 0; i < blocks; ++i) {
        if constexpr (std::same_as<B, q4_k>)
            dequantize_q4_k(in[i], y + i * n);
        else if constexpr (std::same_as<B, q5_k>)
            dequantize_q5_k(in[i], y + i * n);
        else if constexpr (std::same_as<B, q6_k>)
            dequantize_q6_k(in[i], y + i * n);
        else if constexpr (std::same_as<B, q8_0>)
            dequantize_q8_0(in[i], y + i * n);
        else if constexpr (std::same_as<B, q4_0>)
            dequantize_q4_0(in[i], y + i * n);
        else
            dequantize_q8_k(in[i], y + i * n);
    }
}

// ---- compile-time checks of the helpers -------------------------------------------------------
static_assert(nearest_int(0.5f) == 0 && nearest_int(1.5f) == 2 && nearest_int(2.5f) == 2 && nearest_int(-0.5f) == 0 &&
              nearest_int(-1.5f) == -2 && nearest_int(-2.5f) == -2 && nearest_int(2.4999998f) == 2 &&
              nearest_int(-127.0f) == -127 && nearest_int(126.6f) == 127);
static_assert(q4_k_byte(0) == 0 && q4_k_byte(31) == 31 && q4_k_byte(32) == 0 && q4_k_byte(63) == 31 &&
              q4_k_byte(64) == 32 && q4_k_byte(255) == 127 && q4_k_shift(0) == 0 && q4_k_shift(32) == 4 &&
              q4_k_shift(64) == 0 && q4_k_shift(255) == 4 && q4_k_sub_block(255) == 7);
static_assert(truncate_to_int8(16.9f) == 16 && truncate_to_int8(-0.9f) == 0 && truncate_to_int8(-127.0f) == -127 &&
              truncate_to_int8(200.0f) == -56 && truncate_to_int8(3e9f) == 0 && truncate_to_int8(-3e9f) == 0);
static_assert(q5_k_qh_bit(0) == 0 && q5_k_qh_bit(32) == 1 && q5_k_qh_bit(64) == 2 && q5_k_qh_bit(255) == 7 &&
              q4_0_byte(17) == 1 && q4_0_shift(15) == 0 && q4_0_shift(16) == 4);
static_assert(q6_k_ql_byte(0) == 0 && q6_k_ql_byte(32) == 32 && q6_k_ql_byte(64) == 0 && q6_k_ql_byte(96) == 32 &&
              q6_k_ql_byte(128) == 64 && q6_k_ql_byte(255) == 127 && q6_k_ql_shift(63) == 0 && q6_k_ql_shift(64) == 4 &&
              q6_k_qh_byte(0) == 0 && q6_k_qh_byte(32) == 0 && q6_k_qh_byte(96) == 0 && q6_k_qh_byte(128) == 32 &&
              q6_k_qh_byte(255) == 63 && q6_k_qh_shift(0) == 0 && q6_k_qh_shift(32) == 2 && q6_k_qh_shift(64) == 4 &&
              q6_k_qh_shift(96) == 6 && q6_k_scale(255) == 15);

namespace detail {
// Round trip of every (scale, min) pair through the packing: all 64 values in every slot.
constexpr bool scale_min_round_trip() noexcept {
    for (unsigned v = 0; v < 64; ++v) {
        std::uint8_t ls[8], lm[8], s[12];
        for (unsigned j = 0; j < 8; ++j) {
            ls[j] = static_cast<std::uint8_t>((v + 7 * j) % 64);
            lm[j] = static_cast<std::uint8_t>((v * 5 + 3 * j + 11) % 64);
        }
        set_scale_min_k4(ls, lm, s);
        for (std::size_t j = 0; j < 8; ++j) {
            ScaleMin const sm = get_scale_min_k4(j, s);
            if (sm.scale != ls[j] || sm.min != lm[j]) return false;
        }
    }
    return true;
}
}  // namespace detail
static_assert(detail::scale_min_round_trip());
// The documented bytes: scales 0–3 in bytes 0–3, mins 0–3 in 4–7, the rest split as in QUANT.md.
static_assert([] {
    std::uint8_t const s[12] = {0xC1, 0x02, 0x03, 0x04, 0x45, 0x06, 0x07, 0x08, 0xA9, 0x0A, 0x0B, 0x0C};
    ScaleMin const a = get_scale_min_k4(0, s), b = get_scale_min_k4(4, s);
    return a.scale == 1 && a.min == 5 && b.scale == (0x9 | (3 << 4)) && b.min == (0xA | (1 << 4));
}());

}  // namespace rayo::quant::reference
