// Integer dot products of block-quantized weight rows (q8_0, q4_0, q4_k, q5_k, q6_k) with q8_k
// activations: the decode path of quantized linear. Weights stay in their 4/5/6/8-bit form; each
// 32 values cost one byte multiply-add (maddubs: u8 weight x s8 activation) and one scale
// multiply-add (pmaddwd), or on AVX-512 VNNI (q4_k, q6_k) one dpbusd and a float scale; q8_0's
// signed weights are widened to int16 and multiplied by pmaddwd. The min / offset terms never touch
// the values: they come from the activations' per-16 / per-32 sums (q8_k::bsums). A q8_0 / q4_0
// block of 32 meets the matching 32 activations of a q8_k block.
//
// Activations are two q8_k blocks per 256 values (QuantActivation): twice the multiply work of
// one, no extra weight traffic, and ~1e-5 instead of ~5e-3 relative error from quantizing x.
//
// Compiled in TUs with different ISA flags (see src/cpu/kernel_table.hpp): templates on the xsimd
// arch A, raw pointers only.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include <xsimd/xsimd.hpp>

#include "rayo/cpu/quant_activation.hpp"
#include "rayo/cpu/quantize.hpp"
#include "rayo/dtype.hpp"
#include "rayo/quant.hpp"

namespace rayo::cpu::kquant {

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

// ---- activations ------------------------------------------------------------------------------

// `count` blocks of 256 floats -> `count` QuantActivation; without `residual` only `main` (and
// the sums from it alone). The residual, x − main (at most half of main's step), goes in steps of
// 1/256 of main's: codes within ±128 (+128, from an exact tie, clamps to 127), the precision of a
// q8_k block of its own, and the VNNI dot products fold 256·(main codes) + (residual codes) into
// one integer sum (dot_q4_k_vnni).
template <class A>
void quantize_activations_kernel(float const* x, QuantActivation* out, std::size_t count, bool residual) noexcept {
    using B = xsimd::batch<float, A>;
    alignas(64) float part[quant_block_values];
    for (std::size_t b = 0; b < count; ++b, x += quant_block_values) {
        QuantActivation& act = out[b];
        quantize_q8_k_kernel<A>(x, &act.main, 1);
        // Σ (x − x) is 0, or NaN where the block holds a NaN or ±Inf, which the codes cannot carry:
        // it goes into the scales, so that the products with this block are NaN, not finite.
        B poison(0.0f);
        for (std::size_t i = 0; i < quant_block_values; i += B::size) {
            B const v = B::load_unaligned(x + i);
            poison += v - v;
        }
        act.main.d += xsimd::hadd(poison);
        for (std::size_t g = 0; g < 16; ++g) act.sums16[g] = act.main.d * static_cast<float>(act.main.bsums[g]);
        if (residual) {
            dequantize_q8_k_blocks<A>(&act.main, part, 1);
            for (std::size_t i = 0; i < quant_block_values; i += B::size)
                (B::load_unaligned(x + i) - B::load_aligned(part + i)).store_aligned(part + i);
            quantize_q8_k_at_scale<A>(part, act.main.d * (1.0f / 256), &act.residual);
            for (std::size_t g = 0; g < 16; ++g)
                act.sums16[g] += act.residual.d * static_cast<float>(act.residual.bsums[g]);
        }
        for (std::size_t g = 0; g < 8; ++g) act.sums32[g] = act.sums16[2 * g] + act.sums16[2 * g + 1];
    }
}

// ---- 32 bytes at a time: one ymm, or two xmm on SSE4.2 -----------------------------------------

template <class A>
inline constexpr bool has_ymm = is_avx2<A> || is_avx512<A>;

template <class A>
struct Bytes32;
template <class A>
requires has_ymm<A>
struct Bytes32<A> {
    __m256i v;
};
template <class A>
requires(!has_ymm<A>) struct Bytes32<A> {
    __m128i lo, hi;
};

template <class A>
[[gnu::always_inline]] inline Bytes32<A> load32(void const* p) noexcept {
    auto const* q = static_cast<std::uint8_t const*>(p);
    if constexpr (has_ymm<A>)
        return {_mm256_loadu_si256(reinterpret_cast<__m256i const*>(q))};
    else
        return {load16<A>(q), load16<A>(q + 16)};
}

template <class A>
[[gnu::always_inline]] inline Bytes32<A> zero32() noexcept {
    if constexpr (has_ymm<A>)
        return {_mm256_setzero_si256()};
    else
        return {_mm_setzero_si128(), _mm_setzero_si128()};
}

template <class A>
[[gnu::always_inline]] inline Bytes32<A> splat8(char c) noexcept {
    if constexpr (has_ymm<A>)
        return {_mm256_set1_epi8(c)};
    else
        return {_mm_set1_epi8(c), _mm_set1_epi8(c)};
}

template <class A>
[[gnu::always_inline]] inline Bytes32<A> and32(Bytes32<A> a, Bytes32<A> b) noexcept {
    if constexpr (has_ymm<A>)
        return {_mm256_and_si256(a.v, b.v)};
    else
        return {_mm_and_si128(a.lo, b.lo), _mm_and_si128(a.hi, b.hi)};
}

template <class A>
[[gnu::always_inline]] inline Bytes32<A> or32(Bytes32<A> a, Bytes32<A> b) noexcept {
    if constexpr (has_ymm<A>)
        return {_mm256_or_si256(a.v, b.v)};
    else
        return {_mm_or_si128(a.lo, b.lo), _mm_or_si128(a.hi, b.hi)};
}

// Shifts of 16-bit lanes; callers mask so that no bits cross between bytes.
template <int N, class A>
[[gnu::always_inline]] inline Bytes32<A> shift_right16(Bytes32<A> a) noexcept {
    if constexpr (has_ymm<A>)
        return {_mm256_srli_epi16(a.v, N)};
    else
        return {_mm_srli_epi16(a.lo, N), _mm_srli_epi16(a.hi, N)};
}
template <int N, class A>
[[gnu::always_inline]] inline Bytes32<A> shift_left16(Bytes32<A> a) noexcept {
    if constexpr (has_ymm<A>)
        return {_mm256_slli_epi16(a.v, N)};
    else
        return {_mm_slli_epi16(a.lo, N), _mm_slli_epi16(a.hi, N)};
}

// Shift of 32-bit lanes.
template <int N, class A>
[[gnu::always_inline]] inline Bytes32<A> shift_left32(Bytes32<A> a) noexcept {
    if constexpr (has_ymm<A>)
        return {_mm256_slli_epi32(a.v, N)};
    else
        return {_mm_slli_epi32(a.lo, N), _mm_slli_epi32(a.hi, N)};
}

template <class A>
[[gnu::always_inline]] inline Bytes32<A> add32(Bytes32<A> a, Bytes32<A> b) noexcept {
    if constexpr (has_ymm<A>)
        return {_mm256_add_epi32(a.v, b.v)};
    else
        return {_mm_add_epi32(a.lo, b.lo), _mm_add_epi32(a.hi, b.hi)};
}

// A block's scales (eight int16, or q4_k's bytes), in both 128-bit halves on AVX2.
template <class A>
[[gnu::always_inline]] inline Bytes32<A> splat_scales(__m128i scales) noexcept {
    if constexpr (has_ymm<A>)
        return {_mm256_broadcastsi128_si256(scales)};
    else
        return {scales, scales};
}

// Byte-shuffle controls for pmaddwd's scale operand. widened[j] widens byte j of q4_k's eight
// unsigned scales into every int16 lane (a zero high byte); pairs[i] copies int16 lane 2i of q6_k's
// eight widened scales into every lane of the low 128 bits and lane 2i+1 into the high (its pairs
// of sub-blocks of 16). Loaded at run time (the loops that use them are unrolled by two only), so
// each costs one memory operand.
struct alignas(32) ScaleShuffle {
    std::uint8_t bytes[32];
};
struct ScaleShuffles {
    ScaleShuffle widened[8];
    ScaleShuffle pairs[4];
};
constexpr ScaleShuffles make_scale_shuffles() {
    ScaleShuffles t{};
    for (int j = 0; j < 8; ++j)
        for (int k = 0; k < 32; ++k) t.widened[j].bytes[k] = static_cast<std::uint8_t>(k % 2 == 0 ? j : 0x80);
    for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 32; ++k) t.pairs[i].bytes[k] = static_cast<std::uint8_t>(2 * (2 * i + k / 16) + (k & 1));
    return t;
}
alignas(64) inline constexpr ScaleShuffles scale_shuffles = make_scale_shuffles();

