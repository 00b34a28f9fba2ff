// The matmul family: matmul of f32, f16 and bf16 operands, and linear x · wᵀ with f32 x and f32,
// f16, bf16, q8_0, q4_0, q4_k, q5_k and q6_k weights. Shapes: tiny, prime and odd sizes, both
// sides of the CPU's micro-tiles and cache blocks and of the GPUs' tiles, one row and one column,
// k = 0, and one product large enough for the GPUs' large tiles; views at offsets (the GPUs' vector
// and scalar loads); linear over leading batch axes. Block-quantized weights: the GEMV forms of
// every backend (one row of x, a few, more than the GEMV takes, none; rows of whole and partial
// ring slots; q8_0 / q4_0 rows that end inside a 256-value activation block; weights that are a
// slice of a larger tensor), against the product with the dequantized weights, in both of
// rayo::kquant_activations' modes.
#include "ops/harness.hpp"
#include "ops/references.hpp"

#include <cmath>
#include <utility>

#include "support/test_support.hpp"

namespace rayo::test::ops {
namespace {

struct Dims {
    std::size_t m, n, k;
};

std::vector<Dims> product_dims() {
    return {{1, 1, 1},       {1, 7, 64},     {7, 1, 13},     {5, 3, 0},     {13, 17, 19},   {6, 16, 5},
            {14, 32, 3},     {64, 64, 64},   {65, 63, 67},   {95, 97, 96},  {1, 1000, 257}, {255, 257, 256},
            {257, 255, 129}, {31, 97, 1031}, {149, 40, 511}, {3, 4097, 37}, {1000, 1, 512}, {1030, 1100, 20}};
}

// Products with at least one 128x256 tile per SM (the simulator's 2, an H200's 132), so that a
// Hopper GPU runs them on its warpgroup-MMA kernel: partial tiles at both edges, a partial last
// k step, more k steps than the kernel's ring has slots; on aligned views.
std::vector<Dims> warpgroup_dims() { return {{128, 512, 64}, {136, 520, 328}, {2056, 2312, 72}}; }

template <class T>
std::vector<T> as(std::vector<float> const& v) {
    return std::vector<T>(v.begin(), v.end());
}
template <class T>
std::vector<double> exact(std::vector<T> const& v) {
    std::vector<double> d;
    d.reserve(v.size());
    for (T x : v) d.push_back(static_cast<float>(x));
    return d;
}

// The output offset (ctx.output's, past its guard elements) that puts an f32 output on a 16-byte
// boundary when `offset` is 0, and one element past it otherwise: a product's operands and result
// are all aligned (the GPUs' vector and TMA paths) or all not.
std::size_t aligned_output(std::size_t offset) { return offset == 0 ? 1 : 0; }

// Checks a product against the float64 one of the values as stored; `operand_rounding` of Σ|a·b|
// more where the caller allowed its operands to be rounded (TF32).
void expect_product(CaseContext& ctx, Guarded<float> const& out, ProductReference const& want, std::size_t k,
                    double operand_rounding = 0) {
    double const root_k = std::sqrt(static_cast<double>(std::max<std::size_t>(k, 1)));
    std::size_t const n =
        out.tensor().rank() ? static_cast<std::size_t>(out.tensor().shape()[out.tensor().rank() - 1]) : 1;
    ctx.expect_close(
        out,
        {.want = [&](std::size_t i) { return want.value[i]; },
         .describe = [&](std::size_t i) { return "out(" + std::to_string(i / n) + ", " + std::to_string(i % n) + ")"; },
         .scale = [&](std::size_t i) { return root_k * want.magnitude[i]; },
         .magnitude = [&](std::size_t i) { return want.magnitude[i]; },
         .operand_rounding = operand_rounding});
}

// Whether the target runs a product of this size in its budget (the simulator's is small).
bool fits(CaseContext const& ctx, Dims d) { return d.m * d.n * d.k <= 64 * ctx.target().max_elements; }

template <class T>
void check_matmul(CaseContext& ctx) {
    std::size_t index = 0;
    for (Dims d : product_dims()) {
        if (!fits(ctx, d)) continue;
        SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k));
        std::vector<T> const av = as<T>(ctx.values(d.m * d.k, {-1, 1}, Specials::none));
        std::vector<T> const bv = as<T>(ctx.values(d.k * d.n, {-1, 1}, Specials::none));
        std::size_t const offset = index++ % 2;  // every other product on views 1 element in
        ctx.attempt([&] {
            Guarded<float> out = ctx.output<float>(Shape{d.m, d.n}, aligned_output(offset));
            matmul_into(ctx.input(av, Shape{d.m, d.k}, offset), ctx.input(bv, Shape{d.k, d.n}, 2 * offset),
                        out.tensor());
            expect_product(ctx, out, product_ref(exact(av), exact(bv), d.m, d.n, d.k, false), d.k);
        });
    }
    for (Dims d : warpgroup_dims()) {
        if (!fits(ctx, d)) continue;
        SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) + " aligned");
        std::vector<T> const av = as<T>(ctx.values(d.m * d.k, {-1, 1}, Specials::none));
        std::vector<T> const bv = as<T>(ctx.values(d.k * d.n, {-1, 1}, Specials::none));
        for (bool transpose_b : {false, true})
            ctx.attempt([&] {
                Guarded<float> out = ctx.output<float>(Shape{d.m, d.n}, aligned_output(0));
                Shape const b_shape = transpose_b ? Shape{d.n, d.k} : Shape{d.k, d.n};
                matmul_into(ctx.input(av, Shape{d.m, d.k}, 0), ctx.input(bv, b_shape, 0), out.tensor(),
                            {.transpose_b = transpose_b});
                expect_product(ctx, out, product_ref(exact(av), exact(bv), d.m, d.n, d.k, transpose_b), d.k);
            });
    }
    // The returning form.
    ctx.attempt([&] {
        std::vector<T> const av = as<T>(ctx.values(9 * 40, {-1, 1}, Specials::none));
        std::vector<T> const bv = as<T>(ctx.values(40 * 11, {-1, 1}, Specials::none));
        Tensor<float> const y = matmul(ctx.input(av, Shape{9, 40}), ctx.input(bv, Shape{40, 11}));
        EXPECT_EQ(y.shape(), (Shape{9, 11}));
        ProductReference const want = product_ref(exact(av), exact(bv), 9, 11, 40, false);
        std::vector<float> const got = y.to_vector();
        for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want.value[i], 1e-3 * want.magnitude[i]) << i;
    });
}

