// GEMM building blocks for one instruction set: the packers that lay A and B out as the
// register-blocked micro-kernel reads them, and the micro-kernel itself. The driver
// (src/cpu/gemm_driver.cpp) does the cache blocking and threading and calls these through
// KernelTable's function pointers.
//
// This header is compiled in TUs with different ISA flags, so every function here is a template
// on the xsimd arch A (distinct symbols per ISA) and nothing instantiates out-of-line standard
// library templates; not even rayo::half's conversions are called (they are non-template inline
// functions whose out-of-line copy the linker could take from a higher-ISA TU).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include <xsimd/xsimd.hpp>

#include "rayo/cpu/gemm_args.hpp"
#include "rayo/cpu/half_conversion.hpp"
#include "rayo/cpu/quantize.hpp"
#include "rayo/cpu/simd_loop.hpp"

namespace rayo::cpu::gemm {

template <class A>
inline constexpr bool is_avx512 = std::is_base_of_v<xsimd::avx512f, A>;
template <class A>
inline constexpr bool is_avx2 = std::is_base_of_v<xsimd::avx2, A> && !is_avx512<A>;
template <class A>
inline constexpr bool has_fma =
    is_avx512<A> || std::is_base_of_v<xsimd::fma3<xsimd::avx2>, A> || std::is_base_of_v<xsimd::fma3<xsimd::sse4_2>, A>;

template <class A>
using f32_batch = xsimd::batch<float, A>;
template <class A>
inline constexpr std::size_t lanes = f32_batch<A>::size;

// Micro-tile shape: nr is two vectors wide; mr fills the register file with 2·mr accumulators
// plus two B vectors and a broadcast A value (AVX-512 folds the broadcast into the FMA):
//   SSE4.2  6x8  (16 xmm: 12 accumulators, 2 B, 1 A, 1 product since there is no FMA)
//   AVX2    6x16 (16 ymm: 12 accumulators, 2 B, 1 A)
//   AVX-512 14x32 (32 zmm: 28 accumulators, 2 B)
template <class A>
inline constexpr std::size_t nr = 2 * lanes<A>;
template <class A>
inline constexpr std::size_t mr = is_avx512<A> ? 14 : 6;

template <class A>
struct MicroKernel {
    static constexpr std::size_t mr = gemm::mr<A>;
    static constexpr std::size_t nr = gemm::nr<A>;
};

namespace detail {

template <class A>
[[gnu::always_inline]] inline std::size_t smaller(std::size_t x, std::size_t y) noexcept {
    return x < y ? x : y;
}

using rayo::cpu::unrolled;

template <class A>
[[gnu::always_inline]] inline f32_batch<A> multiply_add(f32_batch<A> x, f32_batch<A> y, f32_batch<A> z) noexcept {
    if constexpr (is_avx512<A>) {
        return _mm512_fmadd_ps(x, y, z);  // xsimd 8 has no avx512 fma (would be mul + add)
    } else if constexpr (has_fma<A>) {
        return xsimd::fma(x, y, z);
    } else {
        return x * y + z;
    }
}

// Element `index` of an operand of type `type`, as f32.
template <class A>
[[gnu::always_inline]] inline float element(void const* base, GemmType type, std::size_t index) noexcept {
    switch (type) {
        case GemmType::f32: return static_cast<float const*>(base)[index];
        case GemmType::f16: return half_bits_to_f32<A>(static_cast<std::uint16_t const*>(base)[index]);
        case GemmType::bf16: return bf16_bits_to_f32<A>(static_cast<std::uint16_t const*>(base)[index]);
        case GemmType::q4_k:
        case GemmType::q6_k:
        case GemmType::q8_0:
        case GemmType::q4_0:
        case GemmType::q5_k: break;  // packed by pack_b_quantized
    }
    return 0.0f;
}

// GCC 12's AVX-512 intrinsics self-initialise an undefined vector (`__Y = __Y`), which
// -Wmaybe-uninitialized reports at every inlined use (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// One vector of f32 from `lanes` consecutive f16 / bf16 values (F16C where the ISA has it).
template <class A>
[[gnu::always_inline]] inline f32_batch<A> load_f16(std::uint16_t const* src) noexcept {
    if constexpr (is_avx512<A>) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<__m256i const*>(src)));
    } else if constexpr (is_avx2<A>) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<__m128i const*>(src)));
    } else {
        alignas(16) float tmp[lanes<A>];
        for (std::size_t i = 0; i < lanes<A>; ++i) tmp[i] = half_bits_to_f32<A>(src[i]);
        return f32_batch<A>::load_aligned(tmp);
    }
}