template <class A>
[[gnu::always_inline]] inline Bytes32<A> pick_scales(Bytes32<A> scales, ScaleShuffle const& control) noexcept {
    if constexpr (has_ymm<A>) {
        return {_mm256_shuffle_epi8(scales.v, _mm256_load_si256(reinterpret_cast<__m256i const*>(control.bytes)))};
    } else {
        return {_mm_shuffle_epi8(scales.lo, _mm_load_si128(reinterpret_cast<__m128i const*>(control.bytes))),
                _mm_shuffle_epi8(scales.hi, _mm_load_si128(reinterpret_cast<__m128i const*>(control.bytes + 16)))};
    }
}

// int32 lanes of Σ_4 u·s times the int16 scale of their half (maddubs: u8 x s8 -> adjacent pairs
// in int16, exact for u < 64; pmaddwd: x scale, pairs -> int32).
template <class A>
[[gnu::always_inline]] inline Bytes32<A> dot_scaled(Bytes32<A> u, Bytes32<A> s, Bytes32<A> scale) noexcept {
    if constexpr (has_ymm<A>) {
        return {_mm256_madd_epi16(_mm256_maddubs_epi16(u.v, s.v), scale.v)};
    } else {
        return {_mm_madd_epi16(_mm_maddubs_epi16(u.lo, s.lo), scale.lo),
                _mm_madd_epi16(_mm_maddubs_epi16(u.hi, s.hi), scale.hi)};
    }
}

// f32 accumulators: eight lanes (a ymm) where the ISA has them, else four.
template <class A>
struct FloatAcc;
template <class A>
requires has_ymm<A>
struct FloatAcc<A> {
    __m256 v = _mm256_setzero_ps();
};
template <class A>
requires(!has_ymm<A>) struct FloatAcc<A> {
    __m128 v = _mm_setzero_ps();
};

// acc += (f32)int32 lanes · scale
template <class A>
[[gnu::always_inline]] inline void accumulate(FloatAcc<A>& acc, Bytes32<A> lanes, float scale) noexcept {
    if constexpr (has_ymm<A>) {
        acc.v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lanes.v), _mm256_set1_ps(scale), acc.v);
    } else {
        __m128 const sum = _mm_cvtepi32_ps(_mm_add_epi32(lanes.lo, lanes.hi));
        acc.v = _mm_add_ps(acc.v, _mm_mul_ps(sum, _mm_set1_ps(scale)));
    }
}