// f32 products that may run as TF32 (MatmulOptions::allow_tf32): within the f32 tolerance plus
// 2^-9 of Σ|a·b| (each operand keeps 10 mantissa bits) against the exact product; exact where the
// backend has no TF32 path. Odd sizes (which stay exact on every backend), the warpgroup sizes with
// b either way round (Hopper's wgmma kernel, b [k, n] transposed first), and a batch sharing b.
void check_tf32_matmul(CaseContext& ctx) {
    double const tf32_rounding = std::ldexp(1.0, -9);
    std::vector<Dims> dims = warpgroup_dims();
    dims.insert(dims.begin(), {{13, 17, 19}, {65, 63, 67}});
    for (Dims d : dims) {
        if (!fits(ctx, d)) continue;
        std::vector<float> const av = ctx.values(d.m * d.k, {-1, 1}, Specials::none);
        std::vector<float> const bv = ctx.values(d.k * d.n, {-1, 1}, Specials::none);
        for (bool transpose_b : {false, true}) {
            SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) +
                         (transpose_b ? " b [n, k]" : " b [k, n]"));
            ctx.attempt([&] {
                Guarded<float> out = ctx.output<float>(Shape{d.m, d.n}, aligned_output(0));
                Shape const b_shape = transpose_b ? Shape{d.n, d.k} : Shape{d.k, d.n};
                matmul_into(ctx.input(av, Shape{d.m, d.k}, 0), ctx.input(bv, b_shape, 0), out.tensor(),
                            {.transpose_b = transpose_b, .allow_tf32 = true});
                expect_product(ctx, out, product_ref(exact(av), exact(bv), d.m, d.n, d.k, transpose_b), d.k,
                               tf32_rounding);
            });
        }
    }
    Dims const d{72, 96, 68};
    if (!fits(ctx, {3 * d.m, d.n, d.k})) return;
    std::vector<float> const av = ctx.values(3 * d.m * d.k, {-1, 1}, Specials::none);
    std::vector<float> const bv = ctx.values(d.k * d.n, {-1, 1}, Specials::none);
    ctx.attempt([&] {
        Guarded<float> out = ctx.output<float>(Shape{3, d.m, d.n}, aligned_output(0));
        matmul_into(ctx.input(av, Shape{3, d.m, d.k}, 0), ctx.input(bv, Shape{d.k, d.n}, 0), out.tensor(),
                    {.allow_tf32 = true});
        expect_product(ctx, out, product_ref(exact(av), exact(bv), 3 * d.m, d.n, d.k, false), d.k, tf32_rounding);
    });
}

// The batch's products one by one: product i of out's batch axes reads the matrices of a and b
// at i's coordinates, a coordinate of an axis an operand repeats (length 1, or absent) read as 0.
ProductReference batched_product_ref(std::vector<double> const& a, Shape const& a_shape, std::vector<double> const& b,
                                     Shape const& b_shape, Shape const& out_shape, bool b_transposed) {
    std::size_t const rank = out_shape.rank(), m = static_cast<std::size_t>(out_shape[rank - 2]),
                      n = static_cast<std::size_t>(out_shape[rank - 1]),
                      k = static_cast<std::size_t>(a_shape[a_shape.rank() - 1]);
    auto const matrix_index = [&](Shape const& s, std::vector<std::size_t> const& at) {
        std::size_t index = 0;
        std::size_t const lead = (rank - 2) - (s.rank() - 2);
        for (std::size_t d = 0; d + 2 < s.rank(); ++d)
            index = index * static_cast<std::size_t>(s[d]) + (s[d] == 1 ? 0 : at[lead + d]);
        return index;
    };
    ProductReference r;
    std::size_t const products = out_shape.numel() / std::max<std::size_t>(m * n, 1);
    for (std::size_t p = 0; p < (m * n != 0 ? products : 0); ++p) {
        std::vector<std::size_t> at(rank - 2);
        for (std::size_t d = rank - 2, rest = p; d-- > 0; rest /= static_cast<std::size_t>(out_shape[d]))
            at[d] = rest % static_cast<std::size_t>(out_shape[d]);
        std::size_t const ia = matrix_index(a_shape, at), ib = matrix_index(b_shape, at);
        std::vector<double> const am(a.begin() + static_cast<std::ptrdiff_t>(ia * m * k),
                                     a.begin() + static_cast<std::ptrdiff_t>((ia + 1) * m * k));
        std::vector<double> const bm(b.begin() + static_cast<std::ptrdiff_t>(ib * k * n),
                                     b.begin() + static_cast<std::ptrdiff_t>((ib + 1) * k * n));
        ProductReference const one = product_ref(am, bm, m, n, k, b_transposed);
        r.value.insert(r.value.end(), one.value.begin(), one.value.end());
        r.magnitude.insert(r.magnitude.end(), one.magnitude.begin(), one.magnitude.end());
    }
    return r;
}

