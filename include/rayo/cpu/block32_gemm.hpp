// The integer GEMM of many rows of x with q8_0 / q4_0 weights, on AVX-512 VNNI: x quantized to
// 16-bit codes with an f32 scale per 32 values (relative error ~1.5e-5 a value, finer than the
// GEMV's main + residual activations), weights widened to int16 in packed panels, and each block
// of 32 multiplied by 16 vpdpwssd (two values of x times 16 weight rows each) before one
// conversion and scaling per block. Against decoding the weights to f32 for the f32 GEMM this
// does twice the multiply-adds an instruction (docs/backends/cpu.md has the figures).
//
// Only the AVX-512 TU includes this header; the VNNI instructions are a function attribute, as
// in rayo/cpu/quant_dot.hpp, and the kernel table holds these kernels only where the CPU has them.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "rayo/cpu/block32_gemm_args.hpp"
#include "rayo/quant.hpp"

namespace rayo::cpu::block32 {

// ---- x: 16-bit codes and a scale per 32 values ---------------------------------------------------

// codes = round(x / scale), scale = max|x| / 32767 per block of 32 (`values` a multiple of 32). A
// block holding NaN or ±Inf gets a NaN scale (its row's products are NaN); an all-zero block
// scale 0. Blocks too small for 32767 / max|x| to be finite are scaled up by 2^100 first.
[[gnu::target("avx512vnni")]] inline void quantize_x(float const* x, std::size_t values, std::int16_t* codes,
                                                     float* scales) noexcept {
    __m512 const sign = _mm512_set1_ps(-0.0f);
    for (std::size_t b = 0; b < values / block_values; ++b, x += block_values, codes += block_values) {
        __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
        bool const non_finite =
            (_mm512_fpclass_ps_mask(v0, 0x99) | _mm512_fpclass_ps_mask(v1, 0x99)) != 0;  // NaN, ±Inf
        float most = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1)));
        float unscale = 1.0f;
        if (!non_finite && most > 0.0f && !(32767.0f / most < std::numeric_limits<float>::infinity())) {
            __m512 const up = _mm512_set1_ps(0x1p100f);
            v0 = _mm512_mul_ps(v0, up);
            v1 = _mm512_mul_ps(v1, up);
            most *= 0x1p100f;
            unscale = 0x1p-100f;
        }
        if (non_finite || most == 0.0f) {
            std::memset(codes, 0, block_values * sizeof(std::int16_t));
            scales[b] = non_finite ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
            continue;
        }
        __m512 const inverse = _mm512_set1_ps(32767.0f / most);
        __m512i const c0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, inverse));
        __m512i const c1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, inverse));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes), _mm512_cvtsepi32_epi16(c0));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + 16), _mm512_cvtsepi32_epi16(c1));
        scales[b] = most / 32767.0f * unscale;
    }
}

// ---- weights: panels of 32 rows, int16 pairs of depth ------------------------------------------

// A block's 32 values as int16 (q8_0: the codes; q4_0: the nibbles − 8), in value order.
[[gnu::target("avx512vnni")]] inline __m512i widen_block(DType type, unsigned char const* block) noexcept {
    if (type == DType::q8_0)
        return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<__m256i const*>(block + 2)));
    __m128i const bytes = _mm_loadu_si128(reinterpret_cast<__m128i const*>(block + 2));
    __m128i const low4 = _mm_set1_epi8(0x0F);
    __m128i const lo = _mm_and_si128(bytes, low4), hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low4);
    __m256i const nibbles = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    return _mm512_sub_epi16(_mm512_cvtepu8_epi16(nibbles), _mm512_set1_epi16(8));
}

[[gnu::target("avx512vnni")]] inline float block_scale(unsigned char const* block) noexcept {
    std::uint16_t bits;
    std::memcpy(&bits, block, sizeof bits);
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits)));
}

// Weight rows [j0, j0 + cols) x blocks [b0, b0 + count) into panels: panel q, block b at
// packed + (q·depth_blocks + b)·panel_block_bytes holds pair p of column l at int32 p·32 + l, then
// the 32 columns' scales. Columns past `cols` are zeros. Each row's block is one scatter.
[[gnu::target("avx512vnni")]] inline void pack_weights(Block32GemmArgs const& g, std::size_t j0, std::size_t cols,
                                                       std::size_t b0, std::size_t count,
                                                       unsigned char* packed) noexcept {
    std::size_t const block_bytes = size_of(g.w_type);
    __m512i const pair_rows = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(panel_cols));
    std::size_t const panels = (cols + panel_cols - 1) / panel_cols;
    for (std::size_t q = 0; q < panels; ++q) {
        for (std::size_t b = 0; b < count; ++b) {
            unsigned char* out = packed + (q * depth_blocks + b) * panel_block_bytes;
            auto* scales = reinterpret_cast<float*>(out + panel_block_codes * 2);
            for (std::size_t l = 0; l < panel_cols; ++l) {
                std::size_t const col = q * panel_cols + l;
                __m512i values = _mm512_setzero_si512();
                scales[l] = 0.0f;
                if (col < cols) {
                    unsigned char const* block = g.w + (j0 + col) * g.w_row_bytes + (b0 + b) * block_bytes;
                    values = widen_block(g.w_type, block);
                    scales[l] = block_scale(block);
                }
                _mm512_i32scatter_epi32(out + l * 4, pair_rows, values, 4);
            }
        }
    }
}

