// The convolution family: conv2d against a float64 cross-correlation (odd sizes, stride 2, dilation
// 2, asymmetric stride and padding, groups 2, depthwise with and without a channel multiplier,
// 1×1 kernels at stride 1 and 2, a kernel as large as the padded input, rank-3 x, bias and no
// bias, 0-sized batches and channel counts, NaN and ±Inf in x, one problem large enough for the
// CPU's and GPUs' tiles) and convolve2d against scipy.signal.convolve2d's definition in all three
// modes with odd and even kernels; a set of problems with 16 or more channels per group, the
// shapes the CUDA backend's implicit GEMM takes. Tolerance: that of a product of depth
// K = C/groups·KH·KW.
#include "ops/harness.hpp"

#include <cmath>
#include <limits>

namespace rayo::test::ops {
namespace {

struct Problem {
    std::size_t n, c, h, w, o, kh, kw;
    Conv2dParams params = {};
    bool bias = false;
    bool batched = true;  // x of rank 4 (else rank 3, n = 1)
};

std::string describe(Problem const& p) {
    auto const pair = [](std::array<int, 2> a) {
        std::string text(1, '(');
        text.append(std::to_string(a[0])).append(",").append(std::to_string(a[1])).append(")");
        return text;
    };
    return "x [" + std::to_string(p.n) + "," + std::to_string(p.c) + "," + std::to_string(p.h) + "," +
           std::to_string(p.w) + "] w [" + std::to_string(p.o) + ",·," + std::to_string(p.kh) + "," +
           std::to_string(p.kw) + "] stride " + pair(p.params.stride) + " padding " + pair(p.params.padding) +
           " dilation " + pair(p.params.dilation) + " groups " + std::to_string(p.params.groups) +
           (p.bias ? " bias" : "");
}

std::size_t extent(std::size_t in, std::size_t k, int pad, int stride, int dilation) {
    return (in + 2 * static_cast<std::size_t>(pad) - static_cast<std::size_t>(dilation) * (k - 1) - 1) /
               static_cast<std::size_t>(stride) +
           1;
}

// The float64 cross-correlation and Σ|x·w| (+ |bias|) of every output.
struct Reference {
    std::vector<double> value, magnitude;
};
Reference reference(Problem const& p, std::vector<double> const& x, std::vector<double> const& w,
                    std::vector<double> const& bias, std::size_t oh, std::size_t ow) {
    std::size_t const g = static_cast<std::size_t>(p.params.groups), cg = p.c / g, og = p.o / g;
    Reference r{std::vector<double>(p.n * p.o * oh * ow), std::vector<double>(p.n * p.o * oh * ow)};
    for (std::size_t n = 0; n < p.n; ++n)
        for (std::size_t o = 0; o < p.o; ++o)
            for (std::size_t y = 0; y < oh; ++y)
                for (std::size_t xo = 0; xo < ow; ++xo) {
                    double v = bias.empty() ? 0.0 : bias[o], m = bias.empty() ? 0.0 : std::abs(bias[o]);
                    for (std::size_t c = 0; c < cg; ++c)
                        for (std::size_t i = 0; i < p.kh; ++i)
                            for (std::size_t j = 0; j < p.kw; ++j) {
                                auto const iy = static_cast<std::ptrdiff_t>(y) * p.params.stride[0] -
                                                p.params.padding[0] +
                                                static_cast<std::ptrdiff_t>(i) * p.params.dilation[0];
                                auto const ix = static_cast<std::ptrdiff_t>(xo) * p.params.stride[1] -
                                                p.params.padding[1] +
                                                static_cast<std::ptrdiff_t>(j) * p.params.dilation[1];
                                if (iy < 0 || ix < 0 || iy >= static_cast<std::ptrdiff_t>(p.h) ||
                                    ix >= static_cast<std::ptrdiff_t>(p.w))
                                    continue;
                                std::size_t const channel = o / og * cg + c;
                                double const t = x[((n * p.c + channel) * p.h + static_cast<std::size_t>(iy)) * p.w +
                                                   static_cast<std::size_t>(ix)] *
                                                 w[((o * cg + c) * p.kh + i) * p.kw + j];
                                v += t;
                                m += std::abs(t);
                            }
                    std::size_t const at = ((n * p.o + o) * oh + y) * ow + xo;
                    r.value[at] = v;
                    r.magnitude[at] = m;
                }
    return r;
}

template <class T>
std::vector<double> exact(std::vector<T> const& v) {
    return std::vector<double>(v.begin(), v.end());
}

template <class T>
std::vector<T> as(std::vector<float> const& v) {
    return std::vector<T>(v.begin(), v.end());
}

// Each element within the product tolerance of depth `depth`.
template <class T>
void expect_convolution(CaseContext& ctx, Guarded<T> const& out, Reference const& want, std::size_t depth) {
    double const root_k = std::sqrt(static_cast<double>(std::max<std::size_t>(depth, 1)));
    ctx.expect_close(out, {.want = [&](std::size_t i) { return want.value[i]; },
                           .describe = [&](std::size_t i) { return "out[" + std::to_string(i) + "]"; },
                           .scale = [&](std::size_t i) { return root_k * want.magnitude[i]; },
                           .magnitude = [&](std::size_t i) { return want.magnitude[i]; }});
}

// x, w and bias of a problem (x with `poison` values at a few places), run through conv2d_into
// (and every third problem through the returning form) and checked.
template <class T>
void run_problem(CaseContext& ctx, Problem const& p, std::size_t index, bool poison = false) {
    SCOPED_TRACE(describe(p));
    std::size_t const groups = static_cast<std::size_t>(p.params.groups), cg = p.c / groups;
    std::size_t const oh = extent(p.h, p.kh, p.params.padding[0], p.params.stride[0], p.params.dilation[0]);
    std::size_t const ow = extent(p.w, p.kw, p.params.padding[1], p.params.stride[1], p.params.dilation[1]);
    std::vector<T> xv = as<T>(ctx.values(p.n * p.c * p.h * p.w, {-1, 1}, Specials::none));
    if (poison) {
        float const specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity()};
        for (std::size_t s = 0; s < xv.size(); s += 17) xv[s] = T(specials[s / 17 % 3]);
    }
    std::vector<T> const wv = as<T>(ctx.values(p.o * cg * p.kh * p.kw, {-1, 1}, Specials::none));
    std::vector<T> const bv = p.bias ? as<T>(ctx.values(p.o, {-1, 1}, Specials::none)) : std::vector<T>{};
    auto const i = [](std::size_t v) { return static_cast<std::int64_t>(v); };
    Shape const x_shape = p.batched ? Shape{i(p.n), i(p.c), i(p.h), i(p.w)} : Shape{i(p.c), i(p.h), i(p.w)};
    Shape const out_shape = p.batched ? Shape{i(p.n), i(p.o), i(oh), i(ow)} : Shape{i(p.o), i(oh), i(ow)};
    Shape const w_shape{i(p.o), i(cg), i(p.kh), i(p.kw)};
    Reference const want = reference(p, exact(xv), exact(wv), exact(bv), oh, ow);
    std::size_t const offset = index % 3;
    ctx.attempt([&] {
        Tensor<T> const x = ctx.input(xv, x_shape, offset), w = ctx.input(wv, w_shape, (offset + 1) % 3);
        Guarded<T> out = ctx.output<T>(out_shape, (index + 1) % 3);
        if (index % 3 == 2) {
            Tensor<T> const y = p.bias ? conv2d(x, w, ctx.input(bv, Shape{i(p.o)}), p.params) : conv2d(x, w, p.params);
            ASSERT_EQ(y.shape(), out_shape);
            copy_into(y, out.tensor());
        } else if (p.bias) {
            conv2d_into(x, w, ctx.input(bv, Shape{i(p.o)}, 2), p.params, out.tensor());
        } else {
            conv2d_into(x, w, p.params, out.tensor());
        }
        expect_convolution(ctx, out, want, cg * p.kh * p.kw);
    });
}

std::vector<Problem> problems() {
    return {
        {2, 3, 7, 9, 5, 3, 3, {.padding = {1, 1}}, true},
        {1, 4, 11, 10, 6, 3, 3, {.stride = {2, 2}, .padding = {1, 1}}},
        {2, 4, 9, 9, 4, 3, 3, {.padding = {2, 2}, .dilation = {2, 2}}, true},
        {1, 6, 8, 7, 4, 3, 2, {.stride = {2, 1}, .padding = {0, 1}, .groups = 2}, true},
        {2, 5, 10, 10, 5, 3, 3, {.padding = {1, 1}, .groups = 5}, true},
        {1, 4, 9, 6, 8, 5, 3, {.stride = {1, 2}, .padding = {2, 1}, .groups = 4}},
        {2, 16, 7, 7, 24, 1, 1},
        {1, 8, 9, 9, 12, 1, 1, {.stride = {2, 2}}, true},
        {1, 3, 5, 5, 2, 5, 5},
        {1, 2, 5, 4, 3, 7, 6, {.padding = {1, 1}}},
        {1, 3, 6, 6, 2, 2, 2, {}, true, false},
        {1, 1, 1, 1, 1, 1, 1, {}, true},
        {0, 3, 5, 5, 4, 3, 3, {.padding = {1, 1}}},
        {2, 3, 5, 5, 0, 3, 3, {.padding = {1, 1}}},
        {1, 12, 13, 19, 20, 3, 3, {.padding = {1, 1}}, true},
        {2, 32, 28, 30, 40, 3, 3, {.padding = {1, 1}}, true},
        {1, 64, 14, 14, 72, 1, 1, {}, true},
        {1, 16, 17, 17, 16, 3, 3, {.stride = {2, 2}, .padding = {1, 1}, .groups = 16}},
        {1, 3, 9, 75, 3, 3, 3, {.padding = {1, 1}, .groups = 3}, true},
        {2, 4, 12, 70, 4, 3, 3, {.stride = {2, 2}, .padding = {2, 2}, .dilation = {2, 2}, .groups = 4}},
        {1, 2, 10, 40, 4, 3, 2, {.stride = {2, 3}, .padding = {1, 0}, .groups = 2}, true},
        {1, 2, 15, 40, 2, 7, 7, {.padding = {3, 3}, .groups = 2}},
        {1, 6, 13, 47, 10, 1, 1, {.stride = {2, 2}, .padding = {1, 1}}, true},
        {2, 5, 7, 9, 7, 1, 1, {}, true},
        {1, 3, 11, 67, 5, 3, 3, {.stride = {2, 2}, .padding = {1, 1}}},
        {1, 3, 10, 37, 4, 2, 2, {.stride = {3, 3}}},
    };
}

// Whether the target runs a problem of this many multiply-adds in its budget.
bool fits(CaseContext const& ctx, Problem const& p) {
    std::size_t const oh = extent(p.h, p.kh, p.params.padding[0], p.params.stride[0], p.params.dilation[0]);
    std::size_t const ow = extent(p.w, p.kw, p.params.padding[1], p.params.stride[1], p.params.dilation[1]);
    std::size_t const macs = p.n * p.o * oh * ow * (p.c / static_cast<std::size_t>(p.params.groups)) * p.kh * p.kw;
    return macs <= 16 * ctx.target().max_elements;
}

template <class T>
void check_conv2d(CaseContext& ctx) {
    std::size_t index = 0;
    for (Problem const& p : problems())
        if (fits(ctx, p)) run_problem<T>(ctx, p, index++);
}

// Problems with at least 16 input and 16 output channels per group, which the CUDA backend runs as
// an implicit GEMM on the tensor cores at f16 / bf16: odd pixel counts and pixel tiles spanning
// images, stride 2, padding, dilation 2, groups 2, weight rows not a multiple of 8 elements (copied
// element by element), more output channels than a channel tile, 1×1 kernels, bias and none.
std::vector<Problem> gemm_problems() {
    return {
        {1, 16, 9, 11, 16, 3, 3, {.padding = {1, 1}}, true},
        {2, 20, 9, 7, 18, 3, 3, {.stride = {2, 2}, .padding = {1, 1}}},
        {1, 16, 10, 9, 17, 3, 3, {.padding = {2, 2}, .dilation = {2, 2}}, true},
        {2, 32, 7, 9, 32, 3, 2, {.stride = {2, 1}, .padding = {1, 0}, .groups = 2}, true},
        {1, 16, 8, 8, 130, 1, 1, {.stride = {2, 2}}},
        {3, 24, 5, 5, 20, 1, 1, {}, true},
        {2, 16, 13, 11, 16, 3, 3, {.padding = {1, 1}}},
        // The Vulkan implicit GEMM's tiles (128 channels x 128 pixels, or 64 x 256 for groups of at
        // most 64 outputs): two channel tiles and a partial last pixel tile; groups 2 at stride 2
        // over three pixel tiles; k of 153 (weights element by element, a partial last k step); a
        // 1x1 stride 2 with more channels than a tile; a 5x5 window with dilation along x.
        {3, 32, 19, 17, 144, 3, 3, {.padding = {1, 1}}, true},
        {2, 64, 37, 35, 96, 3, 3, {.stride = {2, 2}, .padding = {1, 1}, .groups = 2}, true},
        {1, 17, 23, 21, 33, 3, 3, {.padding = {1, 1}}},
        {2, 40, 15, 15, 136, 1, 1, {.stride = {2, 2}}, true},
        {1, 24, 12, 30, 20, 5, 5, {.padding = {2, 2}, .dilation = {1, 2}}},
    };
}

template <class T>
void check_conv2d_gemm(CaseContext& ctx) {
    std::size_t index = 0;
    for (Problem const& p : gemm_problems())
        if (fits(ctx, p)) run_problem<T>(ctx, p, index++);
    run_problem<T>(ctx, {1, 16, 6, 7, 16, 3, 3, {.padding = {1, 1}}, true}, index, true);
}

template <class T>
void check_conv2d_specials(CaseContext& ctx) {
    run_problem<T>(ctx, {1, 3, 6, 7, 4, 3, 3, {.padding = {1, 1}}, true}, 0, true);
    run_problem<T>(ctx, {1, 4, 8, 8, 4, 3, 3, {.padding = {1, 1}, .groups = 4}}, 1, true);
}

// scipy.signal.convolve2d(image, kernel, mode): the full convolution full[y, x] =
// Σ image[y − a, x − b]·kernel[a, b], cropped for `same` to the image's size from row (KH − 1)/2
// and for `valid` to where the kernel lies inside (the operands swapped when the kernel is larger).
Reference convolve_reference(std::vector<double> image, std::size_t h, std::size_t w, std::vector<double> kernel,
                             std::size_t kh, std::size_t kw, ConvolveMode mode, std::size_t& oh, std::size_t& ow) {
    if (mode == ConvolveMode::valid && kh >= h && kw >= w && (kh > h || kw > w)) {
        std::swap(image, kernel);
        std::swap(h, kh);
        std::swap(w, kw);
    }
    std::size_t y0 = 0, x0 = 0;
    oh = h + kh - 1;
    ow = w + kw - 1;
    if (mode == ConvolveMode::same) y0 = (kh - 1) / 2, x0 = (kw - 1) / 2, oh = h, ow = w;
    if (mode == ConvolveMode::valid) y0 = kh - 1, x0 = kw - 1, oh = h - kh + 1, ow = w - kw + 1;
    Reference r{std::vector<double>(oh * ow), std::vector<double>(oh * ow)};
    for (std::size_t y = 0; y < oh; ++y)
        for (std::size_t x = 0; x < ow; ++x)
            for (std::size_t a = 0; a < kh; ++a)
                for (std::size_t b = 0; b < kw; ++b) {
                    auto const iy = static_cast<std::ptrdiff_t>(y + y0) - static_cast<std::ptrdiff_t>(a);
                    auto const ix = static_cast<std::ptrdiff_t>(x + x0) - static_cast<std::ptrdiff_t>(b);
                    if (iy < 0 || ix < 0 || iy >= static_cast<std::ptrdiff_t>(h) ||
                        ix >= static_cast<std::ptrdiff_t>(w))
                        continue;
                    double const t =
                        image[static_cast<std::size_t>(iy) * w + static_cast<std::size_t>(ix)] * kernel[a * kw + b];
                    r.value[y * ow + x] += t;
                    r.magnitude[y * ow + x] += std::abs(t);
                }
    return r;
}

template <class T>
void check_convolve2d(CaseContext& ctx) {
    struct Sizes {
        std::size_t h, w, kh, kw;
    };
    std::size_t index = 0;
    for (Sizes const s : {Sizes{7, 9, 3, 3}, Sizes{6, 8, 4, 2}, Sizes{5, 5, 1, 1}, Sizes{9, 7, 2, 5}, Sizes{3, 4, 5, 6},
                          Sizes{12, 11, 6, 4}})
        for (ConvolveMode mode : {ConvolveMode::full, ConvolveMode::same, ConvolveMode::valid}) {
            SCOPED_TRACE("image [" + std::to_string(s.h) + "," + std::to_string(s.w) + "] kernel [" +
                         std::to_string(s.kh) + "," + std::to_string(s.kw) + "] mode " +
                         std::to_string(static_cast<int>(mode)));
            std::vector<T> const image = as<T>(ctx.values(s.h * s.w, {-1, 1}, Specials::none));
            std::vector<T> const kernel = as<T>(ctx.values(s.kh * s.kw, {-1, 1}, Specials::none));
            std::size_t oh = 0, ow = 0;
            Reference const want = convolve_reference(exact(image), s.h, s.w, exact(kernel), s.kh, s.kw, mode, oh, ow);
            auto const i = [](std::size_t v) { return static_cast<std::int64_t>(v); };
            ctx.attempt([&] {
                Tensor<T> const got = convolve2d(ctx.input(image, Shape{i(s.h), i(s.w)}, index % 2),
                                                 ctx.input(kernel, Shape{i(s.kh), i(s.kw)}), mode);
                ASSERT_EQ(got.shape(), (Shape{i(oh), i(ow)}));
                Guarded<T> out = ctx.output<T>(got.shape());
                copy_into(got, out.tensor());
                expect_convolution(ctx, out, want, std::min(s.h, s.kh) * std::min(s.w, s.kw));
            });
            ++index;
        }
}

template <class T>
void add_cases(std::vector<OpCase>& c, std::string const& type) {
    c.push_back({"conv2d_" + type, Op::conv2d, dtype_of<T>, check_conv2d<T>});
    c.push_back({"conv2d_specials_" + type, Op::conv2d, dtype_of<T>, check_conv2d_specials<T>});
    c.push_back({"conv2d_channels_" + type, Op::conv2d, dtype_of<T>, check_conv2d_gemm<T>});
    c.push_back({"convolve2d_" + type, Op::conv2d, dtype_of<T>, check_convolve2d<T>});
}

std::vector<OpCase> cases() {
    std::vector<OpCase> c;
    add_cases<float>(c, "f32");
    add_cases<half>(c, "f16");
    add_cases<bfloat16>(c, "bf16");
    return c;
}

CaseRegistration const registration(cases());

}  // namespace
}  // namespace rayo::test::ops