// Batched products: full batches, a b shared by the batch, batch axes that broadcast both ways
// (which do not collapse to one axis), b read transposed (q·kᵀ), an empty batch, k = 0, and sizes
// for the GPUs' vector loads and large tiles; every other problem on views 1 element in.
template <class T>
void check_batched_matmul(CaseContext& ctx) {
    struct Problem {
        Shape a, b;
        bool transpose_b;
    };
    std::vector<Problem> const problems = {{Shape{3, 5, 7, 9}, Shape{3, 5, 9, 4}, false},
                                           {Shape{4, 17, 33}, Shape{33, 6}, false},
                                           {Shape{2, 1, 6, 8}, Shape{1, 3, 8, 5}, false},
                                           {Shape{2, 3, 7, 16}, Shape{2, 3, 10, 16}, true},
                                           {Shape{0, 3, 4}, Shape{4, 5}, false},
                                           {Shape{2, 3, 0}, Shape{2, 0, 4}, false},
                                           {Shape{3, 32, 64}, Shape{3, 64, 32}, false},
                                           {Shape{5, 1, 64}, Shape{5, 40, 64}, true},
                                           {Shape{6, 130, 64}, Shape{1, 64, 136}, false},
                                           {Shape{2, 2, 160, 128}, Shape{2, 2, 144, 128}, true},
                                           // Enough 128x256 tiles for an H200's warpgroup-MMA kernel: a b shared by the
                                           // batch (transposed), then both operands per product.
                                           {Shape{6, 1040, 40}, Shape{1544, 40}, true},
                                           {Shape{3, 33, 40}, Shape{3, 40, 24}, false},
                                           {Shape{6, 520, 72}, Shape{6, 72, 1032}, false}};
    for (std::size_t i = 0; i < problems.size(); ++i) {
        Problem const& p = problems[i];
        if (p.a.numel() * static_cast<std::size_t>(p.transpose_b ? p.b[p.b.rank() - 2] : p.b[p.b.rank() - 1]) >
            64 * ctx.target().max_elements)
            continue;
        SCOPED_TRACE(p.a.to_string() + " x " + p.b.to_string() + (p.transpose_b ? " transposed" : ""));
        std::vector<T> const av = as<T>(ctx.values(p.a.numel(), {-1, 1}, Specials::none));
        std::vector<T> const bv = as<T>(ctx.values(p.b.numel(), {-1, 1}, Specials::none));
        std::size_t const offset = i % 2;
        ctx.attempt([&] {
            Tensor<T> const a = ctx.input(av, p.a, offset), b = ctx.input(bv, p.b, 2 * offset);
            Shape const result = matmul(a, b, {.transpose_b = p.transpose_b}).shape();
            Guarded<float> out = ctx.output<float>(result, aligned_output(offset));
            matmul_into(a, b, out.tensor(), {.transpose_b = p.transpose_b});
            expect_product(ctx, out, batched_product_ref(exact(av), p.a, exact(bv), p.b, result, p.transpose_b),
                           static_cast<std::size_t>(p.a[p.a.rank() - 1]));
        });
    }
}

