// GGUF K-quant block types, byte for byte as GGUF files and ggml store them (see docs/quantization.md).
// A block holds 256 values; a Tensor of blocks has its shape in values, with the last dimension a
// multiple of 256.
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

inline constexpr std::size_t quant_block_values = 256;

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

static_assert(sizeof(q4_k) == 144 && offsetof(q4_k, dmin) == 2 && offsetof(q4_k, scales) == 4 && offsetof(q4_k, qs) == 16);
static_assert(sizeof(q6_k) == 210 && offsetof(q6_k, qh) == 128 && offsetof(q6_k, scales) == 192 && offsetof(q6_k, d) == 208);
static_assert(sizeof(q8_k) == 292 && offsetof(q8_k, qs) == 4 && offsetof(q8_k, bsums) == 260);
static_assert(std::is_trivially_copyable_v<q4_k> && std::is_trivially_copyable_v<q6_k> && std::is_trivially_copyable_v<q8_k>);
static_assert(alignof(q4_k) == 2 && alignof(q6_k) == 2 && alignof(q8_k) == 4);

template <> struct dtype_traits<q4_k> { static constexpr DType value = DType::q4_k; };
template <> struct dtype_traits<q6_k> { static constexpr DType value = DType::q6_k; };
template <> struct dtype_traits<q8_k> { static constexpr DType value = DType::q8_k; };
static_assert(size_of(DType::q4_k) == sizeof(q4_k) && size_of(DType::q6_k) == sizeof(q6_k) &&
              size_of(DType::q8_k) == sizeof(q8_k));

template <class T>
concept QuantBlock = std::same_as<T, q4_k> || std::same_as<T, q6_k> || std::same_as<T, q8_k>;

// ---- quantize / dequantize ---------------------------------------------------------------------
// Each super-block of 256 consecutive values along the last axis becomes one block, exactly as
// ggml's reference quantizers make it (GGUF files and rayo exchange blocks byte for byte). The
// last dimension must be a multiple of 256 (ShapeError otherwise). The result stays on x's device.
// q4_k / q6_k are for weights; q8_k is the activation format of the quantized dot products.
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
