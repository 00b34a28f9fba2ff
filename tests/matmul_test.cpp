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

// K-quant weights: the reference is the float64 product with the dequantized weights, so the
// only error is f32 accumulation. The last case spans two decode panels (8 MiB of f32 rows).
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

INSTANTIATE_TEST_SUITE_P(Cpu, Matmul, ::testing::ValuesIn(archs()), ArchParamName{});

}  // namespace
}  // namespace rayo::test