// Products rounded into 16-bit outputs: each element within the f32 product's tolerance of the
// float64 reference plus one rounding to O (half an ulp: 2^-11 relative for f16, 2^-8 for bf16),
// matmul batched and linear with and without bias, guards intact. linear's operands may be rounded
// on their way into the product as its tolerance row says (x to bf16 beside bf16 weights on a GPU).
template <class T, HalfPrecision O>
void check_rounded_products(CaseContext& ctx) {
    double const rounding = std::is_same_v<O, half> ? 0x1p-11 : 0x1p-8;
    double const linear_operands = tolerance(Op::linear, dtype_of<T>, ctx.target().kind).rounding;
    auto const expect = [&](Guarded<O> const& out, ProductReference const& want, std::size_t k,
                            std::string const& what) {
        std::vector<O> const got = out.values();
        ASSERT_EQ(got.size(), want.value.size());
        double const root_k = std::sqrt(static_cast<double>(std::max<std::size_t>(k, 1)));
        double const operands = what.starts_with("linear") ? linear_operands : 0.0;
        for (std::size_t i = 0; i < got.size(); ++i) {
            double const g = static_cast<float>(got[i]), w = want.value[i];
            double const bound =
                1e-4 * root_k * want.magnitude[i] + operands * want.magnitude[i] + rounding * std::abs(w) + 1e-30;
            ASSERT_LE(std::abs(g - w), bound) << what << " element " << i << " on " << ctx.target().id;
        }
        ctx.expect_guards(out);
    };
    ctx.attempt([&] {
        Shape const a_shape{3, 17, 40}, b_shape{3, 40, 24};
        std::vector<T> const av = as<T>(ctx.values(a_shape.numel(), {-1, 1}, Specials::none));
        std::vector<T> const bv = as<T>(ctx.values(b_shape.numel(), {-1, 1}, Specials::none));
        Guarded<O> out = ctx.output<O>(Shape{3, 17, 24}, 1);
        matmul_into(ctx.input(av, a_shape), ctx.input(bv, b_shape), out.tensor());
        expect(out, batched_product_ref(exact(av), a_shape, exact(bv), b_shape, Shape{3, 17, 24}, false), 40, "matmul");
    });
    ctx.attempt([&] {
        std::size_t const m = 9, n = 33, k = 64;
        std::vector<float> const xv = ctx.values(m * k, {-1, 1}, Specials::none);
        std::vector<T> const wv = as<T>(ctx.values(n * k, {-1, 1}, Specials::none));
        std::vector<float> const bv = ctx.values(n, {-4, 4}, Specials::none);
        Tensor<float> const x = ctx.input(xv, Shape{m, k});
        Tensor<T> const w = ctx.input(wv, Shape{n, k});
        ProductReference want = product_ref(exact(xv), exact(wv), m, n, k, true);
        Guarded<O> plain = ctx.output<O>(Shape{m, n}, 1);
        linear_into(x, w, plain.tensor());
        expect(plain, want, k, "linear");
        for (std::size_t i = 0; i < want.value.size(); ++i) {
            want.value[i] += bv[i % n];
            want.magnitude[i] += std::abs(bv[i % n]);
        }
        Guarded<O> biased = ctx.output<O>(Shape{m, n}, 1);
        linear_into(x, w, ctx.input(bv, Shape{n}), biased.tensor());
        expect(biased, want, k, "linear with bias");
    });
}

template <class W>
void check_linear(CaseContext& ctx) {
    std::size_t index = 0;
    for (Dims d : product_dims()) {
        if (!fits(ctx, d)) continue;
        SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k));
        std::vector<float> const xv = ctx.values(d.m * d.k, {-1, 1}, Specials::none);
        std::vector<W> const wv = as<W>(ctx.values(d.n * d.k, {-1, 1}, Specials::none));
        std::size_t const offset = index++ % 2;
        ctx.attempt([&] {
            Guarded<float> out = ctx.output<float>(Shape{d.m, d.n}, aligned_output(offset));
            linear_into(ctx.input(xv, Shape{d.m, d.k}, 2 * offset), ctx.input(wv, Shape{d.n, d.k}, offset),
                        out.tensor());
            expect_product(ctx, out, product_ref(exact(xv), exact(wv), d.m, d.n, d.k, true), d.k);
        });
    }
    for (Dims d : warpgroup_dims()) {
        if (!fits(ctx, d)) continue;
        SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) + " aligned");
        std::vector<float> const xv = ctx.values(d.m * d.k, {-1, 1}, Specials::none);
        std::vector<W> const wv = as<W>(ctx.values(d.n * d.k, {-1, 1}, Specials::none));
        ctx.attempt([&] {
            Guarded<float> out = ctx.output<float>(Shape{d.m, d.n}, aligned_output(0));
            linear_into(ctx.input(xv, Shape{d.m, d.k}, 0), ctx.input(wv, Shape{d.n, d.k}, 0), out.tensor());
            expect_product(ctx, out, product_ref(exact(xv), exact(wv), d.m, d.n, d.k, true), d.k);
        });
    }
    // Leading axes of x are batch axes.
    ctx.attempt([&] {
        std::vector<float> const xv = ctx.values(2 * 3 * 40, {-1, 1}, Specials::none);
        std::vector<W> const wv = as<W>(ctx.values(5 * 40, {-1, 1}, Specials::none));
        Guarded<float> out = ctx.output<float>(Shape{2, 3, 5});
        linear_into(ctx.input(xv, Shape{2, 3, 40}), ctx.input(wv, Shape{5, 40}), out.tensor());
        expect_product(ctx, out, product_ref(exact(xv), exact(wv), 6, 5, 40, true), 40);
    });
}