// acc += scale · (f32)values[0..8) ⊙ sums[0..8): the weights' min / offset terms. The eight values
// are the low 8 bytes of `bytes`, unsigned (q4_k's mins) or signed (q6_k's scales).
template <class A, bool Signed>
[[gnu::always_inline]] inline void accumulate_sums8(FloatAcc<A>& acc, __m128i bytes, float const* sums,
                                                    float scale) noexcept {
    if constexpr (has_ymm<A>) {
        // One widening instruction for all eight.
        __m256i const v32 = Signed ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes);
        __m256 const scaled = _mm256_mul_ps(_mm256_cvtepi32_ps(v32), _mm256_set1_ps(scale));
        acc.v = _mm256_fmadd_ps(scaled, _mm256_loadu_ps(sums), acc.v);
    } else {
        __m128i const upper = _mm_srli_si128(bytes, 4);
        __m128i const lo = Signed ? _mm_cvtepi8_epi32(bytes) : _mm_cvtepu8_epi32(bytes);
        __m128i const hi = Signed ? _mm_cvtepi8_epi32(upper) : _mm_cvtepu8_epi32(upper);
        __m128 const s = _mm_set1_ps(scale);
        acc.v = _mm_add_ps(acc.v, _mm_mul_ps(_mm_mul_ps(_mm_cvtepi32_ps(lo), s), _mm_loadu_ps(sums)));
        acc.v = _mm_add_ps(acc.v, _mm_mul_ps(_mm_mul_ps(_mm_cvtepi32_ps(hi), s), _mm_loadu_ps(sums + 4)));
    }
}

template <class A>
[[gnu::always_inline]] inline float total(FloatAcc<A> acc) noexcept {
    __m128 v;
    if constexpr (has_ymm<A>)
        v = _mm_add_ps(_mm256_castps256_ps128(acc.v), _mm256_extractf128_ps(acc.v, 1));
    else
        v = acc.v;
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    v = _mm_add_ss(v, _mm_shuffle_ps(v, v, 0x55));
    return _mm_cvtss_f32(v);
}

// ---- weight streaming ---------------------------------------------------------------------------

// A GEMV reads each weight byte once, so each block asks for the lines of the block 16 ahead into
// L1, and of the block 128 ahead into L2 (past a row's end, the next rows' lines): the hardware
// prefetchers alone leave the streamed GEMV waiting on memory (docs/backends/cpu.md). Prefetches
// never fault, so running past the last row is harmless.
template <class Block>
[[gnu::always_inline]] inline void prefetch_ahead(Block const* blk) noexcept {
    constexpr std::size_t l1_distance = 16 * sizeof(Block), l2_distance = 128 * sizeof(Block), line = 64;
    char const* const near = reinterpret_cast<char const*>(blk) + l1_distance;
    char const* const far = reinterpret_cast<char const*>(blk) + l2_distance;
    for (std::size_t at = 0; at < sizeof(Block); at += line) {
        _mm_prefetch(near + at, _MM_HINT_T0);
        _mm_prefetch(far + at, _MM_HINT_T1);
    }
}

// ---- q4_k ---------------------------------------------------------------------------------------

// The block's first 16 bytes (d, dmin, the 12 packed bytes) -> 16 bytes [sc0..sc7, m0..m7], the
// 6-bit scales and mins of the eight sub-blocks, in vector registers: ~30 scalar instructions and
// a trip through the stack would be a visible share of a block's cost (docs/backends/cpu.md).
// With p = the packed bytes:
//   sc0..3 = p0..3 & 63,  sc4..7 = (p8..11 & 15) | (p0..3 >> 6) << 4,
//   m0..3  = p4..7 & 63,  m4..7  = (p8..11 >> 4) | (p4..7 >> 6) << 4.
template <class A>
[[gnu::always_inline]] inline __m128i q4_k_scales_and_mins(__m128i head) noexcept {
    // Each output dword's low bits, and (where it has them) its top two bits.
    __m128i const low_source =
        _mm_shuffle_epi8(head, _mm_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15));
    __m128i const high_source =
        _mm_shuffle_epi8(head, _mm_setr_epi8(-1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, 8, 9, 10, 11));
    __m128i shifted;  // m4..7 from the high nibbles
    if constexpr (has_ymm<A>)
        shifted = _mm_srlv_epi32(low_source, _mm_setr_epi32(0, 0, 0, 4));
    else
        shifted = _mm_blend_epi16(low_source, _mm_srli_epi32(low_source, 4), 0xC0);
    __m128i const low =
        _mm_and_si128(shifted, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 15, 15, 15, 15));
    __m128i const high = _mm_and_si128(_mm_srli_epi16(high_source, 2), _mm_set1_epi8(0x30));
    return _mm_or_si128(low, high);
}

// d and dmin from the same 16 bytes: one conversion for both where the ISA has F16C.
template <class A>
[[gnu::always_inline]] inline void q4_k_d_dmin(q4_k const& blk, __m128i head, float& d, float& dmin) noexcept {
    if constexpr (has_ymm<A>) {
        __m128 const both = _mm_cvtph_ps(head);
        d = _mm_cvtss_f32(both);
        dmin = _mm_cvtss_f32(_mm_movehdup_ps(both));
    } else {
        d = half_to_f32<A>(blk.d);
        dmin = half_to_f32<A>(blk.dmin);
    }
}

