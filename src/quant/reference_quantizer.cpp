// Scalar reference quantizers (see reference_quantizer.hpp). Every expression keeps ggml's order of
// f32 operations; this TU is built with -ffp-contract=off so nothing is fused.
#include "quant/reference_quantizer.hpp"

#include <cmath>
#include <concepts>
#include <cstring>

namespace rayo::quant::reference {

namespace {

constexpr float group_max_eps = 1e-15f;

// Weighted asymmetric search (ggml's make_qkx2_quants with use_mad = false): codes L in 0..nmax
// for x ≈ scale·L − the_min. Returns the scale.
float make_qkx2_quants(int n, int nmax, float const* x, float const* weights, std::uint8_t* L, float* the_min,
                       std::uint8_t* Laux, float rmin, float rdelta, int nstep) noexcept {
    float min = x[0];
    float max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        float const w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.0f;
    }
    float iscale = static_cast<float>(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_mad = 0;
    for (int i = 0; i < n; ++i) {
        int const l = nearest_int(iscale * (x[i] - min));
        L[i] = static_cast<std::uint8_t>(l < 0 ? 0 : l > nmax ? nmax : l);
        float diff = scale * static_cast<float>(L[i]) + min - x[i];
        diff = diff * diff;
        float const w = weights[i];
        best_mad += w * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - min));
            l = l < 0 ? 0 : l > nmax ? nmax : l;
            Laux[i] = static_cast<std::uint8_t>(l);
            float const w = weights[i];
            float const fl = static_cast<float>(l);
            sum_l += w * fl;
            sum_l2 += w * fl * fl;
            sum_xl += w * fl * x[i];
        }
        float const D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float mad = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
                diff = diff * diff;
                float const w = weights[i];
                mad += w * diff;
            }
            if (mad < best_mad) {
                for (int i = 0; i < n; ++i) L[i] = Laux[i];
                best_mad = mad;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

// Symmetric search (ggml's make_qx_quants with rmse_type = 1, weights x²): codes L in 0..2·nmax−1
// (offset by nmax; all 0 for an all-zero group) for x ≈ scale·(L − nmax). Returns the scale.
float make_qx_quants(int n, int nmax, float const* x, std::int8_t* L) noexcept {
    float max = 0;
    float amax = 0;
    for (int i = 0; i < n; ++i) {
        float const ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < group_max_eps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.0f;
    }
    auto code = [nmax](float v) {
        int const l = nearest_int(v);
        return l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
    };
    float iscale = static_cast<float>(-nmax) / max;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int const l = code(iscale * x[i]);
        L[i] = static_cast<std::int8_t>(l + nmax);
        float const w = x[i] * x[i];
        float const fl = static_cast<float>(l);
        sumlx += w * x[i] * fl;
        suml2 += w * fl * fl;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int const l = code(iscale * x[i]);
            float const w = x[i] * x[i];
            float const fl = static_cast<float>(l);
            sumlx += w * x[i] * fl;
            suml2 += w * fl * fl;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) L[i] = static_cast<std::int8_t>(nmax + code(iscale * x[i]));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// The search of q4_k and q5_k (ggml's quantize_row_q{4,5}_K_ref up to the packing of the codes):
// each sub-block of 32 by the weighted asymmetric search with codes 0..nmax, the eight scales and
// mins as 6-bit codes of d and dmin, then every value re-quantized against the stored factors.
// Fills L (256 codes), the 12 packed bytes, d and dmin.
void search_scales_and_mins(float const* x, int nmax, float rmin, int nstep, std::uint8_t* L, std::uint8_t* packed,
                            half& d_out, half& dmin_out) noexcept {
    std::uint8_t Laux[32];
    float weights[32];
    float mins[8];
    float scales[8];

    float max_scale = 0;  // the min is subtracted, so scales are never negative
    float max_min = 0;
    for (std::size_t j = 0; j < 8; ++j) {
        float const* xj = x + 32 * j;
        float sum_x2 = 0;
        for (std::size_t l = 0; l < 32; ++l) sum_x2 += xj[l] * xj[l];
        float const av_x = std::sqrt(sum_x2 / 32);
        for (std::size_t l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xj[l]);
        scales[j] = make_qkx2_quants(32, nmax, xj, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }

    float const inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    float const inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    std::uint8_t ls[8], lm[8];
    for (std::size_t j = 0; j < 8; ++j) {
        // As ggml: the int is narrowed to uint8 first, then capped at 63.
        auto const s = static_cast<std::uint8_t>(nearest_int(inv_scale * scales[j]));
        auto const m = static_cast<std::uint8_t>(nearest_int(inv_min * mins[j]));
        ls[j] = s < 63 ? s : 63;
        lm[j] = m < 63 ? m : 63;
    }
    set_scale_min_k4(ls, lm, packed);
    d_out = half(max_scale / 63.0f);
    dmin_out = half(max_min / 63.0f);

    float const d_all = static_cast<float>(d_out);
    float const dmin_all = static_cast<float>(dmin_out);
    for (std::size_t j = 0; j < 8; ++j) {
        ScaleMin const sm = get_scale_min_k4(j, packed);
        float const d = d_all * static_cast<float>(sm.scale);
        if (d == 0.0f) continue;  // keep the search's codes
        float const dm = dmin_all * static_cast<float>(sm.min);
        for (std::size_t i = 0; i < 32; ++i) {
            int const l = nearest_int((x[32 * j + i] + dm) / d);
            L[32 * j + i] = static_cast<std::uint8_t>(l < 0 ? 0 : l > nmax ? nmax : l);
        }
    }
}

}  // namespace

void quantize_q4_k(float const* x, q4_k& out) noexcept {
    std::uint8_t L[block_values];
    search_scales_and_mins(x, 15, -1.0f, 20, L, out.scales.data(), out.d, out.dmin);
    for (std::size_t c = 0; c < 4; ++c)
        for (std::size_t l = 0; l < 32; ++l)
            out.qs[32 * c + l] = static_cast<std::uint8_t>(L[64 * c + l] | (L[64 * c + l + 32] << 4));
}

void quantize_q5_k(float const* x, q5_k& out) noexcept {
    std::uint8_t L[block_values];
    search_scales_and_mins(x, 31, -0.5f, 15, L, out.scales.data(), out.d, out.dmin);
    out.qh = {};
    for (std::size_t c = 0; c < 4; ++c) {
        auto const bit_lo = static_cast<std::uint8_t>(1u << (2 * c)), bit_hi = static_cast<std::uint8_t>(2u << (2 * c));
        for (std::size_t l = 0; l < 32; ++l) {
            unsigned l1 = L[64 * c + l], l2 = L[64 * c + l + 32];
            if (l1 > 15) {
                l1 -= 16;
                out.qh[l] = static_cast<std::uint8_t>(out.qh[l] | bit_lo);
            }
            if (l2 > 15) {
                l2 -= 16;
                out.qh[l] = static_cast<std::uint8_t>(out.qh[l] | bit_hi);
            }
            out.qs[32 * c + l] = static_cast<std::uint8_t>(l1 | (l2 << 4));
        }
    }
}

void quantize_q6_k(float const* x, q6_k& out) noexcept {
    std::int8_t L[block_values];
    float scales[16];

    float max_scale = 0;
    float max_abs_scale = 0;
    for (std::size_t ib = 0; ib < 16; ++ib) {
        float const scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
        scales[ib] = scale;
        float const abs_scale = std::fabs(scale);
        if (abs_scale > max_abs_scale) {
            max_abs_scale = abs_scale;
            max_scale = scale;
        }
    }

    if (max_abs_scale < group_max_eps) {
        out = {};
        return;
    }

    float const iscale = -128.0f / max_scale;
    out.d = half(1 / iscale);
    for (std::size_t ib = 0; ib < 16; ++ib) {
        int const s = nearest_int(iscale * scales[ib]);
        out.scales[ib] = static_cast<std::int8_t>(s < 127 ? s : 127);
    }

    float const d_all = static_cast<float>(out.d);
    for (std::size_t j = 0; j < 16; ++j) {
        float const d = d_all * static_cast<float>(out.scales[j]);
        if (d == 0.0f) continue;  // keep the search's codes
        for (std::size_t i = 0; i < 16; ++i) {
            int l = nearest_int(x[16 * j + i] / d);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            L[16 * j + i] = static_cast<std::int8_t>(l + 32);
        }
    }

    for (std::size_t h = 0; h < 2; ++h) {
        std::int8_t const* Lh = L + 128 * h;
        std::uint8_t* ql = out.ql.data() + 64 * h;
        std::uint8_t* qh = out.qh.data() + 32 * h;
        for (std::size_t l = 0; l < 32; ++l) {
            auto const q1 = static_cast<std::uint8_t>(Lh[l]), q2 = static_cast<std::uint8_t>(Lh[l + 32]);
            auto const q3 = static_cast<std::uint8_t>(Lh[l + 64]), q4 = static_cast<std::uint8_t>(Lh[l + 96]);
            ql[l] = static_cast<std::uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
            ql[l + 32] = static_cast<std::uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
            qh[l] = static_cast<std::uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
        }
    }
}

void quantize_q8_k(float const* x, q8_k& out) noexcept {
    float max = 0;
    float amax = 0;
    for (std::size_t j = 0; j < block_values; ++j) {
        float const ax = std::fabs(x[j]);
        if (ax > amax) {
            amax = ax;
            max = x[j];
        }
    }
    if (amax == 0.0f) {
        out = {};
        return;
    }
    float const iscale = -127.0f / max;
    for (std::size_t j = 0; j < block_values; ++j) {
        int const v = nearest_int(iscale * x[j]);
        out.qs[j] = static_cast<std::int8_t>(v < 127 ? v : 127);
    }
    for (std::size_t g = 0; g < 16; ++g) {
        int sum = 0;
        for (std::size_t i = 0; i < 16; ++i) sum += out.qs[16 * g + i];
        out.bsums[g] = static_cast<std::int16_t>(sum);
    }
    out.d = 1 / iscale;
}

// ggml's quantize_row_q8_0_ref: d = amax/127 (ggml's MAX macro, so a NaN counts only when last),
// codes roundf(x/d) converted to int8 as ggml's build does.
void quantize_q8_0(float const* x, q8_0& out) noexcept {
    float amax = 0;
    for (std::size_t j = 0; j < small_block_values; ++j) {
        float const ax = std::fabs(x[j]);
        amax = amax > ax ? amax : ax;
    }
    float const d = amax / 127;
    float const id = d != 0.0f ? 1.0f / d : 0.0f;
    out.d = half(d);
    for (std::size_t j = 0; j < small_block_values; ++j) out.qs[j] = truncate_to_int8(std::round(x[j] * id));
}

// ggml's quantize_row_q4_0_ref: d = max/−8 for the first value of largest magnitude, codes
// min(15, int8(x/d + 8.5)).
void quantize_q4_0(float const* x, q4_0& out) noexcept {
    float amax = 0;
    float max = 0;
    for (std::size_t j = 0; j < small_block_values; ++j) {
        float const ax = std::fabs(x[j]);
        if (amax < ax) {
            amax = ax;
            max = x[j];
        }
    }
    float const d = max / -8;
    float const id = d != 0.0f ? 1.0f / d : 0.0f;
    out.d = half(d);
    auto code = [](float v) {
        int const q = truncate_to_int8(v + 8.5f);
        return static_cast<std::uint8_t>(q < 15 ? q : 15);
    };
    for (std::size_t j = 0; j < 16; ++j)
        out.qs[j] = static_cast<std::uint8_t>(code(x[j] * id) | (code(x[16 + j] * id) << 4));
}

namespace {

// q4_k's and q5_k's values: (d·sc)·q − dmin·m per sub-block of 32, q the nibble of qs plus, for
// q5_k, bit j of qh[l] (j the sub-block) as 16.
template <class Block>
void dequantize_scale_min(Block const& b, float* y) noexcept {
    constexpr bool fifth_bit = std::same_as<Block, q5_k>;
    float const d = static_cast<float>(b.d);
    float const min = static_cast<float>(b.dmin);
    std::uint8_t const* q = b.qs.data();
    for (std::size_t c = 0; c < 4; ++c, q += 32) {
        ScaleMin const lo = get_scale_min_k4(2 * c, b.scales.data());
        ScaleMin const hi = get_scale_min_k4(2 * c + 1, b.scales.data());
        float const d1 = d * static_cast<float>(lo.scale), m1 = min * static_cast<float>(lo.min);
        float const d2 = d * static_cast<float>(hi.scale), m2 = min * static_cast<float>(hi.min);
        auto const high = [&](std::size_t l, unsigned bit) -> unsigned {
            if constexpr (fifth_bit)
                return b.qh[l] & bit ? 16u : 0u;
            else
                return 0u;
        };
        unsigned const u1 = 1u << (2 * c), u2 = 2u << (2 * c);
        for (std::size_t l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((q[l] & 0xFu) + high(l, u1)) - m1;
        for (std::size_t l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((q[l] >> 4) + high(l, u2)) - m2;
    }
}

}  // namespace

void dequantize_q4_k(q4_k const& b, float* y) noexcept { dequantize_scale_min(b, y); }

void dequantize_q5_k(q5_k const& b, float* y) noexcept { dequantize_scale_min(b, y); }

void dequantize_q6_k(q6_k const& b, float* y) noexcept {
    float const d = static_cast<float>(b.d);
    for (std::size_t h = 0; h < 2; ++h) {
        std::uint8_t const* ql = b.ql.data() + 64 * h;
        std::uint8_t const* qh = b.qh.data() + 32 * h;
        std::int8_t const* sc = b.scales.data() + 8 * h;
        float* yh = y + 128 * h;
        for (std::size_t l = 0; l < 32; ++l) {
            std::size_t const is = l / 16;
            int const q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            int const q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            int const q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            int const q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            yh[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
            yh[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
            yh[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
            yh[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
        }
    }
}

void dequantize_q8_k(q8_k const& b, float* y) noexcept {
    for (std::size_t j = 0; j < block_values; ++j) y[j] = b.d * static_cast<float>(b.qs[j]);
}

void dequantize_q8_0(q8_0 const& b, float* y) noexcept {
    float const d = static_cast<float>(b.d);
    for (std::size_t j = 0; j < small_block_values; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
}

void dequantize_q4_0(q4_0 const& b, float* y) noexcept {
    float const d = static_cast<float>(b.d);
    for (std::size_t j = 0; j < 16; ++j) {
        y[j] = static_cast<float>((b.qs[j] & 0x0F) - 8) * d;
        y[j + 16] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
    }
}

}  // namespace rayo::quant::reference
