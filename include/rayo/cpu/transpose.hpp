// Transposition of a block of 32-bit elements, out[r, c] = in[c, r], for the layout ops' copies
// that transpose matrices: 8x8 sub-blocks through AVX registers (unpacks, shuffles and 128-bit
// permutes), 4x4 through SSE, the edges element by element. Templates on the xsimd arch, compiled
// once per ISA (src/cpu/kernel_table.hpp).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "rayo/cpu/gemm.hpp"

namespace rayo::cpu {

namespace transpose_detail {

// out's 8 rows from in's 8 rows (each 8 elements at its stride), transposed.
[[gnu::always_inline]] inline void transpose_8x8(std::uint32_t const* in, std::size_t in_stride, std::uint32_t* out,
                                                 std::size_t out_stride) {
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; ++i)
        r[i] = _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<__m256i const*>(in + i * in_stride)));
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; ++i) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i * out_stride),
                            _mm256_castps_si256(_mm256_permute2f128_ps(u[i], u[i + 4], 0x20)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (i + 4) * out_stride),
                            _mm256_castps_si256(_mm256_permute2f128_ps(u[i], u[i + 4], 0x31)));
    }
}

[[gnu::always_inline]] inline void transpose_4x4(std::uint32_t const* in, std::size_t in_stride, std::uint32_t* out,
                                                 std::size_t out_stride) {
    __m128 r0 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<__m128i const*>(in)));
    __m128 r1 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<__m128i const*>(in + in_stride)));
    __m128 r2 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<__m128i const*>(in + 2 * in_stride)));
    __m128 r3 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<__m128i const*>(in + 3 * in_stride)));
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_castps_si128(r0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + out_stride), _mm_castps_si128(r1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * out_stride), _mm_castps_si128(r2));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * out_stride), _mm_castps_si128(r3));
}

}  // namespace transpose_detail

// out[r·out_stride + c] = in[c·in_stride + r] for r < rows, c < cols (elements, any bits).
template <class A>
void transpose32_kernel(std::uint32_t const* in, std::size_t in_stride, std::uint32_t* out, std::size_t out_stride,
                        std::size_t rows, std::size_t cols) {
    constexpr std::size_t step = gemm::is_avx2<A> || gemm::is_avx512<A> ? 8 : 4;
    std::size_t const full_rows = rows / step * step, full_cols = cols / step * step;
    for (std::size_t c = 0; c < full_cols; c += step)
        for (std::size_t r = 0; r < full_rows; r += step) {
            std::uint32_t const* from = in + c * in_stride + r;
            std::uint32_t* to = out + r * out_stride + c;
            if constexpr (step == 8)
                transpose_detail::transpose_8x8(from, in_stride, to, out_stride);
            else
                transpose_detail::transpose_4x4(from, in_stride, to, out_stride);
        }
    for (std::size_t r = 0; r < rows; ++r)  // the edges: columns past full_cols, rows past full_rows
        for (std::size_t c = r < full_rows ? full_cols : 0; c < cols; ++c)
            out[r * out_stride + c] = in[c * in_stride + r];
}

}  // namespace rayo::cpu
