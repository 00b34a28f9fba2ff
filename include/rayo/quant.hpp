// GGUF block types, byte for byte as GGUF files and ggml store them (see docs/quantization.md).
// A K-quant block (q4_k, q5_k, q6_k, q8_k) holds 256 values, a q8_0 / q4_0 block 32; a Tensor of
// blocks has its shape in values, with the last dimension a multiple of the block's values.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "rayo/dtype.hpp"
#include "rayo/export.hpp"
#include "rayo/progress.hpp"

namespace rayo {

// Declared only: the per-ISA kernel TUs include this header for the block layouts and should not
// pull in Tensor's storage machinery (rayo/tensor.hpp, or rayo/rayo.hpp, defines it).
template <Element T>
class Tensor;

// Values per K-quant super-block (ggml's QK_K), and per q8_0 / q4_0 block (QK8_0, QK4_0).
inline constexpr std::size_t quant_block_values = 256;
inline constexpr std::size_t small_block_values = 32;

// 4.5 bits per value: eight sub-blocks of 32 with 6-bit scales and mins.
// value = f32(d)·sc[j]·q − f32(dmin)·m[j], q in 0..15.
struct RAYO_API q4_k {
    half d;
    half dmin;
    std::array<std::uint8_t, 12> scales;  // packed 6-bit scales and mins
    std::array<std::uint8_t, 128> qs;     // 4-bit quants, two sub-blocks per 32-byte chunk
};

// 6.5625 bits per value: sixteen sub-blocks of 16 with int8 scales.
// value = f32(d)·scales[s]·(q − 32), q in 0..63.
struct RAYO_API q6_k {
    std::array<std::uint8_t, 128> ql;  // low 4 bits
    std::array<std::uint8_t, 64> qh;   // high 2 bits
    std::array<std::int8_t, 16> scales;
    half d;
};

// Activations: 8-bit quants with one f32 scale, and sums of each 16 quants.
struct RAYO_API q8_k {
    float d;
    std::array<std::int8_t, 256> qs;
    std::array<std::int16_t, 16> bsums;
};

// 8.5 bits per value: 32 int8 codes with one f16 scale. value = f32(d)·qs[i].
struct RAYO_API q8_0 {
    half d;
    std::array<std::int8_t, 32> qs;
};

// 4.5 bits per value: 32 4-bit codes with one f16 scale. value = f32(d)·(q − 8), q in 0..15;
// value i (< 16) is the low nibble of qs[i], value 16 + i its high nibble.
struct RAYO_API q4_0 {
    half d;
    std::array<std::uint8_t, 16> qs;
};

// 5.5 bits per value: eight sub-blocks of 32 with 6-bit scales and mins packed as q4_k's.
// value = f32(d)·sc[j]·q − f32(dmin)·m[j], q in 0..31: the low 4 bits in qs (laid out as q4_k's),
// bit 4 of value 64c + l (sub-block 2c) in bit 2c of qh[l], of value 64c + 32 + l in bit 2c + 1.
struct RAYO_API q5_k {
    half d;
    half dmin;
    std::array<std::uint8_t, 12> scales;  // packed 6-bit scales and mins, as q4_k's
    std::array<std::uint8_t, 32> qh;      // high bits
    std::array<std::uint8_t, 128> qs;     // low 4 bits, two sub-blocks per 32-byte chunk
};

static_assert(sizeof(q4_k) == 144 && offsetof(q4_k, dmin) == 2 && offsetof(q4_k, scales) == 4 &&
              offsetof(q4_k, qs) == 16);
static_assert(sizeof(q6_k) == 210 && offsetof(q6_k, qh) == 128 && offsetof(q6_k, scales) == 192 &&
              offsetof(q6_k, d) == 208);
static_assert(sizeof(q8_k) == 292 && offsetof(q8_k, qs) == 4 && offsetof(q8_k, bsums) == 260);
static_assert(sizeof(q8_0) == 34 && offsetof(q8_0, qs) == 2);
static_assert(sizeof(q4_0) == 18 && offsetof(q4_0, qs) == 2);
static_assert(sizeof(q5_k) == 176 && offsetof(q5_k, dmin) == 2 && offsetof(q5_k, scales) == 4 &&
              offsetof(q5_k, qh) == 16 && offsetof(q5_k, qs) == 48);
static_assert(std::is_trivially_copyable_v<q4_k> && std::is_trivially_copyable_v<q6_k> &&
              std::is_trivially_copyable_v<q8_k>);
static_assert(std::is_trivially_copyable_v<q8_0> && std::is_trivially_copyable_v<q4_0> &&
              std::is_trivially_copyable_v<q5_k>);
static_assert(alignof(q4_k) == 2 && alignof(q6_k) == 2 && alignof(q8_k) == 4);
static_assert(alignof(q8_0) == 2 && alignof(q4_0) == 2 && alignof(q5_k) == 2);

template <>
struct dtype_traits<q4_k> {
    static constexpr DType value = DType::q4_k;
};
template <>
struct dtype_traits<q6_k> {
    static constexpr DType value = DType::q6_k;
};
template <>
struct dtype_traits<q8_k> {
    static constexpr DType value = DType::q8_k;
};
template <>
struct dtype_traits<q8_0> {
    static constexpr DType value = DType::q8_0;
};
template <>
struct dtype_traits<q4_0> {
    static constexpr DType value = DType::q4_0;
};
template <>
struct dtype_traits<q5_k> {
    static constexpr DType value = DType::q5_k;
};
static_assert(size_of(DType::q4_k) == sizeof(q4_k) && size_of(DType::q6_k) == sizeof(q6_k) &&
              size_of(DType::q8_k) == sizeof(q8_k));
static_assert(size_of(DType::q8_0) == sizeof(q8_0) && size_of(DType::q4_0) == sizeof(q4_0) &&
              size_of(DType::q5_k) == sizeof(q5_k));
static_assert(block_elements(DType::q8_0) == small_block_values && block_elements(DType::q4_0) == small_block_values &&
              block_elements(DType::q5_k) == quant_block_values);

template <class T>
concept QuantBlock = std::same_as<T, q4_k> || std::same_as<T, q6_k> || std::same_as<T, q8_k> || std::same_as<T, q8_0> ||
    std::same_as<T, q4_0> || std::same_as<T, q5_k>;

// Values per block of B: 256, or 32 for q8_0 and q4_0.
template <QuantBlock B>
inline constexpr std::size_t block_values_of = block_elements(dtype_of<B>);

// ---- quantize / dequantize ---------------------------------------------------------------------
// Each block of 256 (q8_0, q4_0: 32) consecutive values along the last axis becomes one block,
// exactly as ggml's reference quantizers make it (GGUF files and rayo exchange blocks byte for
// byte). The last dimension must be a multiple of the block's values (ShapeError otherwise). The
// result stays on x's device. q8_0, q4_0, q4_k, q5_k and q6_k are for weights; q8_k is the
// activation format of the quantized dot products.
template <QuantBlock B>
RAYO_API Tensor<B> quantize(Tensor<float> const& x);
// `out` must have x's shape and sit on x's device.
template <QuantBlock B>
RAYO_API void quantize_into(Tensor<float> const& x, Tensor<B> const& out);
// The same, reporting progress in values quantized (rayo/progress.hpp); the work then goes in
// row chunks, a few dozen of them.
template <QuantBlock B>
RAYO_API Tensor<B> quantize(Tensor<float> const& x, ProgressCallback const& progress);
template <QuantBlock B>
RAYO_API void quantize_into(Tensor<float> const& x, Tensor<B> const& out, ProgressCallback const& progress);

// Blocks back to f32 values (same shape).
template <QuantBlock B>
RAYO_API Tensor<float> dequantize(Tensor<B> const& q);
template <QuantBlock B>
RAYO_API void dequantize_into(Tensor<B> const& q, Tensor<float> const& out);

}  // namespace rayo
