// The unary and binary families at f32, f16 and bf16: every op on every shape of
// elementwise_shapes(), on views whose offsets take each backend's vector and scalar paths, with
// special values mixed in; the returning form and in place; and, for the transcendentals, a dense
// sweep of their documented range (for f16 and bf16, every value of the type in it). 16-bit
// inputs are random floats rounded to the type; the float64 reference is computed from the rounded
// inputs and rounded to the type before the comparison.
#include "ops/harness.hpp"
#include "ops/references.hpp"

#include <cmath>
#include <limits>

namespace rayo::test::ops {
namespace {

constexpr float fmax = std::numeric_limits<float>::max();

// Where an input and an output view start (elements into their allocations): inputs start at
// `in`, outputs guard_elements + `out` (67 + out) elements in, so {0, 1} puts both on 16-byte
// boundaries (the vector paths), {1, 2} both 4 bytes past one, {1, 3} at different alignments.
struct Layout {
    std::size_t in, out;
};
constexpr Layout layouts[] = {{0, 1}, {1, 2}, {1, 3}};

struct UnaryOp {
    Op op;
    float a, b;  // the op's parameters
    double (*reference)(double x, float a, float b);
    Range range;                 // of the random inputs
    std::optional<Range> sweep;  // the documented range of a transcendental, swept densely
};

std::vector<UnaryOp> unary_ops() {
    constexpr float max = fmax;
    return {
        {Op::relu, 0, 0, [](double x, float, float) { return x < 0 ? 0.0 : x; }, {-4, 4}, {}},
        {Op::leaky_relu, 0.1f, 0, [](double x, float a, float) { return x < 0 ? x * double(a) : x; }, {-4, 4}, {}},
        {Op::elu,
         0.7f,
         0,
         [](double x, float a, float) { return x > 0 ? x : double(a) * std::expm1(x); },
         {-8, 4},
         Range{-max, max}},
        {Op::sigmoid, 0, 0, [](double x, float, float) { return sigmoid_ref(x); }, {-20, 20}, Range{-max, max}},
        {Op::tanh, 0, 0, [](double x, float, float) { return std::tanh(x); }, {-10, 10}, Range{-max, max}},
        {Op::silu, 0, 0, [](double x, float, float) { return silu_ref(x); }, {-20, 20}, Range{-80, max}},
        {Op::gelu, 0, 0, [](double x, float, float) { return gelu_ref(x); }, {-16, 16}, Range{-10, max}},
        {Op::gelu_tanh, 0, 0, [](double x, float, float) { return gelu_tanh_ref(x); }, {-9, 9}, Range{-10, max}},
        {Op::clip,
         -1.5f,
         2.5f,
         [](double x, float lo, float hi) { return std::min(std::max(x, double(lo)), double(hi)); },
         {-4, 4},
         {}},
        {Op::exp, 0, 0, [](double x, float, float) { return std::exp(x); }, {-80, 80}, Range{-max, max}},
        {Op::log, 0, 0, [](double x, float, float) { return std::log(x); }, {1e-3f, 1e3f}, Range{0, max}},
        {Op::sqrt, 0, 0, [](double x, float, float) { return std::sqrt(x); }, {0, 100}, {}},
        {Op::abs, 0, 0, [](double x, float, float) { return std::abs(x); }, {-4, 4}, {}},
        {Op::neg, 0, 0, [](double x, float, float) { return -x; }, {-4, 4}, {}},
    };
}

template <class T>
void check_unary(CaseContext& ctx, UnaryOp const& u) {
    auto run = [&](std::vector<float> const& values, Shape const& shape, Layout layout) {
        std::vector<T> const stored = rounded_to<T>(values);
        std::vector<float> const in(stored.begin(), stored.end());
        Guarded<T> out = ctx.output<T>(shape, layout.out);
        unary_into(u.op, ctx.input(stored, shape, layout.in), u.a, u.b, out.tensor());
        ctx.expect_close(
            out, {.want = [&](std::size_t i) { return u.reference(in[i], u.a, u.b); },
                  .describe = [&](std::size_t i) { return std::string(to_string(u.op)) + "(" + show(in[i]) + ")"; },
                  .want_flushed = [&](std::size_t i) { return u.reference(flush(in[i]), u.a, u.b); }});
    };
    std::vector<Shape> const shapes = ctx.shapes(elementwise_shapes());
    for (std::size_t s = 0; s < shapes.size(); ++s) {
        SCOPED_TRACE("shape " + shapes[s].to_string());
        run(ctx.values(shapes[s].numel(), u.range), shapes[s], layouts[s % std::size(layouts)]);
    }
    if (u.sweep) {
        SCOPED_TRACE("sweep");
        std::vector<float> const in = std::is_same_v<T, float>
                                          ? ctx.sweep(u.sweep->lo, u.sweep->hi, std::size_t{1} << 22)
                                          : ctx.sweep_all_of(dtype_of<T>, u.sweep->lo, u.sweep->hi);
        run(in, Shape{in.size()}, layouts[0]);
    }
    // The returning form, and in place.
    std::vector<T> const in = rounded_to<T>(ctx.values(1001, u.range));
    Tensor<T> x = ctx.input(in, Shape{7, 143});
    std::vector<T> const returned = unary(u.op, x, u.a, u.b).to_vector();
    unary_into(u.op, x, u.a, u.b, x);
    std::vector<T> const in_place = x.to_vector();
    for (std::size_t i = 0; i < in.size(); ++i)
        EXPECT_TRUE(same_or_both_nan(returned[i], in_place[i])) << "in place and returned differ at " << show(in[i]);
}

struct BinaryOp {
    Op op;
    double (*reference)(double a, double b);
    Range range;
    // The special values among a's (b always has them all).
    Specials a_specials = Specials::all;
};

// NaN if either is NaN; +0 is the larger of the zeros.
double maximum_ref(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
    if (a == b) return std::signbit(a) ? b : a;
    return a > b ? a : b;
}
double minimum_ref(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
    if (a == b) return std::signbit(a) ? a : b;
    return a < b ? a : b;
}

std::vector<BinaryOp> binary_ops() {
    return {{Op::add, [](double a, double b) { return a + b; }, {-4, 4}},
            {Op::sub, [](double a, double b) { return a - b; }, {-4, 4}},
            {Op::mul, [](double a, double b) { return a * b; }, {-4, 4}},
            {Op::div, [](double a, double b) { return a / b; }, {0.5f, 4}},
            {Op::maximum, maximum_ref, {-4, 4}},
            {Op::minimum, minimum_ref, {-4, 4}},
            // silu(a) is rounded to f32 before the product; where it is subnormal (a tiny or below
            // -87) its few bits would be scaled by b, so a stays a normal value of [-20, 20].
            {Op::swiglu, [](double a, double b) { return silu_ref(a) * b; }, {-20, 20}, Specials::none}};
}

template <class T>
void check_binary(CaseContext& ctx, BinaryOp const& b, bool scalar) {
    float const s = 0.7f;
    std::vector<Shape> const shapes = ctx.shapes(elementwise_shapes());
    for (std::size_t i = 0; i < shapes.size(); ++i) {
        Shape const& shape = shapes[i];
        SCOPED_TRACE("shape " + shape.to_string());
        Layout const layout = layouts[i % std::size(layouts)];
        std::vector<T> const at = rounded_to<T>(ctx.values(shape.numel(), b.range, b.a_specials)),
                             bt = rounded_to<T>(ctx.values(shape.numel(), b.range));
        std::vector<float> const av(at.begin(), at.end()), bv(bt.begin(), bt.end());
        Guarded<T> out = ctx.output<T>(shape, layout.out);
        Tensor<T> const a = ctx.input(at, shape, layout.in);
        if (scalar)
            binary_into(b.op, a, s, out.tensor());
        else
            binary_into(b.op, a, ctx.input(bt, shape, layout.in), out.tensor());
        auto rhs = [&](std::size_t e) { return scalar ? s : bv[e]; };
        ctx.expect_close(
            out,
            {.want = [&](std::size_t e) { return b.reference(av[e], rhs(e)); },
             .describe =
                 [&](std::size_t e) { return show(av[e]) + " " + std::string(to_string(b.op)) + " " + show(rhs(e)); },
             .want_flushed = [&](std::size_t e) { return b.reference(flush(av[e]), flush(rhs(e))); }});
    }
    // In place: a op= b.
    std::vector<T> const av = rounded_to<T>(ctx.values(999, b.range)), bv = rounded_to<T>(ctx.values(999, b.range));
    Tensor<T> a = ctx.input(av, Shape{999}), rhs = ctx.input(bv, Shape{999});
    std::vector<T> const want = (scalar ? binary(b.op, a, s) : binary(b.op, a, rhs)).to_vector();
    if (scalar)
        binary_into(b.op, a, s, a);
    else
        binary_into(b.op, a, rhs, a);
    std::vector<T> const got = a.to_vector();
    for (std::size_t e = 0; e < got.size(); ++e)
        EXPECT_TRUE(same_or_both_nan(got[e], want[e])) << "in place differs at " << e;
}

// The index into `from` (a shape broadcasting to `to`) of element e of `to`.
std::size_t broadcast_index(Shape const& from, Shape const& to, std::size_t e) {
    std::size_t index = 0, stride = 1;
    for (std::size_t j = 0; j < to.rank(); ++j) {
        auto const len = static_cast<std::size_t>(to[to.rank() - 1 - j]);
        std::size_t const coord = e % len;
        e /= len;
        if (j < from.rank()) {
            auto const from_len = static_cast<std::size_t>(from[from.rank() - 1 - j]);
            if (from_len != 1) index += coord * stride;
            stride *= from_len;
        }
    }
    return index;
}

// a op b with NumPy broadcasting: a row operand, a column, both sides repeating, the left operand
// repeating, ranks up to 8, and 0-sized results; the returning form and in place into a.
template <class T>
void check_broadcast(CaseContext& ctx, BinaryOp const& b) {
    struct Pair {
        Shape a, b;
    };
    std::vector<Pair> const pairs = {
        {Shape{3, 5}, Shape{5}},
        {Shape{257, 1031}, Shape{1031}},
        {Shape{64, 4097}, Shape{64, 1}},
        {Shape{2, 1, 7}, Shape{1, 9, 7}},
        {Shape{33}, Shape{6, 33}},
        {Shape{1}, Shape{5, 7}},
        {Shape{5, 7}, Shape{}},
        {Shape{3, 1, 5, 1}, Shape{1, 4, 1, 6}},
        {Shape{0, 3}, Shape{3}},
        {Shape{2, 3, 2, 3, 2, 3, 2, 5}, Shape{1, 3, 1, 3, 1, 3, 1, 5}},
        {Shape{4, 1}, Shape{1, 1}},
        // Rows that are a multiple of 4 long (the GPUs' vec4 paths), at aligned and unaligned offsets.
        {Shape{33, 64}, Shape{64}},
        {Shape{48, 1}, Shape{48, 256}},
        {Shape{7, 1, 12}, Shape{1, 5, 12}},
        {Shape{16, 8}, Shape{8}},
        {Shape{16, 1}, Shape{16, 8}},
        {Shape{3, 4}, Shape{3, 1}},
    };
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        Pair const& p = pairs[i];
        Shape const shape = binary(b.op, Tensor<float>::zeros(p.a), Tensor<float>::zeros(p.b)).shape();
        if (!ctx.fits(shape.numel())) continue;
        SCOPED_TRACE(p.a.to_string() + " " + std::string(to_string(b.op)) + " " + p.b.to_string());
        Layout const layout = layouts[i % std::size(layouts)];
        std::vector<T> const at = rounded_to<T>(ctx.values(p.a.numel(), b.range, b.a_specials)),
                             bt = rounded_to<T>(ctx.values(p.b.numel(), b.range));
        std::vector<float> const av(at.begin(), at.end()), bv(bt.begin(), bt.end());
        Tensor<T> const a = ctx.input(at, p.a, layout.in), rhs = ctx.input(bt, p.b, layout.in + 1);
        Guarded<T> out = ctx.output<T>(shape, layout.out);
        binary_into(b.op, a, rhs, out.tensor());
        auto lhs_at = [&](std::size_t e) { return av[broadcast_index(p.a, shape, e)]; };
        auto rhs_at = [&](std::size_t e) { return bv[broadcast_index(p.b, shape, e)]; };
        ctx.expect_close(
            out, {.want = [&](std::size_t e) { return b.reference(lhs_at(e), rhs_at(e)); },
                  .describe =
                      [&](std::size_t e) {
                          return show(lhs_at(e)) + " " + std::string(to_string(b.op)) + " " + show(rhs_at(e));
                      },
                  .want_flushed = [&](std::size_t e) { return b.reference(flush(lhs_at(e)), flush(rhs_at(e))); }});
        std::vector<T> const got = out.values(), returned = binary(b.op, a, rhs).to_vector();
        for (std::size_t e = 0; e < got.size(); ++e)
            ASSERT_TRUE(same_or_both_nan(got[e], returned[e])) << "returned form differs at " << e;
        if (p.a == shape) {  // in place: a op= b
            Tensor<T> x = ctx.input(at, p.a, layout.in);
            binary_into(b.op, x, rhs, x);
            std::vector<T> const in_place = x.to_vector();
            for (std::size_t e = 0; e < got.size(); ++e)
                ASSERT_TRUE(same_or_both_nan(got[e], in_place[e])) << "in place differs at " << e;
        }
    }
}

template <class T>
void add_cases(std::vector<OpCase>& c) {
    std::string const suffix = dtype_suffix<T>();
    for (UnaryOp const& u : unary_ops())
        c.push_back({std::string(to_string(u.op)) + suffix, u.op, dtype_of<T>,
                     [u](CaseContext& ctx) { check_unary<T>(ctx, u); }});
    for (BinaryOp const& b : binary_ops()) {
        std::string const name(to_string(b.op));
        c.push_back({name + suffix, b.op, dtype_of<T>, [b](CaseContext& ctx) { check_binary<T>(ctx, b, false); }});
        c.push_back(
            {name + "_scalar" + suffix, b.op, dtype_of<T>, [b](CaseContext& ctx) { check_binary<T>(ctx, b, true); }});
        c.push_back(
            {name + "_broadcast" + suffix, b.op, dtype_of<T>, [b](CaseContext& ctx) { check_broadcast<T>(ctx, b); }});
    }
}

CaseRegistration const registration(floating_cases([]<class T>(std::vector<OpCase>& c) { add_cases<T>(c); }));

}  // namespace
}  // namespace rayo::test::ops
