// The CUDA backend's Hopper GEMM (rayo::ptx::kernels::gemm, GemmAlgorithm::wgmma) through its own
// glue (cuda::ops::run for a matmul) in the host PTX simulator, so CI checks it without a GPU: the
// producer's TMA copies into the slot ring (which the simulator lands only when a consumer waits
// on the slot's barrier), wgmma over the 128-byte swizzled tiles through their descriptors, the
// slots' release and reuse over more k steps than the ring has slots and across the tiles a
// persistent block walks, partial tiles at every edge, both layouts of b, batches with a shared b,
// and linear's bias, f16, bf16 and f32 read as TF32; against a float64 reference, with poisoned
// outputs and guard elements.
#include "support/ptx_simulator.hpp"
#include "support/test_support.hpp"

#include <bit>
#include <cmath>
#include <type_traits>
#include <string>
#include <vector>

#include "cuda/ops/ops.hpp"
#include "rayo/ptx/kernels/gemm.hpp"

namespace rayo::test {
namespace {

using ptxsim::HostView;
using ptxsim::SimulatedRunner;

constexpr cuda::MultiprocessorSharedMemory hopper_multiprocessor{.bytes = 233472, .reserved_per_block = 1024};
constexpr std::size_t guard = 16;  // poisoned elements after the output, which must stay poisoned

struct Case {
    std::size_t batch, m, n, k;
    bool transposed;  // b stored [n, k] (linear's weights) instead of [k, n]
    bool shared_b;    // one b for every product of the batch
    bool bias;
    int multiprocessors;  // the simulated GPU's: fewer than the tiles makes blocks walk several
};

// An f32 value as the tensor cores read it in TF32: the low 13 mantissa bits cleared.
double as_tf32(double x) {
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(static_cast<float>(x)) & ~std::uint32_t{0x1fff});
}

template <class T>
void check(Case const& c, std::uint32_t seed) {
    SCOPED_TRACE(std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                 std::to_string(c.k) + (c.transposed ? " b [n, k]" : " b [k, n]") + (c.shared_b ? " shared b" : "") +
                 (c.bias ? " bias" : "") + " on " + std::to_string(c.multiprocessors) + " SMs");
    SimulatedRunner runner(c.multiprocessors, ptx::Target::sm_90);
    runner.set_max_shared_bytes(227 * 1024);
    runner.set_multiprocessor_shared(hopper_multiprocessor);
    std::size_t const b_matrices = c.shared_b ? 1 : c.batch;
    std::vector<float> const af = random_floats(c.batch * c.m * c.k, seed, -1.0f, 1.0f);
    std::vector<float> const bf = random_floats(b_matrices * c.k * c.n, seed + 1, -1.0f, 1.0f);
    std::vector<float> const biasv = random_floats(c.n, seed + 2, -2.0f, 2.0f);
    std::vector<T> const av(af.begin(), af.end()), bv(bf.begin(), bf.end());

    HostView<T> a(runner, av.size(), 0, dtype_of<T>);
    HostView<T> b(runner, bv.size(), 0, dtype_of<T>);
    HostView<float> bias(runner, c.n, 0, DType::f32);
    HostView<float> out(runner, c.batch * c.m * c.n + guard, 0, DType::f32);
    a.fill(av);
    b.fill(bv);
    bias.fill(biasv);
    out.fill(std::vector<float>(c.batch * c.m * c.n + guard, poison));

    // f32 operands run as TF32 (MatmulOptions::allow_tf32); exact f32 never reaches this kernel.
    constexpr bool tf32 = std::is_same_v<T, float>;
    detail::op::Matmul const op{.op = c.bias ? Op::linear : Op::matmul,
                                .shape = {.m = c.m,
                                          .n = c.n,
                                          .k = c.k,
                                          .b_transposed = c.transposed,
                                          .batch = c.batch,
                                          .a_batch = c.m * c.k,
                                          .b_batch = c.shared_b ? 0 : c.k * c.n,
                                          .tf32 = tf32}};
    std::vector<detail::TensorView> in{a.view(), b.view()};
    if (c.bias) in.push_back(bias.view());
    detail::TensorView const result = out.matrix(c.batch * c.m, c.n);
    cuda::ops::run(runner, op, {in, std::span(&result, 1)});

    ASSERT_FALSE(runner.launches().empty());
    EXPECT_NE(runner.launches().back().key.find(tf32 ? "gemm_wgmma_tf32" : "gemm_wgmma"), std::string::npos)
        << "the glue picked another kernel: " << runner.launches().back().key;
    if (tf32 && !c.transposed) {  // b [k, n] first transposed into [n, k]
        EXPECT_NE(runner.launches().front().key.find("transpose_tiled"), std::string::npos)
            << runner.launches().front().key;
    }

    std::vector<float> const y(out.data(), out.data() + c.batch * c.m * c.n + guard);
    for (std::size_t p = 0; p < c.batch; ++p) {
        T const* ap = av.data() + p * c.m * c.k;
        T const* bp = bv.data() + (c.shared_b ? 0 : p) * c.k * c.n;
        for (std::size_t i = 0; i < c.m; ++i)
            for (std::size_t j = 0; j < c.n; ++j) {
                double sum = c.bias ? biasv[j] : 0.0, magnitude = c.bias ? std::abs(biasv[j]) : 0.0, exact = sum;
                for (std::size_t l = 0; l < c.k; ++l) {
                    double const x = static_cast<float>(ap[i * c.k + l]);
                    double const w = static_cast<float>(c.transposed ? bp[j * c.k + l] : bp[l * c.n + j]);
                    sum += tf32 ? as_tf32(x) * as_tf32(w) : x * w;
                    magnitude += std::abs(x * w);
                    exact += x * w;
                }
                float const got = y[(p * c.m + i) * c.n + j];
                // f32 accumulation of exact products (of the tf32 values): a few f32 roundings of the magnitude.
                ASSERT_LE(std::abs(got - sum), 1e-5 * magnitude + 1e-30)
                    << "out[" << p << ", " << i << ", " << j << "] = " << got << ", want " << sum;
                // TF32's documented accuracy against the exact f32 product: 2^-10 per operand.
                if (tf32) {
                    ASSERT_LE(std::abs(got - exact), std::ldexp(1.0, -9) * magnitude + 1e-5 * magnitude);
                }
            }
    }
    for (std::size_t g = 0; g < guard; ++g)
        EXPECT_EQ(y[c.batch * c.m * c.n + g], poison) << "guard element " << g << " written";
}

TEST(CudaWgmmaSimulated, MatchesFloat64AcrossTheRingAndEdges) {
    // 2 SMs: the 128x128 kernel once there is a tile for every fourth SM, 128x256 once two an SM.
    check<half>({.batch = 1,
                 .m = 130,
                 .n = 136,
                 .k = 328,
                 .transposed = false,
                 .shared_b = false,
                 .bias = false,
                 .multiprocessors = 2},
                1);  // 6 k steps over a 6-slot ring, partial tiles at the bottom and right, k not of 64
    check<bfloat16>({.batch = 1,
                     .m = 200,
                     .n = 264,
                     .k = 200,
                     .transposed = true,
                     .shared_b = false,
                     .bias = true,
                     .multiprocessors = 1},
                    2);  // one block walks 2 x 3 tiles: the ring carries over between tiles
    check<half>({.batch = 1,
                 .m = 256,
                 .n = 1024,
                 .k = 136,
                 .transposed = true,
                 .shared_b = false,
                 .bias = false,
                 .multiprocessors = 2},
                3);  // 128x256 tiles, two an SM
}

TEST(CudaWgmmaSimulated, BatchesWalkEveryProductsTiles) {
    check<half>({.batch = 3,
                 .m = 72,
                 .n = 96,
                 .k = 72,
                 .transposed = false,
                 .shared_b = true,
                 .bias = false,
                 .multiprocessors = 2},
                4);
    check<bfloat16>({.batch = 2,
                     .m = 136,
                     .n = 64,
                     .k = 40,
                     .transposed = true,
                     .shared_b = false,
                     .bias = false,
                     .multiprocessors = 1},
                    5);
}

// f32 products allowed to run as TF32: a [n, k] b read in place, a [k, n] one transposed first.
TEST(CudaWgmmaSimulated, Tf32ProductsMatchFloat64OfTheirTf32Values) {
    check<float>({.batch = 1,
                  .m = 130,
                  .n = 136,
                  .k = 200,
                  .transposed = true,
                  .shared_b = false,
                  .bias = true,
                  .multiprocessors = 2},
                 6);  // 7 k steps of 32 over a 6-slot ring, partial tiles, k not of 32
    check<float>({.batch = 2,
                  .m = 72,
                  .n = 96,
                  .k = 68,
                  .transposed = false,
                  .shared_b = true,
                  .bias = false,
                  .multiprocessors = 1},
                 7);
    check<float>({.batch = 2,
                  .m = 64,
                  .n = 64,
                  .k = 36,
                  .transposed = false,
                  .shared_b = false,
                  .bias = false,
                  .multiprocessors = 1},
                 8);
}

}  // namespace
}  // namespace rayo::test