// Σ over `blocks` blocks of one q4_k row · x: value = d·sc[j]·q − dmin·m[j] over sub-blocks j of 32.
template <class A, bool Residual>
float dot_q4_k(q4_k const* w, QuantActivation const* x, std::size_t blocks) noexcept {
    Bytes32<A> const low4 = splat8<A>(0x0F);
    // Separate accumulators: one fused multiply-add each per block keeps the loop-carried
    // latency short, so consecutive blocks overlap.
    FloatAcc<A> acc, acc_residual, acc_min;
    for (std::size_t b = 0; b < blocks; ++b) {
        q4_k const& blk = w[b];
        prefetch_ahead(&blk);
        QuantActivation const& act = x[b];
        __m128i const head = load16<A>(&blk);
        __m128i const sm8 = q4_k_scales_and_mins<A>(head);
        Bytes32<A> const scales = splat_scales<A>(sm8);
        Bytes32<A> sum1 = zero32<A>(), sum2 = zero32<A>();
        // Unrolled by two only: fully unrolled, GCC rebuilds every shuffle control from
        // immediates and spills the accumulators.
#pragma GCC unroll 2
        for (std::size_t c = 0; c < 4; ++c) {
            Bytes32<A> const q = load32<A>(blk.qs.data() + 32 * c);
            Bytes32<A> const lo = and32<A>(q, low4), hi = and32<A>(shift_right16<4>(q), low4);
            Bytes32<A> const s_lo = pick_scales<A>(scales, scale_shuffles.widened[2 * c]);
            Bytes32<A> const s_hi = pick_scales<A>(scales, scale_shuffles.widened[2 * c + 1]);
            std::int8_t const* x1 = act.main.qs.data() + 64 * c;
            std::int8_t const* x2 = act.residual.qs.data() + 64 * c;
            sum1 = add32<A>(
                sum1, add32<A>(dot_scaled<A>(lo, load32<A>(x1), s_lo), dot_scaled<A>(hi, load32<A>(x1 + 32), s_hi)));
            if constexpr (Residual)
                sum2 = add32<A>(sum2, add32<A>(dot_scaled<A>(lo, load32<A>(x2), s_lo),
                                               dot_scaled<A>(hi, load32<A>(x2 + 32), s_hi)));
        }
        float d, dmin;
        q4_k_d_dmin<A>(blk, head, d, dmin);
        accumulate<A>(acc, sum1, d * act.main.d);
        if constexpr (Residual) accumulate<A>(acc_residual, sum2, d * act.residual.d);
        accumulate_sums8<A, false>(acc_min, _mm_srli_si128(sm8, 8), act.sums32.data(), -dmin);
    }
    return total<A>(acc) + total<A>(acc_residual) + total<A>(acc_min);
}

// ---- q5_k ---------------------------------------------------------------------------------------

// Σ over `blocks` blocks of one q5_k row · x: q4_k's sums with a fifth bit per code from qh.
template <class A, bool Residual>
float dot_q5_k(q5_k const* w, QuantActivation const* x, std::size_t blocks) noexcept {
    Bytes32<A> const low4 = splat8<A>(0x0F), bit4 = splat8<A>(0x10);
    FloatAcc<A> acc, acc_residual, acc_min;  // see dot_q4_k
    for (std::size_t b = 0; b < blocks; ++b) {
        q5_k const& blk = w[b];
        prefetch_ahead(&blk);
        QuantActivation const& act = x[b];
        __m128i const head = load16<A>(&blk);  // d, dmin and the packed scales sit as in q4_k
        __m128i const sm8 = q4_k_scales_and_mins<A>(head);
        Bytes32<A> const scales = splat_scales<A>(sm8);
        // Bits 2c and 2c + 1 of qh: at bits 0 and 1 of each byte after c shifts by 2 (16-bit
        // shifts, masked so that no bits cross between bytes).
        Bytes32<A> high = load32<A>(blk.qh.data());
        Bytes32<A> sum1 = zero32<A>(), sum2 = zero32<A>();
#pragma GCC unroll 2
        for (std::size_t c = 0; c < 4; ++c) {
            Bytes32<A> const q = load32<A>(blk.qs.data() + 32 * c);
            Bytes32<A> const lo = or32<A>(and32<A>(q, low4), and32<A>(shift_left16<4>(high), bit4));
            Bytes32<A> const hi = or32<A>(and32<A>(shift_right16<4>(q), low4), and32<A>(shift_left16<3>(high), bit4));
            high = shift_right16<2>(high);
            Bytes32<A> const s_lo = pick_scales<A>(scales, scale_shuffles.widened[2 * c]);
            Bytes32<A> const s_hi = pick_scales<A>(scales, scale_shuffles.widened[2 * c + 1]);
            std::int8_t const* x1 = act.main.qs.data() + 64 * c;
            std::int8_t const* x2 = act.residual.qs.data() + 64 * c;
            sum1 = add32<A>(
                sum1, add32<A>(dot_scaled<A>(lo, load32<A>(x1), s_lo), dot_scaled<A>(hi, load32<A>(x1 + 32), s_hi)));
            if constexpr (Residual)
                sum2 = add32<A>(sum2, add32<A>(dot_scaled<A>(lo, load32<A>(x2), s_lo),
                                               dot_scaled<A>(hi, load32<A>(x2 + 32), s_hi)));
        }
        float const d = half_to_f32<A>(blk.d), dmin = half_to_f32<A>(blk.dmin);
        accumulate<A>(acc, sum1, d * act.main.d);
        if constexpr (Residual) accumulate<A>(acc_residual, sum2, d * act.residual.d);
        accumulate_sums8<A, false>(acc_min, _mm_srli_si128(sm8, 8), act.sums32.data(), -dmin);
    }
    return total<A>(acc) + total<A>(acc_residual) + total<A>(acc_min);
}

// ---- q8_0 / q4_0: blocks of 32 ------------------------------------------------------------------

