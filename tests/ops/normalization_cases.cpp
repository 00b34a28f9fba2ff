// The normalization family over the last axis: layer_norm and rms_norm, plain and with gamma (and
// beta), on every form of the row shapes; x, gamma, beta and out as views at offsets (vector and
// scalar paths); rows offset by 1000 (the mean's cancellation); special values; and in place; at
// f32, f16 and bf16 (x, gamma and beta random floats rounded to the type, the reference computed
// from them; huge values, past f16's range, at f32 and bf16).
#include "ops/harness.hpp"
#include "ops/references.hpp"
#include "ops/row_shapes.hpp"

#include <cmath>

namespace rayo::test::ops {
namespace {

constexpr float layer_norm_eps = 1e-5f, rms_norm_eps = 1e-6f;

template <class T>
void check(CaseContext& ctx, Op op, bool affine) {
    bool const layer = op == Op::layer_norm;
    float const eps = layer ? layer_norm_eps : rms_norm_eps;
    auto run = [&](std::vector<float> const& values, Shape const& shape, std::size_t offset) {
        SCOPED_TRACE("shape " + shape.to_string() + ", offset " + std::to_string(offset));
        std::size_t const cols = static_cast<std::size_t>(shape[shape.rank() - 1]);
        std::vector<T> const xt = rounded_to<T>(values), gt = rounded_to<T>(ctx.values(cols, {-2, 2}, Specials::none)),
                             bt = rounded_to<T>(ctx.values(cols, {-1, 1}, Specials::none));
        std::vector<float> const v(xt.begin(), xt.end()), gv(gt.begin(), gt.end()), bv(bt.begin(), bt.end());
        Guarded<T> out = ctx.output<T>(shape, offset + 1);
        Tensor<T> const x = ctx.input(xt, shape, offset);
        Tensor<T> const g = ctx.input(gt, Shape{cols}, offset + 2), b = ctx.input(bt, Shape{cols}, 3 * offset);
        if (layer)
            affine ? layer_norm_into(x, g, b, eps, out.tensor()) : layer_norm_into(x, eps, out.tensor());
        else
            affine ? rms_norm_into(x, g, eps, out.tensor()) : rms_norm_into(x, eps, out.tensor());
        std::vector<double> const n = normalised_ref(v, cols, layer, eps);
        auto gamma = [&](std::size_t i) { return affine ? double(gv[i % cols]) : 1.0; };
        auto beta = [&](std::size_t i) { return affine && layer ? double(bv[i % cols]) : 0.0; };
        ctx.expect_close(out, {.want = [&](std::size_t i) { return n[i] * gamma(i) + beta(i); },
                               .describe =
                                   [&](std::size_t i) {
                                       return "row " + std::to_string(i / cols) + ", column " +
                                              std::to_string(i % cols);
                                   },
                               .scale = [&](std::size_t i) { return std::abs(n[i] * gamma(i)) + std::abs(beta(i)); }});
    };
    std::vector<Shape> const shapes = ctx.shapes(row_shapes());
    for (std::size_t s = 0; s < shapes.size(); ++s) {
        if (shapes[s].rank() && shapes[s][shapes[s].rank() - 1] == 0) continue;  // no row to normalise over
        run(ctx.values(shapes[s].numel(), {-6, 9}, Specials::none), shapes[s], s % 3);
    }
    std::vector<float> offset_rows = ctx.values(5 * 777, {-1, 1}, Specials::none);
    for (float& f : offset_rows) f += 1000.0f;
    run(offset_rows, Shape{5, 777}, 1);
    run(ctx.values(6 * 50, {-6, 9}, Specials::ieee), Shape{6, 50}, 0);
    // Huge finite values, whose squares (past ~1.8e19) and sums (past ~1.7e38) overflow a float:
    // every finite row still normalises, [3e19, 1, 2, 3] to about [1.73, -0.58, -0.58, -0.58].
    if constexpr (!std::is_same_v<T, half>) {
        run({3e19f, 1.0f, 2.0f, 3.0f, -3e38f, 3e38f, 3e38f, 1.0f}, Shape{2, 4}, 0);
        for (Shape const& shape : {Shape{3, 50}, Shape{2, 3000}, Shape{1, 70000}}) {
            std::vector<float> v = ctx.values(shape.numel(), {-1, 1}, Specials::none);
            for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::ldexp(v[i], 60 + static_cast<int>(i * 37 % 67));
            run(v, shape, 1);
        }
    }
    // In place.
    std::vector<T> const v = rounded_to<T>(ctx.values(9 * 300, {-6, 9}, Specials::none));
    Tensor<T> x = ctx.input(v, Shape{9, 300});
    std::vector<T> const want = (layer ? layer_norm(x, eps) : rms_norm(x, eps)).to_vector();
    if (layer)
        layer_norm_into(x, eps, x);
    else
        rms_norm_into(x, eps, x);
    EXPECT_EQ(x.to_vector(), want) << "in place differs from the returning form";
}

template <class T>
void add_cases(std::vector<OpCase>& c) {
    for (Op op : {Op::layer_norm, Op::rms_norm})
        for (bool affine : {false, true})
            c.push_back({std::string(to_string(op)) + (affine ? "_affine" : "") + dtype_suffix<T>(), op, dtype_of<T>,
                         [op, affine](CaseContext& ctx) { check<T>(ctx, op, affine); }});
}

CaseRegistration const registration(floating_cases([]<class T>(std::vector<OpCase>& c) { add_cases<T>(c); }));

}  // namespace
}  // namespace rayo::test::ops
