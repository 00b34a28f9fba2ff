// conv2d kernels for one instruction set: the im2col packer that feeds the GEMM micro-kernel
// straight from the image (rows of output pixels become vector copies, or vector deinterleaves
// at stride 2), and the direct depthwise kernel (vector FMAs along the output width).
//
// Compiled once per ISA (see src/cpu/kernel_table.hpp): templates on the xsimd arch only, raw
// pointers, no out-of-line standard-library code.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "rayo/cpu/convolution_args.hpp"
#include "rayo/cpu/gemm.hpp"

namespace rayo::cpu::conv {

template <class A>
using batch = xsimd::batch<float, A>;
template <class A>
inline constexpr std::size_t lanes = batch<A>::size;

namespace detail {

template <class A>
[[gnu::always_inline]] inline std::size_t smaller(std::size_t x, std::size_t y) noexcept {
    return x < y ? x : y;
}

template <class A>
[[gnu::always_inline]] inline void zero(float* dst, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; ++i) dst[i] = 0.0f;
}

// The even elements of 2·lanes consecutive floats at src.
template <class A>
[[gnu::always_inline]] inline batch<A> load_even(float const* src) noexcept {
    if constexpr (gemm::is_avx512<A>) {
        __m512i const even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        return _mm512_permutex2var_ps(_mm512_loadu_ps(src), even, _mm512_loadu_ps(src + 16));
    } else if constexpr (std::is_base_of_v<xsimd::avx, A>) {
        // [a0 a2 b0 b2 | a4 a6 b4 b6], then the middle 64-bit pairs swapped.
        __m256 const mixed = _mm256_shuffle_ps(_mm256_loadu_ps(src), _mm256_loadu_ps(src + 8), 0x88);
        return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(mixed), 0xD8));
    } else {
        return _mm_shuffle_ps(_mm_loadu_ps(src), _mm_loadu_ps(src + 4), 0x88);
    }
}

// The lowest `count` (< 32) bits set.
template <class A>
[[gnu::always_inline]] inline std::uint32_t low_bits(std::size_t count) noexcept {
    return (std::uint32_t{1} << count) - 1u;
}

// dst[t] = src[t·stride] for t < count. AVX-512 finishes a run with masked loads and stores,
// which touch no element outside it; the other ISAs finish element by element.
template <class A>
inline void strided_copy(float const* src, std::size_t stride, std::size_t count, float* dst) noexcept {
    constexpr std::size_t w = lanes<A>;
    std::size_t t = 0;
    if (stride == 1) {
        for (; t + w <= count; t += w) batch<A>::load_unaligned(src + t).store_unaligned(dst + t);
        if constexpr (gemm::is_avx512<A>) {
            if (t < count) {
                auto const mask = static_cast<__mmask16>(low_bits<A>(count - t));
                _mm512_mask_storeu_ps(dst + t, mask, _mm512_maskz_loadu_ps(mask, src + t));
            }
            return;
        }
    } else if (stride == 2) {
        // A vector reads src[2t, 2t + 2w): one past the last element it keeps, so the last vector
        // stops short of the final element.
        for (; t + w < count; t += w) load_even<A>(src + 2 * t).store_unaligned(dst + t);
        if constexpr (gemm::is_avx512<A>) {
            if (t < count) {
                std::size_t const left = count - t, reads = 2 * left - 1;  // src[2t, 2t + reads)
                auto const lo = static_cast<__mmask16>(low_bits<A>(reads < 16 ? reads : 16));
                auto const hi = static_cast<__mmask16>(reads > 16 ? low_bits<A>(reads - 16) : 0u);
                __m512i const even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
                __m512 const v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(lo, src + 2 * t), even,
                                                        _mm512_maskz_loadu_ps(hi, src + 2 * t + 16));
                _mm512_mask_storeu_ps(dst + t, static_cast<__mmask16>(low_bits<A>(left)), v);
            }
            return;
        }
    }
    for (; t < count; ++t) dst[t] = src[t * stride];
}

// dst[t] = row[x0 + t·stride] where 0 <= x0 + t·stride < width, else 0, for t < count.
template <class A>
inline void gather_row(float const* row, std::ptrdiff_t width, std::ptrdiff_t x0, std::size_t stride, std::size_t count,
                       float* dst) noexcept {
    auto const s = static_cast<std::ptrdiff_t>(stride);
    auto const n = static_cast<std::ptrdiff_t>(count);
    // ⌈a / s⌉ for a >= 0, without a division at the common strides.
    auto const steps = [&](std::ptrdiff_t a) { return s == 1 ? a : s == 2 ? (a + 1) >> 1 : (a + s - 1) / s; };
    std::ptrdiff_t lo = x0 < 0 ? steps(-x0) : 0;
    std::ptrdiff_t hi = x0 < width ? steps(width - x0) : 0;
    if (lo > n) lo = n;
    if (hi > n) hi = n;
    if (hi < lo) hi = lo;
    zero<A>(dst, static_cast<std::size_t>(lo));
    strided_copy<A>(row + x0 + lo * s, stride, static_cast<std::size_t>(hi - lo), dst + lo);
    zero<A>(dst + hi, static_cast<std::size_t>(n - hi));
}

}  // namespace detail

