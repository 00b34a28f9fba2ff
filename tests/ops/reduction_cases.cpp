// The reduction family: sum, mean, max, min, argmax, argmin over the whole tensor and over every
// axis (with and without keepdim) of shapes from one element to 2^22, long axes that take the
// backends' two-pass paths, empty axes; few distinct values (ties: the first index wins), rows of
// -inf and ±inf, and NaNs (NaN wins, at its first index); the same bits on every run; and dot. At
// f32, f16 and bf16 inputs (random floats rounded to the type, the reference computed from them),
// with f32 results.
#include "ops/harness.hpp"
#include "ops/references.hpp"

#include <cmath>
#include <limits>
#include <random>

namespace rayo::test::ops {
namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float nan = std::numeric_limits<float>::quiet_NaN();

// Sizes around vector widths and group sizes, and long runs that the GPUs split into parts whose
// partial results a second pass combines.
std::vector<std::size_t> whole_sizes() { return {1, 7, 255, 2049, 4097, 40001, 1000003, std::size_t{1} << 22}; }
std::vector<Shape> axis_shapes() {
    return {Shape{1, 1},    Shape{3, 7},       Shape{64, 1000},   Shape{2, 33333}, Shape{1, 100000}, Shape{100000, 8},
            Shape{5, 3, 7}, Shape{2, 3000, 5}, Shape{5, 300, 64}, Shape{1000, 3},  Shape{300000, 3}, Shape{4, 9, 130}};
}

// Few distinct values (many ties), a row of -inf, a row of ±inf, and NaNs in the third row and
// scattered elsewhere.
std::vector<float> awkward_values(Shape const& shape, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<float> v(shape.numel());
    for (auto& x : v) x = static_cast<float>(static_cast<int>(rng() % 9) - 4);
    std::size_t const cols = static_cast<std::size_t>(shape[1]);
    for (std::size_t i = 0; i < cols; ++i) v[i] = -inf;
    for (std::size_t i = 0; i < cols; ++i) v[cols + i] = i % 3 ? -inf : inf;
    for (std::size_t k = 0; k < 5; ++k) v[rng() % v.size()] = nan;
    v[2 * cols + cols / 2] = nan;
    v[2 * cols + cols - 1] = nan;
    return v;
}

// Runs `op` over `axis` of x (`values` rounded to T; everything when axis < 0) into a guarded output
// and checks it.
template <class T>
void check_reduction(CaseContext& ctx, Op op, std::vector<float> const& values, Shape const& shape, int axis,
                     bool keepdim) {
    SCOPED_TRACE("shape " + shape.to_string() + ", axis " + std::to_string(axis) + (keepdim ? ", keepdim" : ""));
    std::vector<T> const stored = rounded_to<T>(values);
    std::vector<float> const v(stored.begin(), stored.end());
    Tensor<T> const x = ctx.input(stored, shape);
    ReductionReference const r = reduction_ref(v, shape, axis);
    double const n =
        static_cast<double>(axis < 0 ? v.size() : static_cast<std::size_t>(shape[static_cast<std::size_t>(axis)]));
    Shape const out_shape = axis < 0 ? Shape{} : sum(x, axis, keepdim).shape();
    auto where = [&](std::size_t i) { return "output " + std::to_string(i); };
    if (is_arg_reduction(op)) {
        Guarded<std::int64_t> out = ctx.output<std::int64_t>(out_shape);
        if (axis < 0)
            (op == Op::argmax ? argmax_into(x, out.tensor()) : argmin_into(x, out.tensor()));
        else
            (op == Op::argmax ? argmax_into(x, axis, keepdim, out.tensor())
                              : argmin_into(x, axis, keepdim, out.tensor()));
        ctx.expect_equal(out, op == Op::argmax ? r.argmax : r.argmin, where);
        return;
    }
    Guarded<float> out = ctx.output<float>(out_shape);
    using Form = void (*)(Tensor<T> const&, Tensor<float> const&);
    using AxisForm = void (*)(Tensor<T> const&, int, bool, Tensor<float> const&);
    Form const whole = op == Op::sum    ? Form{&sum_into}
                       : op == Op::mean ? Form{&mean_into}
                       : op == Op::max  ? Form{&max_into}
                                        : Form{&min_into};
    AxisForm const along = op == Op::sum    ? AxisForm{&sum_into}
                           : op == Op::mean ? AxisForm{&mean_into}
                           : op == Op::max  ? AxisForm{&max_into}
                                            : AxisForm{&min_into};
    if (axis < 0)
        whole(x, out.tensor());
    else
        along(x, axis, keepdim, out.tensor());
    if (op == Op::max || op == Op::min) {
        ctx.expect_equal(out, op == Op::max ? r.max : r.min, where);
        return;
    }
    bool const is_mean = op == Op::mean;
    ctx.expect_close(out, {.want = [&](std::size_t i) { return is_mean ? r.sum[i] / n : r.sum[i]; },
                           .describe = where,
                           .scale = [&](std::size_t i) { return is_mean ? r.abs_sum[i] / n : r.abs_sum[i]; }});
}

template <class T>
void check(CaseContext& ctx, Op op) {
    auto const check_reduction = rayo::test::ops::check_reduction<T>;
    for (std::size_t n : whole_sizes()) {
        if (!ctx.fits(n)) continue;
        check_reduction(ctx, op, ctx.values(n, {-4, 4}, Specials::none), Shape{n}, -1, false);
    }
    bool keepdim = false;
    for (Shape const& shape : ctx.shapes(axis_shapes())) {
        std::vector<float> const v = ctx.values(shape.numel(), {-100, 100}, Specials::none);
        for (int axis = 0; axis < static_cast<int>(shape.rank()); ++axis, keepdim = !keepdim)
            check_reduction(ctx, op, v, shape, axis, keepdim);
    }
    for (Shape const& shape : ctx.shapes({Shape{64, 1000}, Shape{9, 70001}, Shape{3000, 17}, Shape{3, 40}})) {
        std::vector<float> const v = awkward_values(shape, ctx.seed());
        for (int axis = -1; axis < 2; ++axis) check_reduction(ctx, op, v, shape, axis, false);
    }
    // Special values, scattered (not the float range's edges, whose sum may overflow a float).
    std::vector<float> const specials = ctx.values(5000, {-4, 4}, Specials::ieee);
    check_reduction(ctx, op, specials, Shape{5000}, -1, false);
    check_reduction(ctx, op, specials, Shape{50, 100}, 1, false);
    if (op == Op::sum || op == Op::mean) {
        // Nothing to reduce: a sum is 0, a mean 0/0 (NaN).
        check_reduction(ctx, op, {}, Shape{0}, -1, false);
        check_reduction(ctx, op, {}, Shape{3, 0}, 1, false);
        check_reduction(ctx, op, {}, Shape{0, 4}, 1, true);
        // The same bits on every run, the long sums included.
        std::size_t const n = std::min<std::size_t>(std::size_t{1} << 22, ctx.target().max_elements);
        Tensor<T> const x = ctx.input(rounded_to<T>(ctx.values(n, {-4, 4}, Specials::none)), Shape{n});
        float const first = sum(x).item();
        for (int run = 0; run < 2; ++run)
            EXPECT_EQ(std::bit_cast<std::uint32_t>(sum(x).item()), std::bit_cast<std::uint32_t>(first));
    }
}

template <class T>
void check_dot(CaseContext& ctx) {
    for (std::size_t n :
         {std::size_t{1}, std::size_t{7}, std::size_t{4097}, std::size_t{1000003}, std::size_t{1} << 22}) {
        if (!ctx.fits(n)) continue;
        // Both operands 16-byte aligned, then at different alignments.
        for (std::size_t b_offset : {std::size_t{1}, std::size_t{2}}) {
            SCOPED_TRACE("n " + std::to_string(n) + ", b offset " + std::to_string(b_offset));
            std::vector<T> const at = rounded_to<T>(ctx.values(n, {-4, 4}, Specials::none)),
                                 bt = rounded_to<T>(ctx.values(n, {-4, 4}, Specials::none));
            std::vector<float> const av(at.begin(), at.end()), bv(bt.begin(), bt.end());
            Guarded<float> out = ctx.output<float>(Shape{});
            dot_into(ctx.input(at, Shape{n}, 1), ctx.input(bt, Shape{n}, b_offset), out.tensor());
            double want = 0, scale = 0;
            for (std::size_t i = 0; i < n; ++i) {
                want += double(av[i]) * double(bv[i]);
                scale += std::abs(double(av[i]) * double(bv[i]));
            }
            ctx.expect_close(out, {.want = [&](std::size_t) { return want; },
                                   .describe = [](std::size_t) { return std::string("a·b"); },
                                   .scale = [&](std::size_t) { return scale; }});
        }
    }
}

template <class T>
void add_cases(std::vector<OpCase>& c) {
    std::string const suffix = dtype_suffix<T>();
    for (Op op : {Op::sum, Op::mean, Op::max, Op::min, Op::argmax, Op::argmin})
        c.push_back(
            {std::string(to_string(op)) + suffix, op, dtype_of<T>, [op](CaseContext& ctx) { check<T>(ctx, op); }});
    c.push_back({"dot" + suffix, Op::dot, dtype_of<T>, check_dot<T>});
}

CaseRegistration const registration(floating_cases([]<class T>(std::vector<OpCase>& c) { add_cases<T>(c); }));

}  // namespace
}  // namespace rayo::test::ops
