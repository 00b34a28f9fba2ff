// matmul and linear for f32, f16 and bf16 operands against a float64 reference
// (relative error <= 1e-5·√k of the product's magnitude).
#include "support/test_support.hpp"

namespace rayo::test {
namespace {

template <class T>
std::vector<T> convert(std::vector<float> const& v) {
    return std::vector<T>(v.begin(), v.end());
}

// want[i, j] = Σ_p a(i, p)·b(p, j); b_t: b is stored [n, k].
void expect_gemm(std::vector<float> const& got, std::vector<double> const& a, std::vector<double> const& b, std::size_t m,
                 std::size_t n, std::size_t k, bool b_t) {
    ASSERT_EQ(got.size(), m * n);
    double const tol = 1e-5 * std::sqrt(static_cast<double>(std::max<std::size_t>(k, 1)));
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            double want = 0, mag = 0;
            for (std::size_t p = 0; p < k; ++p) {
                double const t = a[i * k + p] * (b_t ? b[j * k + p] : b[p * n + j]);
                want += t;
                mag += std::abs(t);
            }
            ASSERT_NEAR(got[i * n + j], want, tol * mag + 1e-30) << "C(" << i << ", " << j << ") of " << m << "x" << n << "x" << k;
        }
}

template <class T>
std::vector<double> as_double(std::vector<T> const& v) {
    std::vector<double> d;
    for (auto x : v) d.push_back(static_cast<double>(static_cast<float>(x)));
    return d;
}

struct Dims {
    std::size_t m, n, k;
};

// Tiny, prime and odd sizes, both sides of the micro-tile (6x16, 14x32), of the small-problem
// path (96), of kc (256/512), of mc (72, 150, 252) and of nc (4096).
std::vector<Dims> gemm_dims() {
    return {{1, 1, 1}, {1, 7, 64}, {7, 1, 13}, {5, 3, 0}, {13, 17, 19}, {6, 16, 5}, {14, 32, 3}, {64, 64, 64},
            {65, 63, 67}, {95, 97, 96}, {1, 1000, 257}, {255, 257, 256}, {257, 255, 129}, {31, 97, 1031},
            {149, 40, 511}, {151, 33, 513}, {253, 17, 255}, {300, 40, 700}, {129, 520, 300}, {3, 4097, 37}};
}

class Matmul : public ::testing::TestWithParam<CpuArch> {};

template <class T>
void run_matmul_case(Dims d) {
    auto const seed = fresh_seed();
    SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) + " seed " + std::to_string(seed));
    auto const av = convert<T>(random_floats(d.m * d.k, seed, -1.0f, 1.0f));
    auto const bv = convert<T>(random_floats(d.k * d.n, seed + 1, -1.0f, 1.0f));
    auto a = Tensor<T>::from(av, {d.m, d.k});
    auto b = Tensor<T>::from(bv, {d.k, d.n});
    expect_gemm(matmul(a, b).to_vector(), as_double(av), as_double(bv), d.m, d.n, d.k, false);
    auto out = poisoned({d.m, d.n});
    matmul(a, b, out);
    expect_gemm(out.to_vector(), as_double(av), as_double(bv), d.m, d.n, d.k, false);
    // linear: x[m, k] · w[n, k]ᵀ (f32 activations, T weights)
    auto const xv = random_floats(d.m * d.k, seed + 2, -1.0f, 1.0f);
    auto const wv = convert<T>(random_floats(d.n * d.k, seed + 3, -1.0f, 1.0f));
    auto x = Tensor<float>::from(xv, {d.m, d.k});
    auto w = Tensor<T>::from(wv, {d.n, d.k});
    expect_gemm(linear(x, w).to_vector(), as_double(xv), as_double(wv), d.m, d.n, d.k, true);
}

TEST_P(Matmul, F32) {
    ArchScope scope(GetParam());
    for (auto d : gemm_dims()) run_matmul_case<float>(d);
}
TEST_P(Matmul, F16) {
    ArchScope scope(GetParam());
    for (auto d : gemm_dims()) run_matmul_case<half>(d);
}
TEST_P(Matmul, BF16) {
    ArchScope scope(GetParam());
    for (auto d : gemm_dims()) run_matmul_case<bfloat16>(d);
}

TEST_P(Matmul, LinearFlattensLeadingAxes) {
    ArchScope scope(GetParam());
    auto const xv = random_floats(2 * 3 * 40, fresh_seed());
    auto const wv = random_floats(5 * 40, fresh_seed());
    auto y = linear(Tensor<float>::from(xv, {2, 3, 40}), Tensor<float>::from(wv, {5, 40}));
    EXPECT_EQ(y.shape(), (Shape{2, 3, 5}));
    expect_gemm(y.to_vector(), as_double(xv), as_double(wv), 6, 5, 40, true);
}

TEST_P(Matmul, ThreadCountsGiveTheSameResult) {
    ArchScope scope(GetParam());
    auto const av = random_floats(200 * 300, fresh_seed());
    auto const bv = random_floats(300 * 170, fresh_seed());
    auto a = Tensor<float>::from(av, {200, 300});
    auto b = Tensor<float>::from(bv, {300, 170});
    std::size_t const saved = num_threads();
    set_num_threads(1);
    auto const one = matmul(a, b).to_vector();
    set_num_threads(3);
    auto const three = matmul(a, b).to_vector();
    set_num_threads(saved);
    expect_gemm(one, as_double(av), as_double(bv), 200, 170, 300, false);
    expect_gemm(three, as_double(av), as_double(bv), 200, 170, 300, false);
}