namespace detail {

// One output row's share of a B panel: `length` pixels from lane `offset` of the packed block's
// first depth step, whose input (at tap (0, 0)) starts at row `row`, column `col`.
struct Im2colRun {
    std::size_t offset = 0, length = 0;
    std::ptrdiff_t row = 0, col = 0;
};

// Depth steps [d0, d0 + kc) of the panels whose runs are given: for each depth step (channel c,
// kernel row i, column j), each run is a strided copy of one input row.
template <class A>
void pack_runs(ConvGeometry const& g, float const* x, std::size_t d0, std::size_t kc, Im2colRun const* runs,
               std::size_t run_count, float* packed) {
    constexpr std::size_t nr = gemm::nr<A>;
    std::size_t const taps = g.kh * g.kw, plane = g.h * g.w;
    auto const height = static_cast<std::ptrdiff_t>(g.h), width = static_cast<std::ptrdiff_t>(g.w);
    // d = (c·kh + i)·kw + j, stepped without divisions.
    std::size_t c = d0 / taps, i = d0 % taps / g.kw, j = d0 % g.kw;
    for (std::size_t step = 0; step < kc; ++step) {
        float const* channel = x + c * plane;
        auto const dy = static_cast<std::ptrdiff_t>(i * g.dilation_h),
                   dx = static_cast<std::ptrdiff_t>(j * g.dilation_w);
        float* out = packed + step * nr;
        for (std::size_t r = 0; r < run_count; ++r) {
            Im2colRun const& run = runs[r];
            std::ptrdiff_t const y = run.row + dy;
            if (y < 0 || y >= height)
                zero<A>(out + run.offset, run.length);
            else
                gather_row<A>(channel + y * width, width, run.col + dx, g.stride_w, run.length, out + run.offset);
        }
        if (++j == g.kw) {
            j = 0;
            if (++i == g.kh) i = 0, ++c;
        }
    }
}

}  // namespace detail

// Depth [d0, d0 + kc) × pixels [j0, j0 + count) of one plane group's im2col matrix (depth d =
// (channel, kernel row, kernel column), pixel = y·ow + x), packed as the GEMM micro-kernel's B:
// nr-pixel panels interleaved by depth, lanes past `count` zero. x: the group's first channel.
// The pixels are cut into runs of one output row within one panel, and several panels are packed
// together a depth step at a time, so that each channel's rows are read in order.
template <class A>
void pack_im2col(ConvGeometry const& g, float const* x, std::size_t d0, std::size_t kc, std::size_t j0,
                 std::size_t count, float* packed) {
    constexpr std::size_t nr = gemm::nr<A>;
    constexpr std::size_t max_runs = 4 * nr;
    detail::Im2colRun runs[max_runs];
    std::size_t run_count = 0, first_panel = 0;
    for (std::size_t panel = 0; panel < count; panel += nr) {
        if (run_count + nr > max_runs) {
            detail::pack_runs<A>(g, x, d0, kc, runs, run_count, packed + first_panel * kc);
            run_count = 0;
            first_panel = panel;
        }
        std::size_t const used = detail::smaller<A>(nr, count - panel);
        for (std::size_t lane = 0; lane < used;) {
            std::size_t const pixel = j0 + panel + lane, y = pixel / g.ow, xo = pixel % g.ow;
            std::size_t const length = detail::smaller<A>(used - lane, g.ow - xo);
            runs[run_count++] = {(panel - first_panel) * kc + lane, length,
                                 static_cast<std::ptrdiff_t>(y * g.stride_h) - static_cast<std::ptrdiff_t>(g.pad_h),
                                 static_cast<std::ptrdiff_t>(xo * g.stride_w) - static_cast<std::ptrdiff_t>(g.pad_w)};
            lane += length;
        }
        if (used < nr)
            for (std::size_t step = 0; step < kc; ++step)
                detail::zero<A>(packed + panel * kc + step * nr + used, nr - used);
    }
    if (run_count) detail::pack_runs<A>(g, x, d0, kc, runs, run_count, packed + first_panel * kc);
}