// ---- the micro-kernel: micro_rows x panel_cols of C over `count` blocks ------------------------

// x: the first row's codes at the first block (rows x_row codes apart), x_scales likewise (rows
// s_row apart); rows past rows_used repeat the last one and are not stored. C gets the tile
// (added to it with `accumulate`); columns past cols_used are left alone.
[[gnu::target("avx512vnni")]] inline void micro(std::int16_t const* x, std::size_t x_row, float const* x_scales,
                                                std::size_t s_row, std::size_t count, unsigned char const* panel,
                                                float* c, std::size_t ldc, std::size_t rows_used, std::size_t cols_used,
                                                bool accumulate) noexcept {
    constexpr std::size_t rows = micro_rows;
    std::int16_t const* xr[rows];
    float const* sr[rows];
    for (std::size_t r = 0; r < rows; ++r) {
        std::size_t const from = r < rows_used ? r : rows_used - 1;
        xr[r] = x + from * x_row;
        sr[r] = x_scales + from * s_row;
    }
    __m512 acc[rows][2];
#pragma GCC unroll 6
    for (std::size_t r = 0; r < rows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (std::size_t b = 0; b < count; ++b, panel += panel_block_bytes) {
        auto const* w = reinterpret_cast<std::int32_t const*>(panel);
        __m512i sum[rows][2];
#pragma GCC unroll 6
        for (std::size_t r = 0; r < rows; ++r) sum[r][0] = sum[r][1] = _mm512_setzero_si512();
#pragma GCC unroll 16
        for (std::size_t p = 0; p < block_values / 2; ++p) {
            __m512i const w0 = _mm512_load_si512(w + p * panel_cols), w1 = _mm512_load_si512(w + p * panel_cols + 16);
#pragma GCC unroll 6
            for (std::size_t r = 0; r < rows; ++r) {
                std::int32_t pair;
                std::memcpy(&pair, xr[r] + b * block_values + 2 * p, sizeof pair);
                __m512i const a = _mm512_set1_epi32(pair);
                sum[r][0] = _mm512_dpwssd_epi32(sum[r][0], a, w0);
                sum[r][1] = _mm512_dpwssd_epi32(sum[r][1], a, w1);
            }
        }
        auto const* scales = reinterpret_cast<float const*>(panel + panel_block_codes * 2);
        __m512 const s0 = _mm512_load_ps(scales), s1 = _mm512_load_ps(scales + 16);
#pragma GCC unroll 6
        for (std::size_t r = 0; r < rows; ++r) {
            __m512 const d = _mm512_set1_ps(sr[r][b]);
            acc[r][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[r][0]), _mm512_mul_ps(d, s0), acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[r][1]), _mm512_mul_ps(d, s1), acc[r][1]);
        }
    }
    __mmask16 const mask0 = cols_used >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols_used) - 1);
    __mmask16 const mask1 = cols_used >= 32   ? __mmask16(0xFFFF)
                            : cols_used <= 16 ? __mmask16(0)
                                              : __mmask16((1u << (cols_used - 16)) - 1);
    for (std::size_t r = 0; r < rows_used; ++r) {
        float* row = c + r * ldc;
        __m512 v0 = acc[r][0], v1 = acc[r][1];
        if (accumulate) {
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(mask0, row));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(mask1, row + 16));
        }
        _mm512_mask_storeu_ps(row, mask0, v0);
        _mm512_mask_storeu_ps(row + 16, mask1, v1);
    }
}

// ---- one thread's share: rows [i0, i1) x columns [j0, j1) --------------------------------------

// Depth blocks of depth_blocks at a time: the packed panels (17 KiB each) stay in L1 while every
// row of the share passes over them, the share's x codes for those blocks in L2.
[[gnu::target("avx512vnni")]] inline void gemm_region(Block32GemmArgs const& g, std::size_t i0, std::size_t i1,
                                                      std::size_t j0, std::size_t j1, unsigned char* packed) noexcept {
    std::size_t const blocks = g.k / block_values, cols = j1 - j0;
    for (std::size_t b0 = 0; b0 < blocks; b0 += depth_blocks) {
        std::size_t const count = blocks - b0 < depth_blocks ? blocks - b0 : depth_blocks;
        pack_weights(g, j0, cols, b0, count, packed);
        for (std::size_t q = 0; q * panel_cols < cols; ++q) {
            unsigned char const* panel = packed + q * depth_blocks * panel_block_bytes;
            std::size_t const cols_used = cols - q * panel_cols < panel_cols ? cols - q * panel_cols : panel_cols;
            for (std::size_t i = i0; i < i1; i += micro_rows) {
                std::size_t const rows_used = i1 - i < micro_rows ? i1 - i : micro_rows;
                micro(g.x_codes + i * g.k + b0 * block_values, g.k, g.x_scales + i * blocks + b0, blocks, count, panel,
                      g.c + i * g.ldc + j0 + q * panel_cols, g.ldc, rows_used, cols_used, b0 > 0);
            }
        }
    }
}

}  // namespace rayo::cpu::block32