// Block b of a row meets values [32·(b mod 8), +32) of activation block b / 8.
inline constexpr std::size_t small_blocks_per_activation = quant_block_values / small_block_values;

// A block's f16 scale as f32: one F16C conversion where the ISA has it (a block of 32 values
// cannot pay for the software conversion).
template <class A>
[[gnu::always_inline]] inline float block_scale(half d) noexcept {
    if constexpr (has_ymm<A>)
        return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(d.bits)));
    else
        return half_to_f32<A>(d);
}

// `value` in int32 lane 0, zeros elsewhere.
template <class A>
[[gnu::always_inline]] inline Bytes32<A> lane0(int value) noexcept {
    if constexpr (has_ymm<A>)
        return {_mm256_zextsi128_si256(_mm_cvtsi32_si128(value))};
    else
        return {_mm_cvtsi32_si128(value), _mm_setzero_si128()};
}

// 32 signed bytes widened to int16.
template <class A>
struct Widened32;
template <class A>
requires has_ymm<A>
struct Widened32<A> {
    __m256i v[2];
};
template <class A>
requires(!has_ymm<A>) struct Widened32<A> {
    __m128i v[4];
};

template <class A>
[[gnu::always_inline]] inline Widened32<A> widen32(void const* p) noexcept {
    auto const* q = static_cast<std::uint8_t const*>(p);
    if constexpr (has_ymm<A>) {
        return {{_mm256_cvtepi8_epi16(load16<A>(q)), _mm256_cvtepi8_epi16(load16<A>(q + 16))}};
    } else {
        return {{_mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<__m128i const*>(q))),
                 _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<__m128i const*>(q + 8))),
                 _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<__m128i const*>(q + 16))),
                 _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<__m128i const*>(q + 24)))}};
    }
}

// int32 lanes of Σ w·x over 32 int8 pairs (pmaddwd on the widened values: exact for every int8,
// −128 included, which maddubs' sign trick would not be).
template <class A>
[[gnu::always_inline]] inline Bytes32<A> dot_widened(Widened32<A> const& w, Widened32<A> const& x) noexcept {
    if constexpr (has_ymm<A>) {
        return {_mm256_add_epi32(_mm256_madd_epi16(w.v[0], x.v[0]), _mm256_madd_epi16(w.v[1], x.v[1]))};
    } else {
        return {_mm_add_epi32(_mm_madd_epi16(w.v[0], x.v[0]), _mm_madd_epi16(w.v[1], x.v[1])),
                _mm_add_epi32(_mm_madd_epi16(w.v[2], x.v[2]), _mm_madd_epi16(w.v[3], x.v[3]))};
    }
}

// The eight blocks of 32 that meet one activation block, as one unit to prefetch.
template <class Block>
struct BlockGroup {
    Block blocks[small_blocks_per_activation];
};

// Group g of a row of `blocks` blocks of 32 (prefetched as it is taken): its first block, the
// activation block it meets and how many blocks it holds (eight, fewer at the row's end).
template <class Block>
struct GroupOfRow {
    Block const* first;
    QuantActivation const& act;
    std::size_t count;
};
template <class Block>
[[gnu::always_inline]] inline GroupOfRow<Block> group_of_row(Block const* w, QuantActivation const* x,
                                                             std::size_t blocks, std::size_t g) noexcept {
    Block const* first = w + g * small_blocks_per_activation;
    prefetch_ahead(reinterpret_cast<BlockGroup<Block> const*>(first));
    std::size_t const left = blocks - g * small_blocks_per_activation;
    return {first, x[g], left < small_blocks_per_activation ? left : small_blocks_per_activation};
}

// Σ over `blocks` blocks of 32 of one q8_0 row · x: value = d·qs[i]. Blocks go in groups of eight,
// one activation block each, prefetched a group at a time.
template <class A, bool Residual>
float dot_q8_0(q8_0 const* w, QuantActivation const* x, std::size_t blocks) noexcept {
    FloatAcc<A> acc, acc_residual;
    for (std::size_t g = 0; g * small_blocks_per_activation < blocks; ++g) {
        auto const [group, act, count] = group_of_row(w, x, blocks, g);
        for (std::size_t sub = 0; sub < count; ++sub) {
            q8_0 const& blk = group[sub];
            std::size_t const at = small_block_values * sub;
            Widened32<A> const q = widen32<A>(blk.qs.data());
            float const d = block_scale<A>(blk.d);
            accumulate<A>(acc, dot_widened<A>(q, widen32<A>(act.main.qs.data() + at)), d * act.main.d);
            if constexpr (Residual)
                accumulate<A>(acc_residual, dot_widened<A>(q, widen32<A>(act.residual.qs.data() + at)),
                              d * act.residual.d);
        }
    }
    return total<A>(acc) + total<A>(acc_residual);
}

// The 32 codes of a q4_0 block in value order (low nibbles, then high nibbles).
template <class A>
[[gnu::always_inline]] inline Bytes32<A> unpack_q4_0(q4_0 const& blk) noexcept {
    __m128i const low4 = _mm_set1_epi8(0x0F);
    __m128i const bytes = load16<A>(blk.qs.data());
    __m128i const lo = _mm_and_si128(bytes, low4), hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low4);
    if constexpr (has_ymm<A>)
        return {_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1)};
    else
        return {lo, hi};
}