namespace detail {

// out[x0, x0 + V·lanes) ∩ [0, count) = bias + Σ_t weight[t]·source[t][x]: V vectors of
// accumulators kept in registers across the taps.
template <class A, std::size_t V>
[[gnu::always_inline]] inline void depthwise_block(float const* const* source, float const* weight, std::size_t taps,
                                                   float bias, float* out, std::size_t x0, std::size_t count) noexcept {
    using B = batch<A>;
    constexpr std::size_t w = lanes<A>;
    B acc[V];
    rayo::cpu::unrolled<A, V>([&](auto v) { acc[v] = B(bias); });
    for (std::size_t t = 0; t < taps; ++t) {
        B const k(weight[t]);
        float const* src = source[t] + x0;
        rayo::cpu::unrolled<A, V>(
            [&](auto v) { acc[v] = gemm::detail::multiply_add<A>(k, B::load_unaligned(src + v * w), acc[v]); });
    }
    rayo::cpu::unrolled<A, V>([&](auto v) {
        std::size_t const x = x0 + v * w;
        if (x + w <= count) {
            acc[v].store_unaligned(out + x);
        } else if (x < count) {
            alignas(64) float tail[w];
            acc[v].store_aligned(tail);
            for (std::size_t l = 0; l < w && x + l < count; ++l) out[x + l] = tail[l];
        }
    });
}

// out[x] = bias + Σ_t weight[t]·source[t][x] for x < count; sources readable a vector past count.
template <class A>
inline void depthwise_row(float const* const* source, float const* weight, std::size_t taps, float bias, float* out,
                          std::size_t count) noexcept {
    constexpr std::size_t w = lanes<A>;
    std::size_t x = 0;
    for (; x + 4 * w <= count; x += 4 * w) depthwise_block<A, 4>(source, weight, taps, bias, out, x, count);
    switch ((count - x + w - 1) / w) {  // 0 to 4 vectors, the last one partial
        case 4: depthwise_block<A, 4>(source, weight, taps, bias, out, x, count); break;
        case 3: depthwise_block<A, 3>(source, weight, taps, bias, out, x, count); break;
        case 2: depthwise_block<A, 2>(source, weight, taps, bias, out, x, count); break;
        case 1: depthwise_block<A, 1>(source, weight, taps, bias, out, x, count); break;
        default: break;
    }
}

}  // namespace detail

// A depthwise task (see DepthwiseArgs): the input rows it reads, zero padded and phase split into
// scratch, then every output row as vector FMAs over its taps' contiguous runs.
template <class A>
void depthwise(DepthwiseArgs const& a) {
    ConvGeometry const& g = a.g;
    if (a.y0 >= a.y1) return;
    std::size_t const sh = g.stride_h, sw = g.stride_w, row_floats = sw * a.phase_len;
    auto const top = static_cast<std::ptrdiff_t>(a.y0 * sh) - static_cast<std::ptrdiff_t>(g.pad_h);
    std::size_t const rows = (a.y1 - a.y0 - 1) * sh + (g.kh - 1) * g.dilation_h + 1;
    auto const height = static_cast<std::ptrdiff_t>(g.h), width = static_cast<std::ptrdiff_t>(g.w);
    for (std::size_t r = 0; r < rows; ++r) {
        std::ptrdiff_t const y = top + static_cast<std::ptrdiff_t>(r);
        if (y < 0 || y >= height) continue;  // never read: taps on rows outside the image are dropped
        float* dst = a.scratch + r * row_floats;
        for (std::size_t q = 0; q < sw; ++q)
            detail::gather_row<A>(a.x + y * width, width,
                                  static_cast<std::ptrdiff_t>(q) - static_cast<std::ptrdiff_t>(g.pad_w), sw,
                                  a.phase_len, dst + q * a.phase_len);
    }
    std::size_t const taps = g.kh * g.kw;
    float const* source[depthwise_max_taps];
    float weight[depthwise_max_taps];
    for (std::size_t y = a.y0; y < a.y1; ++y) {
        for (std::size_t m = 0; m < a.outputs; ++m) {
            std::size_t used = 0;
            for (std::size_t i = 0; i < g.kh; ++i) {
                std::size_t const r = (y - a.y0) * sh + i * g.dilation_h;
                std::ptrdiff_t const iy = top + static_cast<std::ptrdiff_t>(r);
                if (iy < 0 || iy >= height) continue;
                for (std::size_t j = 0; j < g.kw; ++j) {
                    std::size_t const col = j * g.dilation_w;
                    source[used] = a.scratch + r * row_floats + (col % sw) * a.phase_len + col / sw;
                    weight[used++] = a.weights[m * taps + i * g.kw + j];
                }
            }
            float* out = a.out + m * a.out_plane + (y - a.y0) * g.ow;
            detail::depthwise_row<A>(source, weight, used, a.bias ? a.bias[m] : 0.0f, out, g.ow);
        }
    }
}

}  // namespace rayo::cpu::conv
