// matmul and linear on the Vulkan device against float64 references, fresh random data and
// poisoned outputs: f32, f16 and bf16 operands (matmul a·b with both operands of one type;
// linear x·wᵀ with f32 x and f32/f16/bf16 weights), each f16 case both through 16-bit storage
// and through packed words. Tolerance as the CPU GEMM's: |err| <= 1e-5·√k·Σ|a·b| per element
// (f32 accumulation of exactly representable products). The cooperative-matrix GEMM is not
// exercised here: lavapipe has no VK_NV_cooperative_matrix.
#include "support/vulkan_support.hpp"

namespace rayo::test {
namespace {

struct Dims {
    std::size_t m, n, k;
};

std::vector<Dims> dims() { return {{1, 1, 1}, {7, 5, 3}, {33, 65, 17}, {128, 128, 128}, {257, 129, 300}, {1, 1000, 512}}; }

template <class T>
std::vector<T> convert(std::vector<float> const& v) {
    return std::vector<T>(v.begin(), v.end());
}

template <class T>
std::vector<double> as_double(std::vector<T> const& v) {
    std::vector<double> d;
    d.reserve(v.size());
    for (auto x : v) d.push_back(static_cast<double>(static_cast<float>(x)));
    return d;
}

// got[i, j] against Σ_p a(i, p)·b(p, j); b_t: b is stored [n, k]. Returns the failures.
std::size_t gemm_failures(std::vector<float> const& got, std::vector<double> const& a, std::vector<double> const& b,
                          Dims d, bool b_t) {
    double const tol = 1e-5 * std::sqrt(static_cast<double>(std::max<std::size_t>(d.k, 1)));
    std::size_t failures = 0;
    for (std::size_t i = 0; i < d.m; ++i)
        for (std::size_t j = 0; j < d.n; ++j) {
            double want = 0, mag = 0;
            for (std::size_t p = 0; p < d.k; ++p) {
                double const t = a[i * d.k + p] * (b_t ? b[j * d.k + p] : b[p * d.n + j]);
                want += t;
                mag += std::abs(t);
            }
            double const g = got[i * d.n + j];
            if (!(std::abs(g - want) <= tol * mag + 1e-30)) {
                if (failures++ < 5)
                    ADD_FAILURE() << "C(" << i << ", " << j << "): got " << g << ", want " << want << " (" << b_t << ")";
            }
        }
    return failures;
}

class VulkanMatmul : public VulkanTest {
protected:
    template <class T>
    void run(Dims d) {
        auto const seed = fresh_seed();
        SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) + " seed " +
                     std::to_string(seed));
        // matmul: a[m, k] · b[k, n], both T
        auto const av = convert<T>(random_floats(d.m * d.k, seed, -1.0f, 1.0f));
        auto const bv = convert<T>(random_floats(d.k * d.n, seed + 1, -1.0f, 1.0f));
        auto out = poisoned({d.m, d.n}, device);
        matmul(Tensor<T>::from(av, {d.m, d.k}, device), Tensor<T>::from(bv, {d.k, d.n}, device), out);
        EXPECT_EQ(gemm_failures(out.to_vector(), as_double(av), as_double(bv), d, false), 0u) << "matmul";
        // linear: f32 x[m, k] · w[n, k]ᵀ with T weights
        auto const xv = random_floats(d.m * d.k, seed + 2, -1.0f, 1.0f);
        auto const wv = convert<T>(random_floats(d.n * d.k, seed + 3, -1.0f, 1.0f));
        auto y = poisoned({d.m, d.n}, device);
        linear(Tensor<float>::from(xv, {d.m, d.k}, device), Tensor<T>::from(wv, {d.n, d.k}, device), y);
        EXPECT_EQ(gemm_failures(y.to_vector(), as_double(xv), as_double(wv), d, true), 0u) << "linear";
    }

    template <class T>
    void run_all() {
        reset_stats();
        for (Dims d : dims()) run<T>(d);
        EXPECT_EQ(stats().cpu_fallbacks, 0u) << "ran on the CPU instead of the device";
    }
};

TEST_F(VulkanMatmul, F32) { run_all<float>(); }
TEST_F(VulkanMatmul, F16) { run_all<half>(); }
TEST_F(VulkanMatmul, BF16) { run_all<bfloat16>(); }

TEST_F(VulkanMatmul, F16ThroughPackedWords) {
    vulkan::use_matmul_features(device, false, false);
    run_all<half>();
    vulkan::use_matmul_features(device, true, true);
}

TEST_F(VulkanMatmul, ChainedWithAViewOffset) {
    // The output of one matmul feeds the next without a host round trip; b is a slice (a view
    // at a non-zero offset) of a larger tensor.
    reset_stats();
    auto const av = random_floats(20 * 30, fresh_seed(), -1.0f, 1.0f);
    auto const bv = random_floats(40 * 30, fresh_seed(), -1.0f, 1.0f);
    auto a = Tensor<float>::from(av, {20, 30}, device);
    auto big = Tensor<float>::from(bv, {40, 30}, device);
    auto w = big.slice(10, 35);  // rows 10..34: [25, 30]
    auto y = linear(a, w);
    auto const bd = as_double(bv);
    std::vector<double> const wd(bd.begin() + 10 * 30, bd.begin() + 35 * 30);
    EXPECT_EQ(gemm_failures(y.to_vector(), as_double(av), wd, {20, 25, 30}, true), 0u);
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

}  // namespace
}  // namespace rayo::test
