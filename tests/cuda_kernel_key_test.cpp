// The CUDA launch path's host-side pieces (cuda/kernel_runner.hpp): kernel keys written on the
// stack and kernel factories that refer to the caller's callable. Host only: no GPU needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/kernel_runner.hpp"

namespace rayo::test {
namespace {

TEST(CudaKernelKey, SpellsTextAndUnsignedNumbersAsTheOldStringKeysDid) {
    cuda::KernelKey key;
    key << "quant.gemv_spanning." << std::string_view("q6_k") << ".b" << 16u << ".g" << std::uint32_t{1} << ".n"
        << std::size_t{0} << ".p" << std::uint64_t{18446744073709551615ull} << "." << "sm_90";
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

}  // namespace
}  // namespace rayo::test
