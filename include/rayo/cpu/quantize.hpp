// Block-quant kernels for one instruction set: q8_k quantization (activations, on every quantized
// linear call) and dequantization of every block type, vectorised. Both give exactly the bytes
// and floats of the scalar reference (src/quant/reference_quantizer.cpp): the same f32 products
// in the same order, round-half-to-even, no fused multiply-add. Weight quantization (q8_0, q4_0,
// q4_k, q5_k, q6_k) stays in the reference (for the K-quants a sequential search per sub-block);
// the backend spreads it over threads.
//
// Compiled in TUs with different ISA flags (see src/cpu/kernel_table.hpp): every function is a
// template on the xsimd arch A, raw pointers only, no out-of-line standard-library code, and not
// even rayo::half's conversions (non-template inline functions) are called.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "rayo/cpu/half_conversion.hpp"
#include "rayo/cpu/simd_loop.hpp"

#include "rayo/dtype.hpp"
#include "rayo/quant.hpp"

namespace rayo::cpu::kquant {

template <class A>
inline constexpr bool is_avx512 = std::is_base_of_v<xsimd::avx512f, A>;
template <class A>
inline constexpr bool is_avx2 = std::is_base_of_v<xsimd::avx2, A> && !is_avx512<A>;

// GCC 12's AVX-512 intrinsics self-initialise an undefined vector (`__Y = __Y`), which
// -W(maybe-)uninitialized reports at every inlined use (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

template <class A>
[[gnu::always_inline]] inline float half_to_f32(half h) noexcept {
    return half_bits_to_f32<A>(h.bits);
}

// out[k] = s·q[k] (− m when WithMin) for the 16 signed bytes q: the reference's one product (and
// one difference) per value.
template <class A, bool WithMin>
[[gnu::always_inline]] inline void store_scaled16(float* out, __m128i q, float s, float m) noexcept {
    if constexpr (is_avx512<A>) {
        __m512 y = _mm512_mul_ps(_mm512_set1_ps(s), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
        if constexpr (WithMin) y = _mm512_sub_ps(y, _mm512_set1_ps(m));
        _mm512_storeu_ps(out, y);
    } else if constexpr (is_avx2<A>) {
        __m256 const vs = _mm256_set1_ps(s);
        __m256 y0 = _mm256_mul_ps(vs, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
        __m256 y1 = _mm256_mul_ps(vs, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8))));
        if constexpr (WithMin) {
            y0 = _mm256_sub_ps(y0, _mm256_set1_ps(m));
            y1 = _mm256_sub_ps(y1, _mm256_set1_ps(m));
        }
        _mm256_storeu_ps(out, y0);
        _mm256_storeu_ps(out + 8, y1);
    } else {
        __m128 const vs = _mm_set1_ps(s);
        __m128 y0 = _mm_mul_ps(vs, _mm_cvtepi32_ps(_mm_cvtepi8_epi32(q)));
        __m128 y1 = _mm_mul_ps(vs, _mm_cvtepi32_ps(_mm_cvtepi8_epi32(_mm_srli_si128(q, 4))));
        __m128 y2 = _mm_mul_ps(vs, _mm_cvtepi32_ps(_mm_cvtepi8_epi32(_mm_srli_si128(q, 8))));
        __m128 y3 = _mm_mul_ps(vs, _mm_cvtepi32_ps(_mm_cvtepi8_epi32(_mm_srli_si128(q, 12))));
        if constexpr (WithMin) {
            __m128 const vm = _mm_set1_ps(m);
            y0 = _mm_sub_ps(y0, vm);
            y1 = _mm_sub_ps(y1, vm);
            y2 = _mm_sub_ps(y2, vm);
            y3 = _mm_sub_ps(y3, vm);
        }
        _mm_storeu_ps(out, y0);
        _mm_storeu_ps(out + 4, y1);
        _mm_storeu_ps(out + 8, y2);
        _mm_storeu_ps(out + 12, y3);
    }
}

template <class A>
[[gnu::always_inline]] inline __m128i load16(void const* p) noexcept {
    return _mm_loadu_si128(static_cast<__m128i const*>(p));
}