template <class A>
[[gnu::always_inline]] inline f32_batch<A> load_bf16(std::uint16_t const* src) noexcept {
    if constexpr (is_avx512<A>) {
        __m512i const wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<__m256i const*>(src)));
        return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
    } else if constexpr (is_avx2<A>) {
        __m256i const wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<__m128i const*>(src)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
    } else {
        __m128i const wide = _mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<__m128i const*>(src)));
        return _mm_castsi128_ps(_mm_slli_epi32(wide, 16));
    }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// dst[0, count) = src elements [start, start + count) as f32; dst need not be aligned.
template <class A>
[[gnu::always_inline]] inline void convert_run(void const* base, GemmType type, std::size_t start, std::size_t count,
                                               float* dst) noexcept {
    constexpr std::size_t w = lanes<A>;
    std::size_t i = 0;
    switch (type) {
        case GemmType::f32: {
            float const* src = static_cast<float const*>(base) + start;
            for (; i + w <= count; i += w) f32_batch<A>::load_unaligned(src + i).store_unaligned(dst + i);
            for (; i < count; ++i) dst[i] = src[i];
            return;
        }
        case GemmType::f16: {
            std::uint16_t const* src = static_cast<std::uint16_t const*>(base) + start;
            for (; i + w <= count; i += w) load_f16<A>(src + i).store_unaligned(dst + i);
            for (; i < count; ++i) dst[i] = half_bits_to_f32<A>(src[i]);
            return;
        }
        case GemmType::bf16: {
            std::uint16_t const* src = static_cast<std::uint16_t const*>(base) + start;
            for (; i + w <= count; i += w) load_bf16<A>(src + i).store_unaligned(dst + i);
            for (; i < count; ++i) dst[i] = bf16_bits_to_f32<A>(src[i]);
            return;
        }
        case GemmType::q4_k:
        case GemmType::q6_k:
        case GemmType::q8_0:
        case GemmType::q4_0:
        case GemmType::q5_k: return;  // packed by pack_b_quantized
    }
}