// Σ over `blocks` blocks of 32 of one q4_0 row · x: value = d·(q − 8). The −8 stays in the
// integers: −8 times the activation codes' sum over the block's 32 values (two of q8_k's bsums)
// added to one lane of Σ q·x. With the residual, whose scale is main's / 256, the lanes hold
// 256·main + residual (as dot_q4_k_vnni's): at most 257·8·32·128 < 2^24, exact in f32, so both
// blocks take one conversion and one scaling.
template <class A, bool Residual>
float dot_q4_0(q4_0 const* w, QuantActivation const* x, std::size_t blocks) noexcept {
    Bytes32<A> const ones = splat_scales<A>(_mm_set1_epi16(1));
    FloatAcc<A> acc;
    for (std::size_t g = 0; g * small_blocks_per_activation < blocks; ++g) {  // as dot_q8_0
        auto const [group, act, count] = group_of_row(w, x, blocks, g);
        float const x_scale = Residual ? act.residual.d : act.main.d;
        for (std::size_t sub = 0; sub < count; ++sub) {
            q4_0 const& blk = group[sub];
            std::size_t const at = small_block_values * sub;
            Bytes32<A> const q = unpack_q4_0<A>(blk);
            float const d = block_scale<A>(blk.d);
            int offset = -8 * (act.main.bsums[2 * sub] + act.main.bsums[2 * sub + 1]);
            Bytes32<A> dot = dot_scaled<A>(q, load32<A>(act.main.qs.data() + at), ones);
            if constexpr (Residual) {
                offset = 256 * offset - 8 * (act.residual.bsums[2 * sub] + act.residual.bsums[2 * sub + 1]);
                dot = add32<A>(shift_left32<8, A>(dot), dot_scaled<A>(q, load32<A>(act.residual.qs.data() + at), ones));
            }
            accumulate<A>(acc, add32<A>(dot, lane0<A>(offset)), d * x_scale);
        }
    }
    return total<A>(acc);
}

// ---- q6_k ---------------------------------------------------------------------------------------

// The 6-bit quants (stored as q + 32, 0..63) of values [128h + 32i, +32) for i = 0..3.
template <class A>
struct Q6Quarter {
    Bytes32<A> q[4];
};
template <class A>
[[gnu::always_inline]] inline Q6Quarter<A> unpack_q6_k_half(q6_k const& blk, std::size_t h) noexcept {
    Bytes32<A> const low4 = splat8<A>(0x0F), bits45 = splat8<A>(0x30);
    Bytes32<A> const a = load32<A>(blk.ql.data() + 64 * h), c = load32<A>(blk.ql.data() + 64 * h + 32);
    Bytes32<A> const hb = load32<A>(blk.qh.data() + 32 * h);
    return {{or32<A>(and32<A>(a, low4), and32<A>(shift_left16<4>(hb), bits45)),
             or32<A>(and32<A>(c, low4), and32<A>(shift_left16<2>(hb), bits45)),
             or32<A>(and32<A>(shift_right16<4>(a), low4), and32<A>(hb, bits45)),
             or32<A>(and32<A>(shift_right16<4>(c), low4), and32<A>(shift_right16<2>(hb), bits45))}};
}

// The offset term −32·d·Σ_s sc[s]·sums16[s] of one block.
template <class A>
[[gnu::always_inline]] inline void q6_k_offset(FloatAcc<A>& acc, __m128i scales8, QuantActivation const& act,
                                               float d) noexcept {
    accumulate_sums8<A, true>(acc, scales8, act.sums16.data(), -32.0f * d);
    accumulate_sums8<A, true>(acc, _mm_srli_si128(scales8, 8), act.sums16.data() + 8, -32.0f * d);
}

// Σ over `blocks` blocks of one q6_k row · x: value = d·sc[s]·(q − 32) over sub-blocks s of 16.
template <class A, bool Residual>
float dot_q6_k(q6_k const* w, QuantActivation const* x, std::size_t blocks) noexcept {
    FloatAcc<A> acc, acc_residual, acc_offset;  // see dot_q4_k
    for (std::size_t b = 0; b < blocks; ++b) {
        q6_k const& blk = w[b];
        prefetch_ahead(&blk);
        QuantActivation const& act = x[b];
        __m128i const scales8 = load16<A>(blk.scales.data());
        Bytes32<A> sum1 = zero32<A>(), sum2 = zero32<A>();
#pragma GCC unroll 2
        for (std::size_t h = 0; h < 2; ++h) {
            Q6Quarter<A> const q = unpack_q6_k_half<A>(blk, h);
            Bytes32<A> const half_scales =
                splat_scales<A>(_mm_cvtepi8_epi16(h == 0 ? scales8 : _mm_srli_si128(scales8, 8)));
#pragma GCC unroll 2
            for (std::size_t i = 0; i < 4; ++i) {
                Bytes32<A> const s = pick_scales<A>(half_scales, scale_shuffles.pairs[i]);
                std::size_t const at = 128 * h + 32 * i;
                sum1 = add32<A>(sum1, dot_scaled<A>(q.q[i], load32<A>(act.main.qs.data() + at), s));
                if constexpr (Residual)
                    sum2 = add32<A>(sum2, dot_scaled<A>(q.q[i], load32<A>(act.residual.qs.data() + at), s));
            }
        }
        float const d = half_to_f32<A>(blk.d);
        accumulate<A>(acc, sum1, d * act.main.d);
        if constexpr (Residual) accumulate<A>(acc_residual, sum2, d * act.residual.d);
        q6_k_offset<A>(acc_offset, scales8, act, d);
    }
    return total<A>(acc) + total<A>(acc_residual) + total<A>(acc_offset);
}

// ---- AVX-512 VNNI: 64 values per dpbusd, scales applied in f32 --------------------------------