// ---- dequantization ---------------------------------------------------------------------------

// The 6-bit scale and min of sub-block j (0..7) from q4_k's and q5_k's 12 packed bytes `s`
// (ggml's get_scale_min_k4).
[[gnu::always_inline]] inline void k4_scale_min(std::uint8_t const* s, std::size_t j, unsigned& sc,
                                                unsigned& m) noexcept {
    if (j < 4) {
        sc = s[j] & 63u;
        m = s[j + 4] & 63u;
    } else {
        sc = (s[j + 4] & 0x0Fu) | ((s[j - 4] >> 6) << 4);
        m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// q4_k and q5_k: value = (d·sc[j])·q − dmin·m[j], sub-block j = 32 values; q is the low or high
// nibble of qs, with q5_k's fifth bit (bit j of qh) as 16.
template <class A, class Block>
void dequantize_scale_min_blocks(Block const* blocks, float* y, std::size_t count) noexcept {
    constexpr bool fifth_bit = std::is_same_v<Block, q5_k>;
    __m128i const low4 = _mm_set1_epi8(0x0F);
    __m128i const bit4 = _mm_set1_epi8(0x10);
    for (std::size_t b = 0; b < count; ++b, y += quant_block_values) {
        Block const& blk = blocks[b];
        float const d = half_to_f32<A>(blk.d);
        float const dmin = half_to_f32<A>(blk.dmin);
        std::uint8_t const* s = blk.scales.data();
        __m128i hb[2] = {_mm_setzero_si128(), _mm_setzero_si128()};
        if constexpr (fifth_bit) hb[0] = load16<A>(blk.qh.data()), hb[1] = load16<A>(blk.qh.data() + 16);
        for (std::size_t c = 0; c < 4; ++c) {
            unsigned sc0, m0, sc1, m1;
            k4_scale_min(s, 2 * c, sc0, m0);
            k4_scale_min(s, 2 * c + 1, sc1, m1);
            float const d0 = d * static_cast<float>(sc0), mm0 = dmin * static_cast<float>(m0);
            float const d1 = d * static_cast<float>(sc1), mm1 = dmin * static_cast<float>(m1);
            std::uint8_t const* q = blk.qs.data() + 32 * c;
            float* out = y + 64 * c;
            for (std::size_t h = 0; h < 2; ++h) {
                __m128i const bytes = load16<A>(q + 16 * h);
                __m128i lo = _mm_and_si128(bytes, low4);
                __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low4);
                if constexpr (fifth_bit) {
                    // Bits 2c and 2c + 1 of qh sit at bits 0 and 1 (hb shifts right by 2 per
                    // chunk); the 16-bit shifts are masked so that no bits cross between bytes.
                    lo = _mm_or_si128(lo, _mm_and_si128(_mm_slli_epi16(hb[h], 4), bit4));
                    hi = _mm_or_si128(hi, _mm_and_si128(_mm_slli_epi16(hb[h], 3), bit4));
                    hb[h] = _mm_srli_epi16(hb[h], 2);
                }
                store_scaled16<A, true>(out + 16 * h, lo, d0, mm0);
                store_scaled16<A, true>(out + 32 + 16 * h, hi, d1, mm1);
            }
        }
    }
}

// value = d·q, 32 values a block.
template <class A>
void dequantize_q8_0_blocks(q8_0 const* blocks, float* y, std::size_t count) noexcept {
    for (std::size_t b = 0; b < count; ++b, y += small_block_values) {
        q8_0 const& blk = blocks[b];
        float const d = half_to_f32<A>(blk.d);
        store_scaled16<A, false>(y, load16<A>(blk.qs.data()), d, 0.0f);
        store_scaled16<A, false>(y + 16, load16<A>(blk.qs.data() + 16), d, 0.0f);
    }
}

// value = d·(q − 8), 32 values a block: the low nibbles are values 0..15, the high ones 16..31.
template <class A>
void dequantize_q4_0_blocks(q4_0 const* blocks, float* y, std::size_t count) noexcept {
    __m128i const low4 = _mm_set1_epi8(0x0F);
    __m128i const eight = _mm_set1_epi8(8);
    for (std::size_t b = 0; b < count; ++b, y += small_block_values) {
        q4_0 const& blk = blocks[b];
        float const d = half_to_f32<A>(blk.d);
        __m128i const bytes = load16<A>(blk.qs.data());
        __m128i const lo = _mm_sub_epi8(_mm_and_si128(bytes, low4), eight);
        __m128i const hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), low4), eight);
        store_scaled16<A, false>(y, lo, d, 0.0f);
        store_scaled16<A, false>(y + 16, hi, d, 0.0f);
    }
}

