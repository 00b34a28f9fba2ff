// rope: both pair styles, with and without frequency factors, the whole head or a prefix of it,
// positions shared by the leading axes or one per token (up to ±10^4, negative ones included),
// odd head counts and head sizes, 0-sized tensors, NaN and ±Inf in x (small positions, so that the
// signs of the cosines and sines are unambiguous), in place, at f32, f16 and bf16, against the
// rotation computed in float64. The error is stated relative to the pair's magnitude: the angle's
// own error (the GPUs compute it in f32: a few ulp of the angle) and the rounding of the result.
#include "ops/harness.hpp"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

namespace rayo::test::ops {
namespace {

struct RopeCase {
    Shape shape;     // [..., seq, heads, head_dim]
    int n_dims = 0;  // 0: the whole head
    bool per_token = false;
    std::int32_t max_position = 10000;
    float freq_base = 10000.0f, freq_scale = 1.0f;
};

// The problem's geometry.
struct Geometry {
    std::size_t tokens = 1, seq = 0, heads = 0, head_dim = 0, n_dims = 0;
};

Geometry geometry(RopeCase const& c) {
    Geometry g;
    std::size_t const r = c.shape.rank();
    g.head_dim = static_cast<std::size_t>(c.shape[r - 1]);
    g.heads = static_cast<std::size_t>(c.shape[r - 2]);
    g.seq = static_cast<std::size_t>(c.shape[r - 3]);
    for (std::size_t i = 0; i + 2 < r; ++i) g.tokens *= static_cast<std::size_t>(c.shape[i]);
    g.n_dims = c.n_dims ? static_cast<std::size_t>(c.n_dims) : g.head_dim;
    return g;
}

// The float64 rotation of element e: its value, its pair's magnitude and the pair's angle.
struct Rotated {
    double value, magnitude, angle;
};

Rotated reference(Geometry const& g, RopeStyle style, std::vector<float> const& x,
                  std::vector<std::int32_t> const& positions, std::vector<float> const& factors, float base,
                  float scale, std::size_t e) {
    std::size_t const d = e % g.head_dim, t = e / (g.heads * g.head_dim);
    if (d >= g.n_dims) return {x[e], std::abs(double(x[e])), 0.0};
    std::size_t const half = g.n_dims / 2;
    bool const halves = style == RopeStyle::halves;
    std::size_t const p = halves ? d % half : d / 2;
    bool const first = halves ? d < half : d % 2 == 0;
    std::size_t const i = halves ? p : 2 * p, j = halves ? p + half : 2 * p + 1;
    std::size_t const head = e - d;
    double const a = x[head + i], b = x[head + j];
    double const factor = factors.empty() ? 1.0 : double(factors[p]);
    double const theta = double(scale) * std::pow(double(base), -2.0 * double(p) / double(g.n_dims)) / factor;
    double const angle = double(positions[t % positions.size()]) * theta;
    double const c = std::cos(angle), s = std::sin(angle);
    double const value = first ? a * c - b * s : a * s + b * c;
    return {value, std::hypot(a, b), std::abs(angle)};
}

template <class T>
void run_case(CaseContext& ctx, RopeCase const& c, RopeStyle style, bool with_factors, Specials specials,
              std::size_t offset) {
    Geometry const g = geometry(c);
    SCOPED_TRACE("x " + c.shape.to_string() + ", n_dims " + std::to_string(g.n_dims) +
                 (style == RopeStyle::halves ? ", halves" : ", adjacent") + (with_factors ? ", factors" : "") +
                 (c.per_token ? ", a position per token" : ""));
    std::mt19937 rng(ctx.seed() + static_cast<std::uint32_t>(offset));
    std::vector<T> const xt = rounded_to<T>(ctx.values(c.shape.numel(), {-4, 4}, specials));
    std::vector<float> const x(xt.begin(), xt.end());
    std::size_t const count = c.per_token ? g.tokens : g.seq;
    std::uniform_int_distribution<std::int32_t> pick(-c.max_position, c.max_position);
    std::vector<std::int32_t> positions(count);
    for (auto& p : positions) p = pick(rng);
    if (count > 1) positions[0] = 0;
    if (count > 2) positions[1] = c.max_position;
    std::vector<float> factors;
    RopeParams params{
        .style = style, .n_dims = c.n_dims, .freq_base = c.freq_base, .freq_scale = c.freq_scale, .freq_factors = {}};
    if (with_factors) {
        factors = ctx.values(g.n_dims / 2, {1, 8}, Specials::none);
        params.freq_factors = ctx.input(factors, Shape{static_cast<std::int64_t>(factors.size())}, offset % 2);
    }
    Shape const pshape = c.per_token && c.shape.rank() > 3
                             ? Shape(std::vector<std::int64_t>(c.shape.dims().begin(), c.shape.dims().end() - 2))
                             : Shape{static_cast<std::int64_t>(count)};
    Guarded<T> out = ctx.output<T>(c.shape, offset % 3 + 1);
    rope_into(ctx.input(xt, c.shape, offset % 2), ctx.input(positions, pshape, (offset + 1) % 2), params, out.tensor());
    auto at = [&](std::size_t e) { return reference(g, style, x, positions, factors, c.freq_base, c.freq_scale, e); };
    ctx.expect_close(out, {.want = [&](std::size_t e) { return at(e).value; },
                           .describe =
                               [&](std::size_t e) {
                                   std::size_t const t = e / (g.heads * g.head_dim);
                                   return "token " + std::to_string(t) + " (position " +
                                          std::to_string(positions[t % count]) + "), head " +
                                          std::to_string(e / g.head_dim % g.heads) + ", dim " +
                                          std::to_string(e % g.head_dim) + ", x = " + show(x[e]);
                               },
                           .scale = [&](std::size_t e) { return at(e).magnitude * at(e).angle; },
                           .magnitude = [&](std::size_t e) { return at(e).magnitude; }});
}

std::vector<RopeCase> rope_cases() {
    return {
        {Shape{5, 3, 8}},
        {Shape{1, 1, 2}},
        {Shape{2, 4, 3, 16}, 10},
        {Shape{2, 7, 5, 64}, 0, true},
        {Shape{4, 2, 6}, 6, false, 3000, 500000.0f, 0.25f},
        {Shape{3, 9, 5, 12}, 4, true, 100, 10000.0f, 4.0f},
        {Shape{6, 32, 128}, 0, false, 10000, 500000.0f},
        {Shape{1, 13, 16}, 0, false, 5000},  // one token's heads split into groups (3 of 13 heads)
        {Shape{1, 1, 40, 128}, 0, false, 10000, 500000.0f},
        {Shape{2, 3, 2, 80}, 64, false, 10000, 1000000.0f, 0.125f},
        {Shape{0, 2, 8}},
        {Shape{3, 0, 4}},
        {Shape{2, 0, 3, 8}, 0, true},
    };
}

template <class T>
void check_rope(CaseContext& ctx, RopeStyle style, bool with_factors) {
    std::vector<RopeCase> const cases = rope_cases();
    for (std::size_t k = 0; k < cases.size(); ++k) {
        if (!ctx.fits(cases[k].shape.numel())) continue;
        ctx.attempt([&] { run_case<T>(ctx, cases[k], style, with_factors, Specials::none, k); });
    }
    // NaN and ±Inf in x, at small positions.
    ctx.attempt([&] { run_case<T>(ctx, {Shape{7, 3, 20}, 0, false, 40}, style, with_factors, Specials::ieee, 1); });
    ctx.attempt([&] { run_case<T>(ctx, {Shape{2, 5, 3, 10}, 6, true, 40}, style, with_factors, Specials::ieee, 2); });
    // In place, against the returning form.
    std::vector<T> const v = rounded_to<T>(ctx.values(4 * 3 * 24, {-4, 4}, Specials::none));
    Tensor<T> x = ctx.input(v, Shape{4, 3, 24});
    Tensor<std::int32_t> const positions = ctx.input(std::vector<std::int32_t>{7, -3, 4000, 0}, Shape{4});
    RopeParams const params{
        .style = style, .n_dims = 16, .freq_base = 10000.0f, .freq_scale = 1.0f, .freq_factors = {}};
    std::vector<T> const want = rope(x, positions, params).to_vector();
    rope_into(x, positions, params, x);
    std::vector<T> const got = x.to_vector();
    for (std::size_t i = 0; i < got.size(); ++i)
        EXPECT_TRUE(same_or_both_nan(got[i], want[i]))
            << "in place differs from the returning form at " << i << " on " << ctx.target().id;
}

template <class T>
void add_cases(std::vector<OpCase>& c) {
    for (RopeStyle style : {RopeStyle::adjacent, RopeStyle::halves})
        for (bool factors : {false, true})
            c.push_back({std::string("rope") + (style == RopeStyle::halves ? "_halves" : "_adjacent") +
                             (factors ? "_factors" : "") + dtype_suffix<T>(),
                         Op::rope, dtype_of<T>,
                         [style, factors](CaseContext& ctx) { check_rope<T>(ctx, style, factors); }});
}

CaseRegistration const registration(floating_cases([]<class T>(std::vector<OpCase>& c) { add_cases<T>(c); }));

}  // namespace
}  // namespace rayo::test::ops
