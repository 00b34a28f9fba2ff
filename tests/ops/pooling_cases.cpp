// max_pool2d and avg_pool2d: square and oblong kernels, strides below, at and above the kernel,
// padding up to half the kernel (avg_pool2d counting the padding in its divisor or not), rank 3
// and 4 images of odd sizes, 0-sized batches and channels, NaN and ±Inf in the images (a NaN makes
// its window's max NaN), at f32, f16 and bf16, against the float64 reference.
#include "ops/harness.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace rayo::test::ops {
namespace {

struct PoolCase {
    Shape shape;  // [N, C, H, W] or [C, H, W]
    std::array<int, 2> kernel;
    std::optional<std::array<int, 2>> stride = {};
    std::array<int, 2> padding = {0, 0};
};

// The window of output (y, x) of one plane: reference max or mean, and Σ|x| · cells / divisor (the
// scale of the f32 sum's error).
struct Window {
    double value, scale;
};

Window reference(Op op, PoolCase const& c, bool count_include_pad, std::vector<float> const& x, std::size_t plane,
                 std::size_t y, std::size_t xo) {
    std::size_t const r = c.shape.rank();
    auto const h = static_cast<std::int64_t>(c.shape[r - 2]), w = static_cast<std::int64_t>(c.shape[r - 1]);
    std::array<int, 2> const stride = c.stride.value_or(c.kernel);
    std::int64_t const y0 = static_cast<std::int64_t>(y) * stride[0] - c.padding[0];
    std::int64_t const x0 = static_cast<std::int64_t>(xo) * stride[1] - c.padding[1];
    double best = -std::numeric_limits<double>::infinity(), sum = 0, magnitude = 0;
    bool nan = false;
    std::size_t inside = 0;
    for (std::int64_t i = y0; i < y0 + c.kernel[0]; ++i)
        for (std::int64_t j = x0; j < x0 + c.kernel[1]; ++j) {
            if (i < 0 || i >= h || j < 0 || j >= w) continue;
            double const v = x[plane * static_cast<std::size_t>(h * w) + static_cast<std::size_t>(i * w + j)];
            nan = nan || std::isnan(v);
            best = std::max(best, v);
            sum += v;
            magnitude += std::abs(v);
            ++inside;
        }
    if (op == Op::max_pool2d) return {nan ? std::numeric_limits<double>::quiet_NaN() : best, 0};
    double const divisor = count_include_pad ? double(c.kernel[0] * c.kernel[1]) : double(inside);
    return {sum / divisor, magnitude * double(inside) / divisor};
}

template <class T>
void run_case(CaseContext& ctx, Op op, PoolCase const& c, bool count_include_pad, Specials specials,
              std::size_t offset) {
    std::array<int, 2> const stride = c.stride.value_or(c.kernel);
    SCOPED_TRACE("x " + c.shape.to_string() + ", kernel (" + std::to_string(c.kernel[0]) + ", " +
                 std::to_string(c.kernel[1]) + "), stride (" + std::to_string(stride[0]) + ", " +
                 std::to_string(stride[1]) + "), padding (" + std::to_string(c.padding[0]) + ", " +
                 std::to_string(c.padding[1]) + ")" + (count_include_pad ? "" : ", padding not counted"));
    std::vector<T> const xt = rounded_to<T>(ctx.values(c.shape.numel(), {-4, 4}, specials));
    std::vector<float> const x(xt.begin(), xt.end());
    std::size_t const r = c.shape.rank();
    std::vector<std::int64_t> dims(c.shape.dims().begin(), c.shape.dims().end());
    dims[r - 2] = (dims[r - 2] + 2 * c.padding[0] - c.kernel[0]) / stride[0] + 1;
    dims[r - 1] = (dims[r - 1] + 2 * c.padding[1] - c.kernel[1]) / stride[1] + 1;
    auto const oh = static_cast<std::size_t>(dims[r - 2]), ow = static_cast<std::size_t>(dims[r - 1]);
    Guarded<T> out = ctx.output<T>(Shape(dims), offset % 3 + 1);
    Pool2dParams const params{
        .kernel = c.kernel, .stride = c.stride, .padding = c.padding, .count_include_pad = count_include_pad};
    Tensor<T> const in = ctx.input(xt, c.shape, offset % 2);
    if (op == Op::max_pool2d)
        max_pool2d_into(in, params, out.tensor());
    else
        avg_pool2d_into(in, params, out.tensor());
    auto at = [&](std::size_t e) { return reference(op, c, count_include_pad, x, e / (oh * ow), e / ow % oh, e % ow); };
    ctx.expect_close(out, {.want = [&](std::size_t e) { return at(e).value; },
                           .describe =
                               [&](std::size_t e) {
                                   return "plane " + std::to_string(e / (oh * ow)) + ", output (" +
                                          std::to_string(e / ow % oh) + ", " + std::to_string(e % ow) + ")";
                               },
                           .scale = [&](std::size_t e) { return at(e).scale; },
                           .magnitude = [&](std::size_t e) { return std::abs(at(e).value); }});
}

std::vector<PoolCase> pool_cases() {
    using P = std::array<int, 2>;
    return {
        {Shape{2, 3, 7, 9}, P{2, 2}},
        {Shape{1, 4, 10, 11}, P{3, 3}, P{2, 2}, P{1, 1}},
        {Shape{3, 5, 6}, P{3, 2}, P{1, 2}, P{1, 0}},
        {Shape{2, 2, 13, 17}, P{5, 4}, P{3, 1}, P{2, 2}},
        {Shape{1, 1, 1, 1}, P{1, 1}},
        {Shape{1, 2, 9, 9}, P{7, 7}, P{1, 1}, P{3, 3}},
        {Shape{2, 3, 5, 8}, P{2, 3}, P{3, 4}, P{1, 1}},
        {Shape{1, 16, 64, 64}, P{2, 2}},
        {Shape{0, 3, 4, 4}, P{2, 2}},
        {Shape{2, 0, 5, 5}, P{3, 3}, P{1, 1}, P{1, 1}},
    };
}

template <class T>
void check_pool(CaseContext& ctx, Op op, bool count_include_pad) {
    std::vector<PoolCase> const cases = pool_cases();
    for (std::size_t k = 0; k < cases.size(); ++k) {
        if (!ctx.fits(cases[k].shape.numel())) continue;
        ctx.attempt([&] { run_case<T>(ctx, op, cases[k], count_include_pad, Specials::none, k); });
    }
    // NaN, ±Inf, ±0 and subnormals in the images.
    for (std::size_t k : {1u, 3u, 6u})
        ctx.attempt([&] { run_case<T>(ctx, op, cases[k], count_include_pad, Specials::ieee, k + 1); });
    // The returning form, with the default parameters (2×2 windows, stride 2).
    std::vector<T> const v = rounded_to<T>(ctx.values(2 * 4 * 5, {-4, 4}, Specials::none));
    Tensor<T> const x = ctx.input(v, Shape{2, 4, 5});
    std::vector<T> const got = (op == Op::max_pool2d ? max_pool2d(x) : avg_pool2d(x)).to_vector();
    ASSERT_EQ(got.size(), 2u * 2 * 2);
    Guarded<T> out = ctx.output<T>(Shape{2, 2, 2});
    if (op == Op::max_pool2d)
        max_pool2d_into(x, {}, out.tensor());
    else
        avg_pool2d_into(x, {}, out.tensor());
    EXPECT_EQ(got, out.values()) << "the returning form differs on " << ctx.target().id;
}

template <class T>
void add_cases(std::vector<OpCase>& c) {
    c.push_back({"max_pool2d" + dtype_suffix<T>(), Op::max_pool2d, dtype_of<T>,
                 [](CaseContext& ctx) { check_pool<T>(ctx, Op::max_pool2d, true); }});
    for (bool include : {true, false})
        c.push_back({std::string("avg_pool2d") + (include ? "" : "_exclude_pad") + dtype_suffix<T>(), Op::avg_pool2d,
                     dtype_of<T>, [include](CaseContext& ctx) { check_pool<T>(ctx, Op::avg_pool2d, include); }});
}

CaseRegistration const registration(floating_cases([]<class T>(std::vector<OpCase>& c) { add_cases<T>(c); }));

}  // namespace
}  // namespace rayo::test::ops