// value = (d·scales[s])·(q − 32), sub-block s = 16 values.
template <class A>
void dequantize_q6_k_blocks(q6_k const* blocks, float* y, std::size_t count) noexcept {
    __m128i const low4 = _mm_set1_epi8(0x0F);
    __m128i const bits45 = _mm_set1_epi8(0x30);
    __m128i const offset = _mm_set1_epi8(32);
    for (std::size_t b = 0; b < count; ++b, y += quant_block_values) {
        q6_k const& blk = blocks[b];
        float const d = half_to_f32<A>(blk.d);
        for (std::size_t h = 0; h < 2; ++h) {
            std::uint8_t const* ql = blk.ql.data() + 64 * h;
            std::uint8_t const* qh = blk.qh.data() + 32 * h;
            std::int8_t const* sc = blk.scales.data() + 8 * h;
            float* out = y + 128 * h;
            for (std::size_t is = 0; is < 2; ++is) {
                std::size_t const l = 16 * is;
                __m128i const a = load16<A>(ql + l);
                __m128i const c = load16<A>(ql + l + 32);
                __m128i const hb = load16<A>(qh + l);
                // Byte shifts through 16-bit lanes, masked so no bits cross between bytes.
                __m128i const q1 = _mm_or_si128(_mm_and_si128(a, low4), _mm_and_si128(_mm_slli_epi16(hb, 4), bits45));
                __m128i const q2 = _mm_or_si128(_mm_and_si128(c, low4), _mm_and_si128(_mm_slli_epi16(hb, 2), bits45));
                __m128i const q3 = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(a, 4), low4), _mm_and_si128(hb, bits45));
                __m128i const q4 = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(c, 4), low4),
                                                _mm_and_si128(_mm_srli_epi16(hb, 2), bits45));
                store_scaled16<A, false>(out + l, _mm_sub_epi8(q1, offset), d * static_cast<float>(sc[is]), 0.0f);
                store_scaled16<A, false>(out + l + 32, _mm_sub_epi8(q2, offset), d * static_cast<float>(sc[is + 2]),
                                         0.0f);
                store_scaled16<A, false>(out + l + 64, _mm_sub_epi8(q3, offset), d * static_cast<float>(sc[is + 4]),
                                         0.0f);
                store_scaled16<A, false>(out + l + 96, _mm_sub_epi8(q4, offset), d * static_cast<float>(sc[is + 6]),
                                         0.0f);
            }
        }
    }
}

// value = d·q.
template <class A>
void dequantize_q8_k_blocks(q8_k const* blocks, float* y, std::size_t count) noexcept {
    for (std::size_t b = 0; b < count; ++b, y += quant_block_values) {
        q8_k const& blk = blocks[b];
        for (std::size_t i = 0; i < quant_block_values; i += 16)
            store_scaled16<A, false>(y + i, load16<A>(blk.qs.data() + i), blk.d, 0.0f);
    }
}