// linear(x, w, bias): the product plus bias[j] in every row, into an output and returned.
// Float weights take the bias in the GEMMs' epilogues: few rows, unaligned rows, aligned tiles.
template <FloatingElement W>
void check_linear_bias(CaseContext& ctx) {
    struct Dims3 {
        std::size_t m, n, k;
    };
    for (Dims3 d : {Dims3{1, 7, 40}, Dims3{5, 33, 130}, Dims3{64, 96, 256}, Dims3{0, 5, 8}, Dims3{130, 136, 64},
                    Dims3{3, 8, 0}}) {
        if (!fits(ctx, {d.m, d.n, d.k})) continue;
        SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k));
        std::vector<float> const xv = ctx.values(d.m * d.k, {-1, 1}, Specials::none);
        std::vector<W> const wv = as<W>(ctx.values(d.n * d.k, {-1, 1}, Specials::none));
        std::vector<float> const bv = ctx.values(d.n, {-4, 4}, Specials::none);
        ProductReference want = product_ref(exact(xv), exact(wv), d.m, d.n, d.k, true);
        for (std::size_t i = 0; i < want.value.size(); ++i) {
            want.value[i] += bv[i % d.n];
            want.magnitude[i] += std::abs(bv[i % d.n]);
        }
        ctx.attempt([&] {
            Tensor<float> const x = ctx.input(xv, Shape{d.m, d.k});
            Tensor<W> const w = ctx.input(wv, Shape{d.n, d.k}, 0);
            Tensor<float> const bias = ctx.input(bv, Shape{d.n});
            Guarded<float> out = ctx.output<float>(Shape{d.m, d.n});
            linear_into(x, w, bias, out.tensor());
            expect_product(ctx, out, want, d.k);
            std::vector<float> const returned = linear(x, w, bias).to_vector(), into = out.values();
            for (std::size_t i = 0; i < into.size(); ++i) ASSERT_EQ(returned[i], into[i]) << "returned form at " << i;
        });
    }
}

using KQuantActivationScope = SettingScope<KQuantActivations, &kquant_activations, &set_kquant_activations>;

