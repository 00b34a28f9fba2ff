// max_pool2d and avg_pool2d on the CPU: output rows of every plane split over the thread pool; each
// output row reads the kh input rows under it (widened to f32 for f16 and bf16) and is computed in
// f32, its sums in window order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cpu/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"

namespace rayo::cpu::ops {

Support supports(KernelRunner const&, op::Pool2d const& d, OpViews const& v) {
    return detail::contiguous_floating("cpu", d.op, v);
}

namespace {

// The input rows and columns [first, last) a window starting at `start` (may be negative) covers.
struct Span {
    std::size_t first, last;
};
Span window(std::int64_t start, std::size_t size, std::size_t extent) {
    std::int64_t const lo = std::max<std::int64_t>(start, 0);
    std::int64_t const hi =
        std::min<std::int64_t>(start + static_cast<std::int64_t>(size), static_cast<std::int64_t>(extent));
    return {static_cast<std::size_t>(lo), static_cast<std::size_t>(std::max(hi, lo))};
}

// The maximum (NaN if any) or the mean of window (rows, cols) of an f32 plane's rows, where
// rows(i) gives input row i.
template <class Rows>
float pool_window(op::Pool2d const& d, Rows const& rows, Span ys, Span xs) {
    if (d.op == Op::max_pool2d) {
        float m = -std::numeric_limits<float>::infinity();
        for (std::size_t i = ys.first; i < ys.last; ++i)
            for (std::size_t j = xs.first; j < xs.last; ++j) {
                float const v = rows(i)[j];
                m = v > m || std::isnan(v) ? v : m;
            }
        return m;
    }
    float sum = 0.0f;
    for (std::size_t i = ys.first; i < ys.last; ++i)
        for (std::size_t j = xs.first; j < xs.last; ++j) sum += rows(i)[j];
    std::size_t const cells = d.count_include_pad ? d.kh * d.kw : (ys.last - ys.first) * (xs.last - xs.first);
    return sum / static_cast<float>(cells);
}

// Output row `oy` of one plane into `out` (ow values), the plane's input rows given by rows(i).
template <class Rows>
void pool_row(op::Pool2d const& d, Rows const& rows, std::size_t oy, float* out) {
    Span const ys = window(static_cast<std::int64_t>(oy * d.stride_h) - static_cast<std::int64_t>(d.pad_h), d.kh, d.h);
    for (std::size_t ox = 0; ox < d.ow; ++ox) {
        Span const xs =
            window(static_cast<std::int64_t>(ox * d.stride_w) - static_cast<std::int64_t>(d.pad_w), d.kw, d.w);
        out[ox] = pool_window(d, rows, ys, xs);
    }
}

}  // namespace

void run(KernelRunner& r, op::Pool2d const& d, OpViews const& v) {
    auto const& k = r.kernels();
    DType const type = v.in[0].dtype;
    std::size_t const element = bytes_for(type, 1), plane = d.h * d.w;
    auto const* x = data<std::byte const>(v.in[0]);
    auto* y = data<std::byte>(v.out[0]);
    std::size_t const work = d.kh * d.kw * d.ow;
    std::size_t const grain = std::max<std::size_t>(1, elementwise_grain / std::max<std::size_t>(1, work));
    r.pool().parallel_for(d.planes * d.oh, grain, [&](std::size_t b, std::size_t e) {
        std::vector<float> staged(type == DType::f32 ? 0 : d.kh * d.w), result(type == DType::f32 ? 0 : d.ow);
        for (std::size_t row = b; row < e; ++row) {
            std::size_t const p = row / d.oh, oy = row % d.oh;
            std::byte const* in = x + p * plane * element;
            std::byte* to = y + row * d.ow * element;
            if (type == DType::f32) {
                auto const* f = reinterpret_cast<float const*>(in);
                pool_row(
                    d, [&](std::size_t i) { return f + i * d.w; }, oy, reinterpret_cast<float*>(to));
                continue;
            }
            // The window rows widened, row i of the plane at staged[(i − first)·w].
            Span const ys =
                window(static_cast<std::int64_t>(oy * d.stride_h) - static_cast<std::int64_t>(d.pad_h), d.kh, d.h);
            if (ys.last > ys.first)
                k.widen(type, in + ys.first * d.w * element, staged.data(), (ys.last - ys.first) * d.w);
            pool_row(
                d, [&](std::size_t i) { return staged.data() + (i - ys.first) * d.w; }, oy, result.data());
            k.narrow(type, result.data(), to, d.ow);
        }
    });
}

}  // namespace rayo::cpu::ops