// `count` blocks of `type` (a block type) -> count·block_elements(type) floats.
template <class A>
void dequantize_kernel(DType type, void const* blocks, float* out, std::size_t count) noexcept {
    switch (type) {
        case DType::q4_k: dequantize_scale_min_blocks<A>(static_cast<q4_k const*>(blocks), out, count); break;
        case DType::q5_k: dequantize_scale_min_blocks<A>(static_cast<q5_k const*>(blocks), out, count); break;
        case DType::q6_k: dequantize_q6_k_blocks<A>(static_cast<q6_k const*>(blocks), out, count); break;
        case DType::q8_k: dequantize_q8_k_blocks<A>(static_cast<q8_k const*>(blocks), out, count); break;
        case DType::q8_0: dequantize_q8_0_blocks<A>(static_cast<q8_0 const*>(blocks), out, count); break;
        case DType::q4_0: dequantize_q4_0_blocks<A>(static_cast<q4_0 const*>(blocks), out, count); break;
        default: break;
    }
}

// ---- q8_k quantization ------------------------------------------------------------------------

// Largest |x| over the 256 values of a block; NaNs are skipped like the reference's `ax > amax`
// (maxps returns its second operand when either is NaN, and the running max goes second).
template <class A>
[[gnu::always_inline]] inline float block_amax(float const* x) noexcept {
    using B = xsimd::batch<float, A>;
    constexpr std::size_t w = B::size;
    B m0(0.0f), m1(0.0f), m2(0.0f), m3(0.0f);
    for (std::size_t i = 0; i < 256; i += 4 * w) {
        m0 = xsimd::max(xsimd::abs(B::load_unaligned(x + i)), m0);
        m1 = xsimd::max(xsimd::abs(B::load_unaligned(x + i + w)), m1);
        m2 = xsimd::max(xsimd::abs(B::load_unaligned(x + i + 2 * w)), m2);
        m3 = xsimd::max(xsimd::abs(B::load_unaligned(x + i + 3 * w)), m3);
    }
    return horizontal_max<A>(xsimd::max(xsimd::max(m0, m1), xsimd::max(m2, m3)));
}

// The first value whose magnitude is `amax` (the reference keeps the first strictly larger one).
template <class A>
[[gnu::always_inline]] inline float first_with_magnitude(float const* x, float amax) noexcept {
    if constexpr (is_avx512<A>) {
        __m512 const target = _mm512_set1_ps(amax);
        for (std::size_t i = 0; i < 256; i += 16) {
            __mmask16 const hit = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + i)), target, _CMP_EQ_OQ);
            if (hit) return x[i + static_cast<std::size_t>(__builtin_ctz(hit))];
        }
    } else if constexpr (is_avx2<A>) {
        __m256 const sign = _mm256_set1_ps(-0.0f), target = _mm256_set1_ps(amax);
        for (std::size_t i = 0; i < 256; i += 8) {
            int const hit =
                _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)), target, _CMP_EQ_OQ));
            if (hit) return x[i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(hit)))];
        }
    } else {
        __m128 const sign = _mm_set1_ps(-0.0f), target = _mm_set1_ps(amax);
        for (std::size_t i = 0; i < 256; i += 4) {
            int const hit = _mm_movemask_ps(_mm_cmpeq_ps(_mm_andnot_ps(sign, _mm_loadu_ps(x + i)), target));
            if (hit) return x[i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(hit)))];
        }
    }
    return amax;  // not reached for finite input
}