// 8 x 8 transpose in registers: rows[i][j] -> rows[j][i].
template <class A>
[[gnu::always_inline]] inline void transpose_8x8(__m256 (&rows)[8]) noexcept {
    __m256 const t0 = _mm256_unpacklo_ps(rows[0], rows[1]), t1 = _mm256_unpackhi_ps(rows[0], rows[1]);
    __m256 const t2 = _mm256_unpacklo_ps(rows[2], rows[3]), t3 = _mm256_unpackhi_ps(rows[2], rows[3]);
    __m256 const t4 = _mm256_unpacklo_ps(rows[4], rows[5]), t5 = _mm256_unpackhi_ps(rows[4], rows[5]);
    __m256 const t6 = _mm256_unpacklo_ps(rows[6], rows[7]), t7 = _mm256_unpackhi_ps(rows[6], rows[7]);
    __m256 const s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
    __m256 const s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
    __m256 const s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
    __m256 const s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
    rows[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    rows[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    rows[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    rows[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    rows[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    rows[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    rows[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    rows[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// AVX2 part of pack_panel for lines contiguous along depth (row-major A, transposed B): groups
// of 8 lines x 8 depth steps are loaded (converted), transposed in registers and stored as panel
// rows. Returns the depth handled (a multiple of 8); the caller packs the rest.
template <class A, std::size_t width>
inline std::size_t pack_transposed_avx2(void const* base, GemmType type, std::size_t line_stride, std::size_t line0,
                                        std::size_t lines, std::size_t depth0, std::size_t depth, float* out) noexcept {
    std::size_t const handled = depth / 8 * 8;
    for (std::size_t group = 0; group < width; group += 8) {
        std::size_t const group_lines = group < lines ? smaller<A>(8, lines - group) : 0;
        std::size_t const store_width = smaller<A>(8, width - group);
        for (std::size_t d0 = 0; d0 < handled; d0 += 8) {
            __m256 v[8];
            for (std::size_t l = 0; l < 8; ++l) {
                v[l] = _mm256_setzero_ps();  // lines past the panel's are zero padding
                if (l >= group_lines) continue;
                std::size_t const index = (line0 + group + l) * line_stride + depth0 + d0;
                switch (type) {
                    case GemmType::f32: v[l] = _mm256_loadu_ps(static_cast<float const*>(base) + index); break;
                    case GemmType::f16: v[l] = load_f16<A>(static_cast<std::uint16_t const*>(base) + index); break;
                    case GemmType::bf16: v[l] = load_bf16<A>(static_cast<std::uint16_t const*>(base) + index); break;
                    case GemmType::q4_k:
                    case GemmType::q6_k:
                    case GemmType::q8_0:
                    case GemmType::q4_0:
                    case GemmType::q5_k: break;  // packed by pack_b_quantized
                }
            }
            transpose_8x8<A>(v);
            float* dst = out + d0 * width + group;
            for (std::size_t q = 0; q < 8; ++q, dst += width) {
                if (store_width == 8 || d0 + q + 1 < depth) {
                    // A narrower panel (width 6) spills 2 lanes into the next depth step's slot,
                    // which that step (or the caller's tail packing) rewrites afterwards.
                    _mm256_storeu_ps(dst, v[q]);
                } else {
                    alignas(32) float last[8];
                    _mm256_store_ps(last, v[q]);
                    for (std::size_t l = 0; l < store_width; ++l) dst[l] = last[l];
                }
            }
        }
    }
    return handled;
}

// Packs `lines` x `depth` of an operand into one panel of `width` lines, interleaved by depth:
// out[d·width + l] = X(line0 + l, depth0 + d), lines [lines, width) zero. X(l, d) lives at
// base[l·line_stride + d·depth_stride]. Used for A panels (lines = rows) and B panels (lines =
// columns); whichever stride is 1 decides how the source is walked.
template <class A, std::size_t width>
inline void pack_panel(void const* base, GemmType type, std::size_t line_stride, std::size_t depth_stride,
                       std::size_t line0, std::size_t lines, std::size_t depth0, std::size_t depth,
                       float* out) noexcept {
    if (line_stride == 1) {
        // Lines are contiguous within one depth step: whole panel rows are vector copies.
        for (std::size_t d = 0; d < depth; ++d) {
            float* row = out + d * width;
            convert_run<A>(base, type, (depth0 + d) * depth_stride + line0, lines, row);
            for (std::size_t l = lines; l < width; ++l) row[l] = 0.0f;
        }
        return;
    }
    if (depth_stride == 1) {
        std::size_t done = 0;
        if constexpr (is_avx2<A>)
            done = pack_transposed_avx2<A, width>(base, type, line_stride, line0, lines, depth0, depth, out);
        // Each line is contiguous along depth: convert a chunk of every line into a small tile,
        // then write it out transposed. Chunks keep the tile in L1 and the source reads sequential.
        constexpr std::size_t chunk = 32;
        alignas(64) float tile[width][chunk];
        for (std::size_t d0 = done; d0 < depth; d0 += chunk) {
            std::size_t const run = smaller<A>(chunk, depth - d0);
            for (std::size_t l = 0; l < lines; ++l)
                convert_run<A>(base, type, (line0 + l) * line_stride + depth0 + d0, run, tile[l]);
            for (std::size_t l = lines; l < width; ++l)
                for (std::size_t d = 0; d < run; ++d) tile[l][d] = 0.0f;
            float* dst = out + d0 * width;
            for (std::size_t d = 0; d < run; ++d)
                for (std::size_t l = 0; l < width; ++l) dst[d * width + l] = tile[l][d];
        }
        return;
    }
    // General strides (including 0, a broadcast operand): element by element.
    for (std::size_t d = 0; d < depth; ++d) {
        float* row = out + d * width;
        std::size_t const offset = (depth0 + d) * depth_stride;
        for (std::size_t l = 0; l < lines; ++l) row[l] = element<A>(base, type, offset + (line0 + l) * line_stride);
        for (std::size_t l = lines; l < width; ++l) row[l] = 0.0f;
    }
}

// Writes the finished accumulators to C: the full tile straight from registers, an edge tile via
// a stack buffer so no lane outside [mr_used, nr_used) is touched.
template <class A, std::size_t rows, std::size_t vectors, class Accumulators>
[[gnu::always_inline]] inline void store_tile(Accumulators const& acc, float* c, std::size_t ldc, std::size_t mr_used,
                                              std::size_t nr_used, bool accumulate) noexcept {
    constexpr std::size_t w = lanes<A>;
    if (mr_used == rows && nr_used == vectors * w) {
        unrolled<A, rows>([&](auto r) {
            unrolled<A, vectors>([&](auto v) {
                float* dst = c + r * ldc + v * w;
                f32_batch<A> value = acc[r][v];
                if (accumulate) value += f32_batch<A>::load_unaligned(dst);
                value.store_unaligned(dst);
            });
        });
        return;
    }
    alignas(64) float tile[rows * vectors * w];
    unrolled<A, rows>(
        [&](auto r) { unrolled<A, vectors>([&](auto v) { acc[r][v].store_aligned(tile + (r * vectors + v) * w); }); });
    for (std::size_t r = 0; r < mr_used; ++r) {
        float const* src = tile + r * vectors * w;
        float* dst = c + r * ldc;
        if (accumulate) {
            for (std::size_t j = 0; j < nr_used; ++j) dst[j] += src[j];
        } else {
            for (std::size_t j = 0; j < nr_used; ++j) dst[j] = src[j];
        }
    }
}

}  // namespace detail

// Packs rows [i0, i0+mc) x depth [p0, p0+kc) of A into mr-row panels, panel q at packed + q·mr·kc.
template <class A>
void pack_a(GemmArgs const& args, std::size_t i0, std::size_t mc, std::size_t p0, std::size_t kc, float* packed) {
    constexpr std::size_t panel_rows = mr<A>;
    for (std::size_t i = 0; i < mc; i += panel_rows) {
        detail::pack_panel<A, panel_rows>(args.a, args.a_type, args.a_row, args.a_col, i0 + i,
                                          detail::smaller<A>(panel_rows, mc - i), p0, kc, packed + i * kc);
    }
}

// The block type of a quantized GemmType.
constexpr DType quantized_dtype(GemmType t) noexcept {
    switch (t) {
        case GemmType::q4_k: return DType::q4_k;
        case GemmType::q6_k: return DType::q6_k;
        case GemmType::q8_0: return DType::q8_0;
        case GemmType::q4_0: return DType::q4_0;
        case GemmType::q5_k: return DType::q5_k;
        case GemmType::f32:
        case GemmType::f16:
        case GemmType::bf16: break;
    }
    return DType::f32;
}

// pack_b for block-quantized weight rows: each 256 values of the panel's rows (one K-quant block,
// eight q8_0 / q4_0 blocks) are decoded (exactly as dequantize does) into an L1 tile, which is then
// packed like a transposed f32 B. The decoded panel is reused by every row block of A, so decoding
// costs O(n·k), not O(m·n·k). kc is a multiple of 256 except at the end of a row, which is whole
// blocks.
template <class A>
void pack_b_quantized(GemmArgs const& args, std::size_t p0, std::size_t kc, std::size_t j0, std::size_t nc,
                      float* packed) {
    constexpr std::size_t panel_cols = nr<A>;
    constexpr std::size_t chunk = quant_block_values;
    DType const type = quantized_dtype(args.b_type);
    std::size_t const block = block_elements(type), block_bytes = size_of(type);
    alignas(64) float tile[panel_cols * chunk];
    auto const* rows = static_cast<unsigned char const*>(args.b);
    for (std::size_t j = 0; j < nc; j += panel_cols) {
        std::size_t const lines = detail::smaller<A>(panel_cols, nc - j);
        for (std::size_t d0 = 0; d0 < kc; d0 += chunk) {
            std::size_t const depth = detail::smaller<A>(chunk, kc - d0);
            std::size_t const first_block = (p0 + d0) / block;
            for (std::size_t l = 0; l < lines; ++l)
                kquant::dequantize_kernel<A>(type, rows + (j0 + j + l) * args.b_col + first_block * block_bytes,
                                             tile + l * chunk, depth / block);
            detail::pack_panel<A, panel_cols>(tile, GemmType::f32, chunk, 1, 0, lines, 0, depth,
                                              packed + j * kc + d0 * panel_cols);
        }
    }
}

// Packs depth [p0, p0+kc) x columns [j0, j0+nc) of B into nr-column panels, panel q at packed + q·nr·kc.
template <class A>
void pack_b(GemmArgs const& args, std::size_t p0, std::size_t kc, std::size_t j0, std::size_t nc, float* packed) {
    constexpr std::size_t panel_cols = nr<A>;
    if (is_quantized(args.b_type)) {
        pack_b_quantized<A>(args, p0, kc, j0, nc, packed);
        return;
    }
    for (std::size_t j = 0; j < nc; j += panel_cols) {
        detail::pack_panel<A, panel_cols>(args.b, args.b_type, args.b_col, args.b_row, j0 + j,
                                          detail::smaller<A>(panel_cols, nc - j), p0, kc, packed + j * kc);
    }
}

// C[mr_used, nr_used] = (accumulate ? C : 0) + a_panel · b_panel over kc. a_panel: kc steps of mr
// floats; b_panel: kc steps of nr floats, 64-byte aligned (as the driver's packed buffers are).
template <class A>
void micro(std::size_t kc, float const* a_panel, float const* b_panel, float* c, std::size_t ldc, std::size_t mr_used,
           std::size_t nr_used, bool accumulate) {
    using batch = f32_batch<A>;
    constexpr std::size_t rows = mr<A>;
    constexpr std::size_t vectors = nr<A> / lanes<A>;
    constexpr std::size_t w = lanes<A>;

    // Start pulling the C tile in now; it is needed only after the k loop.
    for (std::size_t r = 0; r < mr_used; ++r) {
        __builtin_prefetch(c + r * ldc, 1);
        __builtin_prefetch(c + r * ldc + nr_used - 1, 1);
    }

    batch acc[rows][vectors];
    detail::unrolled<A, rows>([&](auto r) { detail::unrolled<A, vectors>([&](auto v) { acc[r][v] = batch(0.0f); }); });
    for (std::size_t p = 0; p < kc; ++p) {
        batch b[vectors];
        detail::unrolled<A, vectors>([&](auto v) { b[v] = batch::load_aligned(b_panel + v * w); });
        detail::unrolled<A, rows>([&](auto r) {
            batch const a(a_panel[r]);
            detail::unrolled<A, vectors>([&](auto v) { acc[r][v] = detail::multiply_add<A>(a, b[v], acc[r][v]); });
        });
        a_panel += rows;
        b_panel += nr<A>;
    }
    batch result[rows][vectors];  // see micro_direct_a
    detail::unrolled<A, rows>([&](auto r) { detail::unrolled<A, vectors>([&](auto v) { result[r][v] = acc[r][v]; }); });
    detail::store_tile<A, rows, vectors>(result, c, ldc, mr_used, nr_used, accumulate);
}

// The micro-kernel reading an f32 A in place (rows i0.., depth p0.., via args' strides) instead of
// from a packed panel: for small products where packing A cannot pay for itself. Rows past mr_used
// repeat the last used row, so nothing outside A is read.
template <class A>
void micro_direct_a(GemmArgs const& args, std::size_t i0, std::size_t p0, std::size_t kc, float const* b_panel,
                    float* c, std::size_t ldc, std::size_t mr_used, std::size_t nr_used, bool accumulate) {
    using batch = f32_batch<A>;
    constexpr std::size_t rows = mr<A>;
    constexpr std::size_t vectors = nr<A> / lanes<A>;
    constexpr std::size_t w = lanes<A>;

    float const* a = static_cast<float const*>(args.a) + i0 * args.a_row + p0 * args.a_col;
    std::size_t const a_row = args.a_row;
    std::size_t const a_col = args.a_col;
    std::size_t const last_row = mr_used - 1;

    batch acc[rows][vectors];
    detail::unrolled<A, rows>([&](auto r) { detail::unrolled<A, vectors>([&](auto v) { acc[r][v] = batch(0.0f); }); });
    for (std::size_t p = 0; p < kc; ++p) {
        batch b[vectors];
        detail::unrolled<A, vectors>([&](auto v) { b[v] = batch::load_aligned(b_panel + v * w); });
        std::size_t const offset = p * a_col;
        detail::unrolled<A, rows>([&](auto r) {
            batch const a_value(a[detail::smaller<A>(r, last_row) * a_row + offset]);
            detail::unrolled<A, vectors>(
                [&](auto v) { acc[r][v] = detail::multiply_add<A>(a_value, b[v], acc[r][v]); });
        });
        b_panel += nr<A>;
    }
    // A fresh array for the store: handing `acc` itself out lets GCC think the A loads may alias
    // it, and it then stores every accumulator to the stack on every step.
    batch result[rows][vectors];
    detail::unrolled<A, rows>([&](auto r) { detail::unrolled<A, vectors>([&](auto v) { result[r][v] = acc[r][v]; }); });
    detail::store_tile<A, rows, vectors>(result, c, ldc, mr_used, nr_used, accumulate);
}

}  // namespace rayo::cpu::gemm