// The VNNI functions carry their extension as a function attribute: the AVX-512 TU itself is
// built for CPUs without it, and these run only where cpuid reports it. (Plain loops here: a
// lambda would not inherit the attribute.)

// acc += (f32)dots · scales[index] over 16 lanes.
template <class A>
[[gnu::always_inline]] inline __m512 scaled_dots(__m512 acc, __m512i dots, __m512 scales, __m512i index) noexcept {
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots), _mm512_permutexvar_ps(index, scales), acc);
}

template <class A, bool Residual>
[[gnu::target("avx512vnni")]] float dot_q4_k_vnni(q4_k const* w, QuantActivation const* x,
                                                  std::size_t blocks) noexcept {
    __m256i const low4 = _mm256_set1_epi8(0x0F);
    __m512 acc = _mm512_setzero_ps();
    FloatAcc<A> acc_min;
    for (std::size_t b = 0; b < blocks; ++b) {
        q4_k const& blk = w[b];
        prefetch_ahead(&blk);
        QuantActivation const& act = x[b];
        __m128i const head = load16<A>(&blk);
        __m128i const sm8 = q4_k_scales_and_mins<A>(head);
        float d, dmin;
        q4_k_d_dmin<A>(blk, head, d, dmin);
        __m512 const sc = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sm8));
        // With the residual, its scale (main's / 256) for 256·main + residual.
        __m512 const sc1 = _mm512_mul_ps(sc, _mm512_set1_ps(d * (Residual ? act.residual.d : act.main.d)));
        for (std::size_t c = 0; c < 4; ++c) {
            __m256i const q = _mm256_loadu_si256(reinterpret_cast<__m256i const*>(blk.qs.data() + 32 * c));
            // Low nibbles are sub-block 2c (values 64c..+31), high nibbles 2c+1: in value order.
            __m512i const wq = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, low4)),
                                                  _mm256_and_si256(_mm256_srli_epi16(q, 4), low4), 1);
            __m512i const index = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(static_cast<int>(2 * c))),
                                                     _mm256_set1_epi32(static_cast<int>(2 * c + 1)), 1);
            __m512i d1 =
                _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq, _mm512_loadu_si512(act.main.qs.data() + 64 * c));
            if constexpr (Residual)  // |256·d1 + d2| <= 257 · 4 · 15 · 128: exact in int32 and in f32
                d1 = _mm512_dpbusd_epi32(_mm512_slli_epi32(d1, 8), wq,
                                         _mm512_loadu_si512(act.residual.qs.data() + 64 * c));
            acc = scaled_dots<A>(acc, d1, sc1, index);
        }
        accumulate_sums8<A, false>(acc_min, _mm_srli_si128(sm8, 8), act.sums32.data(), -dmin);
    }
    return _mm512_reduce_add_ps(acc) + total<A>(acc_min);
}

template <class A, bool Residual>
[[gnu::target("avx512vnni")]] float dot_q6_k_vnni(q6_k const* w, QuantActivation const* x,
                                                  std::size_t blocks) noexcept {
    __m512 acc = _mm512_setzero_ps();
    FloatAcc<A> acc_offset;
    // Lane l of a dpbusd over 64 values holds values 4l..4l+3: sub-block (of 16) l / 4.
    __m512i const quarter =
        _mm512_srli_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 2);
    for (std::size_t b = 0; b < blocks; ++b) {
        q6_k const& blk = w[b];
        prefetch_ahead(&blk);
        QuantActivation const& act = x[b];
        float const d = half_to_f32<A>(blk.d);
        __m128i const scales8 = load16<A>(blk.scales.data());
        __m512 const sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(scales8));
        __m512 const sc1 =
            _mm512_mul_ps(sc, _mm512_set1_ps(d * (Residual ? act.residual.d : act.main.d)));  // see dot_q4_k_vnni
        for (std::size_t h = 0; h < 2; ++h) {
            Q6Quarter<A> const q = unpack_q6_k_half<A>(blk, h);
            for (std::size_t pair = 0; pair < 2; ++pair) {
                __m512i const wq = _mm512_inserti64x4(_mm512_castsi256_si512(q.q[2 * pair].v), q.q[2 * pair + 1].v, 1);
                std::size_t const at = 128 * h + 64 * pair;
                __m512i const index = _mm512_add_epi32(quarter, _mm512_set1_epi32(static_cast<int>(at / 16)));
                __m512i d1 =
                    _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq, _mm512_loadu_si512(act.main.qs.data() + at));
                if constexpr (Residual)  // |256·d1 + d2| <= 257 · 4 · 63 · 128 < 2^24
                    d1 = _mm512_dpbusd_epi32(_mm512_slli_epi32(d1, 8), wq,
                                             _mm512_loadu_si512(act.residual.qs.data() + at));
                acc = scaled_dots<A>(acc, d1, sc1, index);
            }
        }
        q6_k_offset<A>(acc_offset, scales8, act, d);
    }
    return _mm512_reduce_add_ps(acc) + total<A>(acc_offset);
}

// q4_0: two blocks per dpbusd (lanes 0-7 the first block, 8-15 the second), the eight blocks of
// one activation block scaled together: their f16 scales gathered into one vector, which gives
// each pair's lane scales by a permute and the −8 offsets (−8·d·Σx over a block, from x's sums32)
// in one multiply-add.
template <class A>
[[gnu::target("avx512vnni")]] inline __m256 q4_0_group_scales(q4_0 const* group, std::size_t count) noexcept {
    if (count == small_blocks_per_activation) {
        __m256i const at = _mm256_setr_epi32(0, 18, 36, 54, 72, 90, 108, 126);  // sizeof(q4_0) apart
        __m256i const words = _mm256_i32gather_epi32(reinterpret_cast<int const*>(group), at, 1);
        return _mm256_cvtph_ps(_mm256_cvtepi32_epi16(words));
    }
    alignas(16) std::uint16_t bits[small_blocks_per_activation] = {};
    for (std::size_t i = 0; i < count; ++i) bits[i] = group[i].d.bits;
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<__m128i const*>(bits)));
}