// Quants of 16 values into q, and their sum. Exactly the reference's integer arithmetic, for
// every input: v = iscale·x; nearest_int(v) reads the low mantissa bits of v + 1.5·2^23 (round
// half to even for |v| <= 2^22, and the same bits as the reference for inf/NaN, which a tiny or
// infinite block maximum gives); min(127, ·); the int8 store keeps the low byte.
template <class A>
[[gnu::always_inline]] inline int quantize16(float const* x, float iscale, std::int8_t* q) noexcept {
    constexpr float magic = 12582912.0f;
    if constexpr (is_avx512<A>) {
        __m512 const t =
            _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(iscale), _mm512_loadu_ps(x)), _mm512_set1_ps(magic));
        __m512i v = _mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(t), _mm512_set1_epi32(0x007fffff)),
                                     _mm512_set1_epi32(0x00400000));
        v = _mm512_min_epi32(v, _mm512_set1_epi32(127));
        v = _mm512_srai_epi32(_mm512_slli_epi32(v, 24), 24);  // the int8 value, sign-extended
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(v));
        return _mm512_reduce_add_epi32(v);
    } else if constexpr (is_avx2<A>) {
        __m256 const s = _mm256_set1_ps(iscale), m = _mm256_set1_ps(magic);
        __m256i const mant = _mm256_set1_epi32(0x007fffff), bias = _mm256_set1_epi32(0x00400000),
                      cap = _mm256_set1_epi32(127);
        auto lane = [&](std::size_t k) {
            __m256 const t = _mm256_add_ps(_mm256_mul_ps(s, _mm256_loadu_ps(x + 8 * k)), m);
            __m256i v = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(t), mant), bias);
            v = _mm256_min_epi32(v, cap);
            return _mm256_srai_epi32(_mm256_slli_epi32(v, 24), 24);
        };
        __m256i const a0 = lane(0), a1 = lane(1);
        // packs works per 128-bit lane: [a0 lo, a1 lo | a0 hi, a1 hi] -> reorder the 64-bit quarters.
        __m256i const w = _mm256_permute4x64_epi64(_mm256_packs_epi32(a0, a1), 0xD8);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q),
                         _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
        __m256i const s8 = _mm256_add_epi32(a0, a1);
        __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
        return _mm_cvtsi128_si32(t);
    } else {
        __m128 const s = _mm_set1_ps(iscale), m = _mm_set1_ps(magic);
        __m128i const mant = _mm_set1_epi32(0x007fffff), bias = _mm_set1_epi32(0x00400000), cap = _mm_set1_epi32(127);
        auto lane = [&](std::size_t k) {
            __m128 const t = _mm_add_ps(_mm_mul_ps(s, _mm_loadu_ps(x + 4 * k)), m);
            __m128i v = _mm_sub_epi32(_mm_and_si128(_mm_castps_si128(t), mant), bias);
            v = _mm_min_epi32(v, cap);
            return _mm_srai_epi32(_mm_slli_epi32(v, 24), 24);
        };
        __m128i const a0 = lane(0), a1 = lane(1), a2 = lane(2), a3 = lane(3);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q),
                         _mm_packs_epi16(_mm_packs_epi32(a0, a1), _mm_packs_epi32(a2, a3)));
        __m128i t = _mm_add_epi32(_mm_add_epi32(a0, a1), _mm_add_epi32(a2, a3));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
        return _mm_cvtsi128_si32(t);
    }
}

// The codes q = min(127, rint(iscale·x)) of one block of 256 floats and their sums per 16.
template <class A>
void quantize_q8_k_codes(float const* x, float iscale, q8_k& blk) noexcept {
    for (std::size_t g = 0; g < 16; ++g)
        blk.bsums[g] = static_cast<std::int16_t>(quantize16<A>(x + 16 * g, iscale, blk.qs.data() + 16 * g));
}

// `count` blocks of 256 floats -> q8_k, byte for byte the reference: max = the first value of
// largest magnitude, iscale = −127/max, q = min(127, rint(iscale·x)), d = 1/iscale, bsums.
template <class A>
void quantize_q8_k_kernel(float const* x, q8_k* out, std::size_t count) noexcept {
    for (std::size_t b = 0; b < count; ++b, x += quant_block_values) {
        q8_k& blk = out[b];
        float const amax = block_amax<A>(x);
        if (amax == 0.0f) {  // all zero
            blk = q8_k{};
            continue;
        }
        float const max = first_with_magnitude<A>(x, amax);
        float const iscale = -127.0f / max;
        quantize_q8_k_codes<A>(x, iscale, blk);
        blk.d = 1 / iscale;
    }
}

// One block of 256 floats as a q8_k block of scale `d`: codes min(127, rint(x / d)), which the
// caller keeps at −128 or above; d = 0 gives a zero block.
template <class A>
void quantize_q8_k_at_scale(float const* x, float d, q8_k* out) noexcept {
    *out = q8_k{};
    if (d == 0.0f) return;
    quantize_q8_k_codes<A>(x, 1 / d, *out);
    out->d = d;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace rayo::cpu::kquant
