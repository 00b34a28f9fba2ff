// The layout ops (one op::Copy each, or one per input for concat): permute / transpose, expand,
// narrow, concat and copy_into, at every element type, checked element by element (bit for bit)
// against index arithmetic on the host: odd shapes, 0-sized axes, rank 8, inputs at offsets, and a
// KV-cache write into a view of a larger tensor whose other rows must stay as they were.
#include "ops/element_bits.hpp"
#include "ops/harness.hpp"

#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>

namespace rayo::test::ops {
namespace {

// Row-major strides of a shape.
std::vector<std::size_t> strides_of(Shape const& s) {
    std::vector<std::size_t> st(s.rank());
    std::size_t run = 1;
    for (std::size_t i = s.rank(); i-- > 0;) {
        st[i] = run;
        run *= static_cast<std::size_t>(s[i]);
    }
    return st;
}

// Element e of `shape` as coordinates.
std::vector<std::size_t> coordinates(Shape const& shape, std::size_t e) {
    std::vector<std::size_t> c(shape.rank());
    for (std::size_t i = shape.rank(); i-- > 0;) {
        c[i] = e % static_cast<std::size_t>(shape[i]);
        e /= static_cast<std::size_t>(shape[i]);
    }
    return c;
}

template <class T>
void check_permute(CaseContext& ctx) {
    std::mt19937 rng(ctx.seed());
    struct Case {
        Shape shape;
        std::vector<int> dims;
    };
    std::vector<Case> const cases = {{Shape{3, 5}, {1, 0}},
                                     {Shape{2, 3, 4}, {2, 0, 1}},
                                     {Shape{4097, 3}, {1, 0}},
                                     {Shape{5, 1, 7, 2}, {3, 1, 0, 2}},
                                     {Shape{0, 3}, {1, 0}},
                                     {Shape{65, 130}, {-1, 0}},
                                     {Shape{2, 1, 2, 3, 1, 2, 2, 3}, {7, 6, 5, 4, 3, 2, 1, 0}},
                                     {Shape{}, {}},
                                     // A batch of transpositions (the GPUs' tiled path), tiles cut at both edges.
                                     {Shape{3, 37, 70}, {0, 2, 1}},
                                     {Shape{64, 96}, {1, 0}}};
    for (std::size_t k = 0; k < cases.size(); ++k) {
        Case const& c = cases[k];
        SCOPED_TRACE("permute " + c.shape.to_string());
        std::vector<T> const in = random_elements<T>(c.shape.numel(), rng);
        Tensor<T> const y = permute(ctx.input(in, c.shape, k % 2), c.dims);
        std::vector<std::size_t> const st = strides_of(c.shape);
        std::vector<std::size_t> axes;
        for (int d : c.dims) axes.push_back(static_cast<std::size_t>(d < 0 ? d + static_cast<int>(c.shape.rank()) : d));
        expect_elements<T>(
            ctx, y.to_vector(), c.shape.numel(),
            [&](std::size_t e) {
                std::vector<std::size_t> const at = coordinates(y.shape(), e);
                std::size_t index = 0;
                for (std::size_t i = 0; i < at.size(); ++i) index += at[i] * st[axes[i]];
                return in[index];
            },
            "permute");
    }
    std::vector<T> const in = random_elements<T>(6 * 7 * 8, rng);
    Tensor<T> const x = ctx.input(in, Shape{6, 7, 8});
    std::vector<T> const a = transpose(x, 0, -1).to_vector(), b = permute(x, {2, 1, 0}).to_vector();
    expect_elements<T>(
        ctx, a, b.size(), [&](std::size_t e) { return b[e]; }, "transpose");
    // Into a guarded output.
    Guarded<T> out = ctx.output<T>(Shape{8, 7, 6}, 1);
    permute_into(x, {2, 1, 0}, out.tensor());
    expect_elements<T>(
        ctx, out.values(), b.size(), [&](std::size_t e) { return b[e]; }, "permute_into");
    ctx.expect_guards(out);
}

template <class T>
void check_expand(CaseContext& ctx) {
    std::mt19937 rng(ctx.seed());
    struct Case {
        Shape from, to;
    };
    std::vector<Case> const cases = {{Shape{3, 1}, Shape{3, 5}}, {Shape{5}, Shape{4, 5}},
                                     {Shape{1}, Shape{2, 3, 4}}, {Shape{2, 1, 3}, Shape{2, 4, 3}},
                                     {Shape{3}, Shape{0, 3}},    {Shape{1, 1031}, Shape{9, 1031}}};
    for (std::size_t k = 0; k < cases.size(); ++k) {
        Case const& c = cases[k];
        SCOPED_TRACE("expand " + c.from.to_string() + " to " + c.to.to_string());
        std::vector<T> const in = random_elements<T>(c.from.numel(), rng);
        Tensor<T> const y = expand(ctx.input(in, c.from, k % 2), c.to);
        EXPECT_EQ(y.shape(), c.to);
        std::vector<std::size_t> const st = strides_of(c.from);
        std::size_t const lead = c.to.rank() - c.from.rank();
        expect_elements<T>(
            ctx, y.to_vector(), c.to.numel(),
            [&](std::size_t e) {
                std::vector<std::size_t> const at = coordinates(c.to, e);
                std::size_t index = 0;
                for (std::size_t i = 0; i < c.from.rank(); ++i)
                    if (c.from[i] != 1) index += at[lead + i] * st[i];
                return in[index];
            },
            "expand");
    }
}

template <class T>
void check_narrow(CaseContext& ctx) {
    std::mt19937 rng(ctx.seed());
    struct Case {
        Shape shape;
        int axis;
        std::int64_t start, length;
    };
    std::vector<Case> const cases = {{Shape{7, 9}, 1, 2, 5},
                                     {Shape{7, 9}, 0, 3, 4},
                                     {Shape{4, 6, 5}, -1, 4, 1},
                                     {Shape{4, 6, 5}, 1, 6, 0},
                                     {Shape{3, 1030}, 1, 1, 1027}};
    for (std::size_t k = 0; k < cases.size(); ++k) {
        Case const& c = cases[k];
        SCOPED_TRACE("narrow " + c.shape.to_string() + " axis " + std::to_string(c.axis));
        std::vector<T> const in = random_elements<T>(c.shape.numel(), rng);
        Tensor<T> const y = narrow(ctx.input(in, c.shape, k % 2), c.axis, c.start, c.length);
        std::size_t const a = c.shape.axis(c.axis);
        std::vector<std::size_t> const st = strides_of(c.shape);
        expect_elements<T>(
            ctx, y.to_vector(), y.numel(),
            [&](std::size_t e) {
                std::vector<std::size_t> at = coordinates(y.shape(), e);
                at[a] += static_cast<std::size_t>(c.start);
                std::size_t index = 0;
                for (std::size_t i = 0; i < at.size(); ++i) index += at[i] * st[i];
                return in[index];
            },
            "narrow");
    }
}

template <class T>
void check_concat(CaseContext& ctx) {
    std::mt19937 rng(ctx.seed());
    struct Case {
        std::vector<Shape> parts;
        int axis;
    };
    std::vector<Case> const cases = {{{Shape{2, 3}, Shape{4, 3}}, 0},
                                     {{Shape{3, 2}, Shape{3, 5}, Shape{3, 1}}, 1},
                                     {{Shape{2, 0, 3}, Shape{2, 2, 3}}, 1},
                                     {{Shape{5, 7, 129}, Shape{5, 7, 3}}, -1}};
    for (Case const& c : cases) {
        SCOPED_TRACE("concat along " + std::to_string(c.axis));
        std::vector<std::vector<T>> values;
        std::vector<Tensor<T>> tensors;
        for (std::size_t p = 0; p < c.parts.size(); ++p) {
            values.push_back(random_elements<T>(c.parts[p].numel(), rng));
            tensors.push_back(ctx.input(values.back(), c.parts[p], p % 2));
        }
        Tensor<T> const y = concat(tensors, c.axis);
        std::size_t const a = y.shape().axis(c.axis);
        expect_elements<T>(
            ctx, y.to_vector(), y.numel(),
            [&](std::size_t e) {
                std::vector<std::size_t> at = coordinates(y.shape(), e);
                std::size_t p = 0;
                while (at[a] >= static_cast<std::size_t>(c.parts[p][a]))
                    at[a] -= static_cast<std::size_t>(c.parts[p++][a]);
                std::vector<std::size_t> const st = strides_of(c.parts[p]);
                std::size_t index = 0;
                for (std::size_t i = 0; i < at.size(); ++i) index += at[i] * st[i];
                return values[p][index];
            },
            "concat");
    }
}

// One decoding step's keys written into row `pos` of a preallocated cache [positions, heads, dim].
template <class T>
void check_copy_into(CaseContext& ctx) {
    std::mt19937 rng(ctx.seed());
    Shape const cache_shape{16, 2, 40};
    std::vector<T> const before = random_elements<T>(cache_shape.numel(), rng);
    Tensor<T> const cache = ctx.input(before, cache_shape, 0);
    std::vector<T> const step = random_elements<T>(2 * 40, rng);
    std::int64_t const pos = 5;
    copy_into(ctx.input(step, Shape{1, 2, 40}), cache.slice(pos, pos + 1));
    std::size_t const row = 2 * 40;
    expect_elements<T>(
        ctx, cache.to_vector(), before.size(),
        [&](std::size_t e) { return e / row == static_cast<std::size_t>(pos) ? step[e % row] : before[e]; },
        "KV cache");
    // Into a guarded view, from an input at an odd offset.
    Guarded<T> out = ctx.output<T>(Shape{33, 7}, 1);
    std::vector<T> const src = random_elements<T>(33 * 7, rng);
    copy_into(ctx.input(src, Shape{33, 7}, 1), out.tensor());
    expect_elements<T>(
        ctx, out.values(), src.size(), [&](std::size_t e) { return src[e]; }, "copy_into");
    ctx.expect_guards(out);
}

template <class T>
void add_cases(std::vector<OpCase>& c, std::string const& type) {
    c.push_back({"permute_" + type, Op::copy, dtype_of<T>, check_permute<T>});
    c.push_back({"expand_" + type, Op::copy, dtype_of<T>, check_expand<T>});
    c.push_back({"narrow_" + type, Op::copy, dtype_of<T>, check_narrow<T>});
    c.push_back({"concat_" + type, Op::copy, dtype_of<T>, check_concat<T>});
    c.push_back({"copy_into_" + type, Op::copy, dtype_of<T>, check_copy_into<T>});
}

std::vector<OpCase> cases() {
    std::vector<OpCase> c;
    for_each_castable_type([&]<class T>(std::string const& type) { add_cases<T>(c, type); });
    return c;
}

CaseRegistration const registration(cases());

}  // namespace
}  // namespace rayo::test::ops