template <class A, bool Residual>
[[gnu::target("avx512vnni")]] float dot_q4_0_vnni(q4_0 const* w, QuantActivation const* x,
                                                  std::size_t blocks) noexcept {
    __m256i const low4 = _mm256_set1_epi8(0x0F);
    __m512i const pair_lanes = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi32(1), 1);
    __m512 acc = _mm512_setzero_ps();
    FloatAcc<A> acc_offset;
    for (std::size_t g = 0; g * small_blocks_per_activation < blocks; ++g) {
        auto const [group, act, count] = group_of_row(w, x, blocks, g);
        __m256 const d = q4_0_group_scales<A>(group, count);
        acc_offset.v = _mm256_fmadd_ps(d, _mm256_loadu_ps(act.sums32.data()), acc_offset.v);
        // With the residual, its scale (main's / 256) for 256·main + residual, as in dot_q4_k_vnni.
        __m512 const lane_scales =
            _mm512_castps256_ps512(_mm256_mul_ps(d, _mm256_set1_ps(Residual ? act.residual.d : act.main.d)));
        for (std::size_t pair = 0; 2 * pair < count; ++pair) {
            q4_0 const& first = group[2 * pair];
            __m128i const second =
                2 * pair + 1 < count ? load16<A>(group[2 * pair + 1].qs.data()) : _mm_setzero_si128();
            __m256i const q = _mm256_inserti128_si256(_mm256_castsi128_si256(load16<A>(first.qs.data())), second, 1);
            // [first's low, second's low, first's high, second's high] nibbles -> value order.
            __m512i const halves = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, low4)),
                                                      _mm256_and_si256(_mm256_srli_epi16(q, 4), low4), 1);
            __m512i const wq = _mm512_shuffle_i64x2(halves, halves, _MM_SHUFFLE(3, 1, 2, 0));
            std::size_t const at = 64 * pair;
            __m512i dots = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq, _mm512_loadu_si512(act.main.qs.data() + at));
            if constexpr (Residual)  // |256·dots + residual's| <= 257 · 4 · 15 · 128: exact in int32 and in f32
                dots = _mm512_dpbusd_epi32(_mm512_slli_epi32(dots, 8), wq,
                                           _mm512_loadu_si512(act.residual.qs.data() + at));
            __m512i const index = _mm512_add_epi32(pair_lanes, _mm512_set1_epi32(static_cast<int>(2 * pair)));
            acc = scaled_dots<A>(acc, dots, lane_scales, index);
        }
    }
    return _mm512_reduce_add_ps(acc) - 8.0f * total<A>(acc_offset);
}

// ---- rows -----------------------------------------------------------------------------------------

template <class A, bool Vnni, bool Residual>
void quant_gemv_rows(DType type, void const* w, std::size_t row_bytes, std::size_t rows, QuantActivation const* x,
                     std::size_t blocks, float* y) noexcept {
    auto const* base = static_cast<unsigned char const*>(w);
    for (std::size_t r = 0; r < rows; ++r) {
        void const* row = base + r * row_bytes;
        switch (type) {
            case DType::q4_k: {
                auto const* blk = static_cast<q4_k const*>(row);
                if constexpr (Vnni)
                    y[r] = dot_q4_k_vnni<A, Residual>(blk, x, blocks);
                else
                    y[r] = dot_q4_k<A, Residual>(blk, x, blocks);
                break;
            }
            case DType::q6_k: {
                auto const* blk = static_cast<q6_k const*>(row);
                if constexpr (Vnni)
                    y[r] = dot_q6_k_vnni<A, Residual>(blk, x, blocks);
                else
                    y[r] = dot_q6_k<A, Residual>(blk, x, blocks);
                break;
            }
            case DType::q5_k: y[r] = dot_q5_k<A, Residual>(static_cast<q5_k const*>(row), x, blocks); break;
            case DType::q8_0: y[r] = dot_q8_0<A, Residual>(static_cast<q8_0 const*>(row), x, blocks); break;
            case DType::q4_0: {
                auto const* blk = static_cast<q4_0 const*>(row);
                if constexpr (Vnni)
                    y[r] = dot_q4_0_vnni<A, Residual>(blk, x, blocks);
                else
                    y[r] = dot_q4_0<A, Residual>(blk, x, blocks);
                break;
            }
            default: y[r] = 0.0f; break;
        }
    }
}

// y[r] = row r of `rows` weight rows (`row_bytes` apart, each `blocks` blocks of `type`) · x,
// with x's residual blocks or without. For q8_0 / q4_0, `blocks` counts blocks of 32 and x holds
// one activation block per 8 of them.
template <class A, bool Vnni = false>
void quant_gemv_kernel(DType type, void const* w, std::size_t row_bytes, std::size_t rows, QuantActivation const* x,
                       std::size_t blocks, float* y, bool residual) noexcept {
    if (residual)
        quant_gemv_rows<A, Vnni, true>(type, w, row_bytes, rows, x, blocks, y);
    else
        quant_gemv_rows<A, Vnni, false>(type, w, row_bytes, rows, x, blocks, y);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace rayo::cpu::kquant