// K-quant weights: ‖y − ref‖ / ‖ref‖ against float64 on the dequantized weights and the
// unquantized x, x like real activations (normal, one channel 40x larger, an all-zero block). With a
// bias (every other shape: one GEMV of each path and a GEMM), each output is the product plus its
// row's bias, rounded once.
template <QuantBlock W>
void check_kquant_linear(CaseContext& ctx) {
    struct Shape3 {
        std::size_t m, n, k, first_row;  // first_row: the weights are rows [first_row, first_row + n) of a tensor
    };
    std::vector<Shape3> shapes{{1, 7, 256, 0},    {1, 70, 2048, 0},  {1, 37, 2304, 0},    {1, 33, 256, 3},
                               {2, 70, 2048, 0},  {2, 37, 2304, 5},  {3, 50, 1024, 0},    {4, 16, 512, 0},
                               {5, 33, 512, 0},   {8, 9, 2048, 0},   {9, 40, 768, 0},     {16, 33, 768, 0},
                               {17, 20, 512, 0},  {64, 300, 768, 0}, {3, 8200, 256, 0},   {1, 3, 32768, 0},
                               {2, 1000, 256, 1}, {72, 136, 256, 0}, {520, 1040, 512, 0}, {0, 5, 256, 0}};
    // Blocks of 32: rows that end inside a 256-value activation block, on both paths.
    if constexpr (block_values_of<W> != quant_block_values)
        for (Shape3 s : std::initializer_list<Shape3>{{1, 9, 32, 0},
                                                      {1, 21, 96, 2},
                                                      {3, 17, 2080, 0},
                                                      {2, 13, 288, 0},
                                                      {16, 30, 160, 0},
                                                      {20, 30, 160, 0},
                                                      {33, 70, 2336, 1}})
            shapes.push_back(s);
    // The activations' mode applies to the CPU's and CUDA's integer dot products; Vulkan's GEMV
    // reads x as f32 (docs/ops.md).
    std::vector<KQuantActivations> modes{KQuantActivations::q8_k_residual};
    if (ctx.target().kind != DeviceKind::vulkan) modes.push_back(KQuantActivations::q8_k);
    for (auto mode : modes) {
        KQuantActivationScope activations(mode);
        // ggml's single q8_k activations err 2.5-5.2% on this data (the large channel sets its
        // block's scale): a hundredth of the default's accuracy. That figure is a mean over many
        // outputs: a product of a few outputs over one block varies more (11% seen for 7 outputs), so the
        // mode is measured on products of 32 outputs or more (the default mode checks them all).
        double const bound = ctx.tolerance().rel * (mode == KQuantActivations::q8_k ? 100 : 1);
        for (std::size_t index = 0; index < shapes.size(); ++index) {
            Shape3 const s = shapes[index];
            if (!fits(ctx, {s.m, s.n, s.k}) || (mode == KQuantActivations::q8_k && s.m * s.n < 32)) continue;
            SCOPED_TRACE(std::string(to_string(mode)) + " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                         std::to_string(s.k) + (s.first_row ? ", rows from " + std::to_string(s.first_row) : ""));
            std::size_t const rows = s.first_row + s.n;
            // Quantized on the CPU (where the GPU backends quantize the weight types anyway), then moved.
            Tensor<W> const host =
                quantize<W>(Tensor<float>::from(ctx.values(rows * s.k, {-1, 1}, Specials::none), {rows, s.k}));
            auto const first = static_cast<std::int64_t>(s.first_row), end = static_cast<std::int64_t>(rows);
            Tensor<W> const w = host.to(ctx.device()).slice(first, end);
            std::vector<float> const wv = dequantize(host.slice(first, end)).to_vector();
            std::vector<float> const xv = activation_like(s.m, s.k, ctx.seed() + static_cast<std::uint32_t>(s.n));
            // x and out 16-byte aligned: the K-quant kernels of the GPUs read and write vectors.
            Guarded<float> out = ctx.output<float>(Shape{s.m, s.n}, 1);
            bool ran = false;
            ctx.attempt([&] {
                linear_into(ctx.input(xv, Shape{s.m, s.k}, 0), w, out.tensor());
                ran = true;
            });
            if (!ran) continue;
            ProductReference const want = product_ref(std::vector<double>(xv.begin(), xv.end()),
                                                      std::vector<double>(wv.begin(), wv.end()), s.m, s.n, s.k, true);
            // The norm of ref at its typical size at least: a single output may cancel to almost 0.
            double typical = 0;
            for (double m : want.magnitude) typical += m * m / static_cast<double>(s.k);
            std::vector<float> const got = out.values();
            double num = 0, den = 0;
            for (std::size_t i = 0; i < got.size(); ++i) {
                num += (got[i] - want.value[i]) * (got[i] - want.value[i]);
                den += want.value[i] * want.value[i];
            }
            double const error = got.empty() ? 0.0 : std::sqrt(num / std::max(den, typical));
            EXPECT_LE(error, bound) << "‖y − ref‖ / ‖ref‖ on " << ctx.target().id << " (seed " << ctx.seed() << ")";
            ctx.expect_guards(out);
            if (index % 2 != 0 || mode != modes.front()) continue;
            std::vector<float> const bv = ctx.values(s.n, {-4, 4}, Specials::none);
            Guarded<float> biased = ctx.output<float>(Shape{s.m, s.n}, 1);
            ctx.attempt([&] {
                linear_into(ctx.input(xv, Shape{s.m, s.k}, 0), w, ctx.input(bv, Shape{s.n}, 1), biased.tensor());
            });
            std::vector<float> const with_bias = biased.values();
            for (std::size_t i = 0; i < got.size(); ++i)
                ASSERT_EQ(with_bias[i], got[i] + bv[i % s.n])
                    << "with bias, element " << i << " on " << ctx.target().id;
            ctx.expect_guards(biased);
        }
    }
    // A row of x holding NaN or +Inf makes that row's outputs non-finite and leaves the other rows
    // as they are, on each path (one row of x, a few, many); each special alone in row 0, the other
    // in the last row.
    float const nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (std::size_t const m : {std::size_t{1}, std::size_t{3}, std::size_t{20}})
        for (auto const& [first, last] : {std::pair{nan, inf}, std::pair{inf, nan}}) {
            std::size_t const n = 33, k = 512;
            if (!fits(ctx, {m, n, k})) continue;
            SCOPED_TRACE("non-finite x, " + std::to_string(m) + " rows, " + std::to_string(first) + " in row 0");
            Tensor<W> const w =
                quantize<W>(Tensor<float>::from(ctx.values(n * k, {-1, 1}, Specials::none), {n, k})).to(ctx.device());
            std::vector<float> const clean = activation_like(m, k, ctx.seed() + 11);
            std::vector<float> poisoned = clean;
            poisoned[5] = first;                            // row 0
            if (m > 1) poisoned[(m - 1) * k + 300] = last;  // the last row
            Guarded<float> out = ctx.output<float>(Shape{m, n}, 1), want = ctx.output<float>(Shape{m, n}, 2);
            bool ran = false;
            ctx.attempt([&] {
                linear_into(ctx.input(poisoned, Shape{m, k}, 0), w, out.tensor());
                linear_into(ctx.input(clean, Shape{m, k}, 0), w, want.tensor());
                ran = true;
            });
            if (!ran) continue;
            std::vector<float> const got = out.values(), expected = want.values();
            for (std::size_t i = 0; i < m; ++i)
                for (std::size_t j = 0; j < n; ++j) {
                    float const v = got[i * n + j], e = expected[i * n + j];
                    if (i == 0 || i == m - 1)
                        EXPECT_FALSE(std::isfinite(v)) << "row " << i << " column " << j << ": " << v;
                    else
                        EXPECT_NEAR(v, e, 1e-5 * (1 + std::abs(e))) << "row " << i << " column " << j;
                }
            ctx.expect_guards(out);
        }
}

// swiglu_linear and rms_norm_linear: the input formed in float64 from the stored operands (silu(gate)
// ·up; x/sqrt(mean(x²) + eps)·gain), then the product with the weights as stored (K-quant ones
// dequantized), with and without a bias. One row of x at the decode shapes (where a GPU forms the
// input inside its GEMV), several rows, rows of x that are not 16-byte aligned, 0 rows; x of large
// magnitude (1e20: squares past f32's range) and of mixed signs. Float weights: each element
// within the product's tolerance plus the formed input's rounding to f32 (2^-22 of its magnitude);
// K-quant weights: ‖y − ref‖ / ‖ref‖ within the K-quant linear's bound.
template <LinearWeight W>
void check_formed_linear(CaseContext& ctx) {
    struct Problem {
        std::size_t m, n, k;
        bool rms_norm, bias, unaligned = false;
        float x_scale = 1.0f;
    };
    std::vector<Problem> problems{
        {.m = 1, .n = 7, .k = 256, .rms_norm = false, .bias = false},
        {.m = 1, .n = 70, .k = 2048, .rms_norm = false, .bias = true},
        {.m = 1, .n = 37, .k = 2304, .rms_norm = true, .bias = false},
        {.m = 1, .n = 33, .k = 512, .rms_norm = true, .bias = true},
        {.m = 3, .n = 33, .k = 512, .rms_norm = false, .bias = true},
        {.m = 5, .n = 20, .k = 256, .rms_norm = true, .bias = true},
        {.m = 1, .n = 9, .k = 256, .rms_norm = true, .bias = false, .unaligned = true},
        {.m = 2, .n = 9, .k = 256, .rms_norm = false, .bias = false, .unaligned = true},
        {.m = 0, .n = 5, .k = 256, .rms_norm = true, .bias = true},
        {.m = 1, .n = 16, .k = 512, .rms_norm = true, .bias = false, .x_scale = 1e20f},
        {.m = 1, .n = 20, .k = 2048, .rms_norm = true, .bias = true},
        {.m = 1, .n = 12, .k = 2048, .rms_norm = true, .bias = false, .x_scale = 1e20f},
    };
    constexpr bool quantized = QuantWeight<W>;
    if constexpr (std::same_as<W, q8_0> || std::same_as<W, q4_0>) {  // rows of odd block counts
        problems.push_back({.m = 1, .n = 11, .k = 96, .rms_norm = true, .bias = true});
        problems.push_back({.m = 3, .n = 11, .k = 288, .rms_norm = false, .bias = false});
    }
    float const eps = 1e-5f;
    for (Problem const& p : problems) {
        if (!fits(ctx, {p.m, p.n, p.k})) continue;
        SCOPED_TRACE(std::string(p.rms_norm ? "rms_norm_linear " : "swiglu_linear ") + std::to_string(p.m) + "x" +
                     std::to_string(p.n) + "x" + std::to_string(p.k) + (p.bias ? " bias" : "") +
                     (p.unaligned ? " unaligned" : "") + (p.x_scale != 1.0f ? " large x" : ""));
        std::vector<float> xv = quantized ? activation_like(p.m, p.k, ctx.seed() + static_cast<std::uint32_t>(p.n))
                                          : ctx.values(p.m * p.k, {-2, 2}, Specials::none);
        for (float& v : xv) v *= p.x_scale;
        std::vector<float> const second = ctx.values(p.rms_norm ? p.k : p.m * p.k, {-1.5f, 1.5f}, Specials::none);
        std::vector<float> const bv = ctx.values(p.n, {-4, 4}, Specials::none);
        std::vector<double> wv;
        Tensor<W> const w = [&] {
            if constexpr (quantized) {
                Tensor<W> const host =
                    quantize<W>(Tensor<float>::from(ctx.values(p.n * p.k, {-1, 1}, Specials::none), {p.n, p.k}));
                std::vector<float> const dequantized = dequantize(host).to_vector();
                wv.assign(dequantized.begin(), dequantized.end());
                return host.to(ctx.device());
            } else {
                std::vector<W> const stored = as<W>(ctx.values(p.n * p.k, {-1, 1}, Specials::none));
                wv = exact(stored);
                return ctx.input(stored, Shape{p.n, p.k}, 0);
            }
        }();
        std::vector<double> formed(p.m * p.k);
        for (std::size_t i = 0; i < p.m; ++i) {
            double squares = 0;
            for (std::size_t c = 0; c < p.k; ++c) squares += double(xv[i * p.k + c]) * xv[i * p.k + c];
            double const scale = 1.0 / std::sqrt(squares / static_cast<double>(p.k) + eps);
            for (std::size_t c = 0; c < p.k; ++c) {
                double const x = xv[i * p.k + c];
                formed[i * p.k + c] =
                    p.rms_norm ? x * scale * second[c] : x / (1.0 + std::exp(-x)) * second[i * p.k + c];
            }
        }
        ProductReference want = product_ref(formed, wv, p.m, p.n, p.k, true);
        if (p.bias)
            for (std::size_t i = 0; i < want.value.size(); ++i) {
                want.value[i] += bv[i % p.n];
                want.magnitude[i] += std::abs(bv[i % p.n]);
            }
        std::size_t const x_offset = p.unaligned ? 1 : 0;
        Tensor<float> const x = ctx.input(xv, Shape{p.m, p.k}, x_offset);
        Tensor<float> const operand = ctx.input(second, p.rms_norm ? Shape{p.k} : Shape{p.m, p.k}, x_offset);
        Guarded<float> out = ctx.output<float>(Shape{p.m, p.n}, aligned_output(x_offset));
        bool ran = false;
        ctx.attempt([&] {
            Tensor<float> const bias = ctx.input(bv, Shape{p.n}, 0);
            if (p.rms_norm && p.bias)
                rms_norm_linear_into(x, operand, eps, w, bias, out.tensor());
            else if (p.rms_norm)
                rms_norm_linear_into(x, operand, eps, w, out.tensor());
            else if (p.bias)
                swiglu_linear_into(x, operand, w, bias, out.tensor());
            else
                swiglu_linear_into(x, operand, w, out.tensor());
            ran = true;
        });
        if (!ran) continue;
        ctx.expect_guards(out);
        if constexpr (quantized) {
            std::vector<float> const got = out.values();
            double num = 0, den = 0, typical = 0;
            for (std::size_t i = 0; i < got.size(); ++i) {
                num += (got[i] - want.value[i]) * (got[i] - want.value[i]);
                den += want.value[i] * want.value[i];
                typical += want.magnitude[i] * want.magnitude[i] / static_cast<double>(p.k);
            }
            EXPECT_LE(std::sqrt(num / std::max({den, typical, 1e-300})), ctx.tolerance().rel)
                << "on " << ctx.target().id;
        } else {
            expect_product(ctx, out, want, p.k, 0x1p-22);
        }
    }
    // The returned forms: the same values as the _into forms.
    ctx.attempt([&] {
        std::size_t const k = quantized ? 256 : 64;
        Tensor<W> const w = [&] {
            std::vector<float> const values = ctx.values(3 * k, {-1, 1}, Specials::none);
            if constexpr (quantized)
                return quantize<W>(Tensor<float>::from(values, {3, k})).to(ctx.device());
            else
                return ctx.input(as<W>(values), Shape{3, k}, 0);
        }();
        Tensor<float> const x = ctx.input(ctx.values(2 * k, {-1, 1}, Specials::none), Shape{2, k}, 0);
        Tensor<float> const up = ctx.input(ctx.values(2 * k, {-1, 1}, Specials::none), Shape{2, k}, 0);
        Tensor<float> const g = ctx.input(ctx.values(k, {-1, 1}, Specials::none), Shape{k}, 0);
        Guarded<float> a = ctx.output<float>(Shape{2, 3}, 0), b = ctx.output<float>(Shape{2, 3}, 0);
        swiglu_linear_into(x, up, w, a.tensor());
        rms_norm_linear_into(x, g, 1e-6f, w, b.tensor());
        EXPECT_EQ(swiglu_linear(x, up, w).to_vector(), a.values());
        EXPECT_EQ(rms_norm_linear(x, g, 1e-6f, w).to_vector(), b.values());
    });
}

std::vector<OpCase> cases() {
    return {
        {"matmul_f32", Op::matmul, DType::f32, check_matmul<float>},
        {"matmul_f16", Op::matmul, DType::f16, check_matmul<half>},
        {"matmul_bf16", Op::matmul, DType::bf16, check_matmul<bfloat16>},
        {"matmul_tf32", Op::matmul, DType::f32, check_tf32_matmul},
        {"matmul_batched_f32", Op::matmul, DType::f32, check_batched_matmul<float>},
        {"matmul_batched_f16", Op::matmul, DType::f16, check_batched_matmul<half>},
        {"matmul_batched_bf16", Op::matmul, DType::bf16, check_batched_matmul<bfloat16>},
        {"matmul_f32_into_f16", Op::matmul, DType::f32, check_rounded_products<float, half>},
        {"matmul_f16_into_bf16", Op::matmul, DType::f16, check_rounded_products<half, bfloat16>},
        {"matmul_bf16_into_f16", Op::matmul, DType::bf16, check_rounded_products<bfloat16, half>},
        {"linear_f32", Op::linear, DType::f32, check_linear<float>},
        {"linear_bias_f32", Op::linear, DType::f32, check_linear_bias<float>},
        {"linear_bias_f16", Op::linear, DType::f16, check_linear_bias<half>},
        {"linear_bias_bf16", Op::linear, DType::bf16, check_linear_bias<bfloat16>},
        {"linear_f16", Op::linear, DType::f16, check_linear<half>},
        {"linear_bf16", Op::linear, DType::bf16, check_linear<bfloat16>},
        {"linear_q4_k", Op::linear, DType::q4_k, check_kquant_linear<q4_k>},
        {"linear_q6_k", Op::linear, DType::q6_k, check_kquant_linear<q6_k>},
        // No GPU kernels for these three: the GPU backends run them on the CPU.
        {"linear_q8_0", Op::linear, DType::q8_0, check_kquant_linear<q8_0>},
        {"linear_q4_0", Op::linear, DType::q4_0, check_kquant_linear<q4_0>},
        {"linear_q5_k", Op::linear, DType::q5_k, check_kquant_linear<q5_k>},
        {"formed_linear_f32", Op::linear, DType::f32, check_formed_linear<float>},
        {"formed_linear_f16", Op::linear, DType::f16, check_formed_linear<half>},
        {"formed_linear_bf16", Op::linear, DType::bf16, check_formed_linear<bfloat16>},
        {"formed_linear_q4_k", Op::linear, DType::q4_k, check_formed_linear<q4_k>},
        {"formed_linear_q6_k", Op::linear, DType::q6_k, check_formed_linear<q6_k>},
        {"formed_linear_q8_0", Op::linear, DType::q8_0, check_formed_linear<q8_0>},
        {"formed_linear_q4_0", Op::linear, DType::q4_0, check_formed_linear<q4_0>},
        {"formed_linear_q5_k", Op::linear, DType::q5_k, check_formed_linear<q5_k>},
    };
}

CaseRegistration const registration(cases());

}  // namespace
}  // namespace rayo::test::ops
