// The CUDA launch path's host-side pieces (cuda/kernel_runner.hpp): kernel keys written on the
// stack and kernel factories that refer to the caller's callable, and the block-quant glue's keys
// (one key, one kernel, across every weight type). Host only: no GPU needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>

#include "cuda/kernel_runner.hpp"
#include "cuda/ops/ops.hpp"
#include "support/ptx_simulator.hpp"
#include "support/test_support.hpp"

namespace rayo::test {
namespace {

TEST(CudaKernelKey, SpellsTextAndUnsignedNumbersAsTheOldStringKeysDid) {
    cuda::KernelKey key;
    key << "quant.gemv_spanning." << std::string_view("q6_k") << ".b" << 16u << ".g" << std::uint32_t{1} << ".n"
        << std::size_t{0} << ".p" << std::uint64_t{18446744073709551615ull} << "."
        << "sm_90";
    EXPECT_EQ(key.view(), "quant.gemv_spanning.q6_k.b16.g1.n0.p18446744073709551615.sm_90");
    EXPECT_EQ(cuda::KernelKey{}.view(), "");
}

TEST(CudaKernelKey, ALongerKeyThanItsBufferIsAnErrorNotATruncation) {
    cuda::KernelKey key;
    std::string const half(100, 'k');
    key << half;
    EXPECT_THROW(key << half, std::length_error);
    EXPECT_EQ(key.view(), half);  // what was written stays
    cuda::KernelKey digits;
    digits << std::string(185, 'd');
    EXPECT_THROW(digits << 123456789u, std::length_error);  // 9 digits into 7 places
    EXPECT_EQ(digits.view().size(), 185u);
}

TEST(CudaKernelFactory, CallsTheCallersLambdaWithoutCopyingIt) {
    struct Counting {
        int* calls;
        int* copies;
        Counting(int* c, int* k) : calls(c), copies(k) {}
        Counting(Counting const& other) : calls(other.calls), copies(other.copies) { ++*copies; }
        Counting& operator=(Counting const&) = delete;
        ptx::Kernel operator()() const {
            ++*calls;
            return ptx::Kernel("made");
        }
    };
    int calls = 0, copies = 0;
    Counting const make(&calls, &copies);
    cuda::KernelFactory const factory(make);
    cuda::KernelFactory const copy = factory;
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(copy().name(), "made");
    EXPECT_EQ(factory().name(), "made");
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(copies, 0);
}

// Every block-quantized weight type's dequantize and GEMVs (1, 2 and 5 rows of x) through the glue on
// one simulated device: the runner throws where a key it has seen names another kernel, so the
// types' keys stay apart; and every key of a type's launches names the type. (Many rows of x convert
// x to f16 with cvt.rn.f16x2.f32, which the simulator does not model.)
template <QuantBlock W>
std::set<std::string> block_quant_keys(ptxsim::SimulatedRunner& runner) {
    constexpr std::size_t n = 4, k = 512;
    std::vector<W> const blocks = quantize<W>(Tensor<float>::from(random_floats(n * k, 7, -1, 1), {n, k})).to_vector();
    ptxsim::HostView<W> w(runner, blocks.size(), 0, dtype_of<W>);
    ptxsim::HostView<float> x(runner, 20 * k, 0, DType::f32), out(runner, 20 * n, 0, DType::f32);
    ptxsim::HostView<float> decoded(runner, n * k, 0, DType::f32);
    w.fill(blocks);
    x.fill(random_floats(20 * k, 8));
    runner.clear_launches();
    detail::TensorView const decoded_view = decoded.view();
    cuda::ops::run(runner, detail::op::Dequantize{},
                   detail::OpViews{std::span(&w.view(), 1), std::span(&decoded_view, 1)});
    for (std::size_t m : {1u, 2u, 5u})
        (void)cuda::ops::linear_kquant(runner, {m, n, k, true}, x.matrix(m, k), w.matrix(n, k), nullptr,
                                       out.matrix(m, n));
    std::set<std::string> keys;
    for (auto const& launch : runner.launches()) keys.insert(launch.key);
    return keys;
}

TEST(CudaKernelKey, BlockQuantKernelsOfEveryWeightTypeHaveKeysOfTheirOwn) {
    ptxsim::SimulatedRunner runner(2, ptx::Target::sm_80);
    runner.set_max_shared_bytes(163 * 1024);
    std::set<std::string> all;
    auto const check = [&](std::set<std::string> const& keys, std::string_view type) {
        for (std::string const& key : keys) {
            EXPECT_NE(key.find(type), std::string::npos) << key << " does not name " << type;
            EXPECT_FALSE(all.contains(key)) << key << " is used by two weight types";
        }
        all.insert(keys.begin(), keys.end());
    };
    check(block_quant_keys<q4_k>(runner), "q4_k");
    check(block_quant_keys<q5_k>(runner), "q5_k");
    check(block_quant_keys<q6_k>(runner), "q6_k");
    check(block_quant_keys<q8_0>(runner), "q8_0");
    check(block_quant_keys<q4_0>(runner), "q4_0");
}

}  // namespace
}  // namespace rayo::test