// K-quant weights on uniform data: the reference is the float64 product with the dequantized
// weights; the bound is the f32 GEMM's (the integer path's activation error is far below it here).
template <class W>
void run_quantized_linear_case(Dims d) {
    auto const seed = fresh_seed();
    SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) + " seed " + std::to_string(seed));
    auto const xv = random_floats(d.m * d.k, seed, -1.0f, 1.0f);
    auto w = quantize<W>(Tensor<float>::from(random_floats(d.n * d.k, seed + 1, -1.0f, 1.0f), {d.n, d.k}));
    auto const wv = dequantize(w).to_vector();
    auto x = Tensor<float>::from(xv, {d.m, d.k});
    expect_gemm(linear(x, w).to_vector(), as_double(xv), as_double(wv), d.m, d.n, d.k, true);
    auto out = poisoned({d.m, d.n});
    linear(x, w, out);
    expect_gemm(out.to_vector(), as_double(xv), as_double(wv), d.m, d.n, d.k, true);
}

TEST_P(Matmul, LinearWithKQuantWeights) {
    ArchScope scope(GetParam());
    for (Dims d : {Dims{1, 7, 256}, Dims{5, 33, 512}, Dims{64, 300, 768}, Dims{3, 8200, 256}}) {
        run_quantized_linear_case<q4_k>(d);
        run_quantized_linear_case<q6_k>(d);
    }
}

// The stated accuracy of linear with K-quant weights: ‖y − ref‖ / ‖ref‖ against float64 on the
// dequantized weights and the unquantized x. Bounds: 1e-3 with the default activations (the
// integer dot products see x as a q8_k block plus the q8_k of its residual; measured ~1.2e-4 on
// this data) and 1e-1 with ggml's single q8_k (measured 2.5-5.2%: the large channel sets its
// block's scale). x is normal with one channel 40x larger and an all-zero block, as real
// activations have; m <= 4 takes the integer dot products, larger m the GEMM.
using KQuantActivationScope = SettingScope<KQuantActivations, &kquant_activations, &set_kquant_activations>;

template <class W>
double quantized_linear_error(Dims d) {
    auto const seed = fresh_seed();
    SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) + " seed " + std::to_string(seed));
    auto const xv = activation_like(d.m, d.k, seed);
    auto w = quantize<W>(Tensor<float>::from(random_floats(d.n * d.k, seed + 1, -1.0f, 1.0f), {d.n, d.k}));
    auto const wv = dequantize(w).to_vector();
    auto out = poisoned({d.m, d.n});
    linear(Tensor<float>::from(xv, {d.m, d.k}), w, out);
    std::vector<double> want(d.m * d.n);
    for (std::size_t i = 0; i < d.m; ++i)
        for (std::size_t j = 0; j < d.n; ++j) {
            double sum = 0;
            for (std::size_t p = 0; p < d.k; ++p) sum += double(xv[i * d.k + p]) * double(wv[j * d.k + p]);
            want[i * d.n + j] = sum;
        }
    return relative_l2(out.to_vector(), want);
}

TEST_P(Matmul, KQuantLinearMeetsItsStatedAccuracy) {
    ArchScope scope(GetParam());
    for (auto mode : {KQuantActivations::q8_k_residual, KQuantActivations::q8_k}) {
        KQuantActivationScope activations(mode);
        double const bound = mode == KQuantActivations::q8_k_residual ? 1e-3 : 1e-1;
        for (Dims d : {Dims{1, 37, 2048}, Dims{3, 50, 1024}, Dims{4, 16, 512}, Dims{5, 40, 1024}, Dims{16, 33, 768}}) {
            SCOPED_TRACE(std::string(to_string(mode)));
            double const e4 = quantized_linear_error<q4_k>(d), e6 = quantized_linear_error<q6_k>(d);
            EXPECT_LE(e4, bound);
            EXPECT_LE(e6, bound);
            if (mode == KQuantActivations::q8_k_residual) {  // the residual term is doing its job
                EXPECT_LE(e4, 5e-4);
                EXPECT_LE(e6, 5e-4);
            }
        }
    }
}

// A GEMV over many weight rows is split into tiles and threads; every output must be written.
TEST_P(Matmul, KQuantGemvCoversEveryRowAndThreadCount) {
    ArchScope scope(GetParam());
    std::size_t const saved = num_threads();
    for (std::size_t threads : {1u, 3u}) {
        set_num_threads(threads);
        EXPECT_LE(quantized_linear_error<q4_k>(Dims{2, 1000, 256}), 1e-3);
        EXPECT_LE(quantized_linear_error<q6_k>(Dims{1, 1001, 512}), 1e-3);
    }
    set_num_threads(saved);
}

INSTANTIATE_TEST_SUITE_P(Cpu, Matmul, ::testing::ValuesIn(archs()), ArchParamName{});

}  // namespace
}  // namespace rayo::test
