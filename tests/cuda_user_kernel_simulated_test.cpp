// A kernel of one's own (rayo/cuda_kernel.hpp), examples/cuda_kernel.cpp's scale_add, computed by
// the host PTX simulator as launch_cuda_kernel would launch it (its parameters: the tensors'
// addresses, then the scalars' bits), on fresh data with a partial last block and guard elements
// past the end that must stay untouched; against a float64 reference within one f32 rounding.
// Where it reaches the driver, and its argument checks: fake_cuda_driver_test.cpp.
#include "support/ptx_simulator.hpp"
#include "support/test_support.hpp"

#include "scale_add_kernel.hpp"

#include <cmath>
#include <vector>

namespace rayo::test {
namespace {

TEST(CudaUserKernelSimulated, ScaleAddComputesWhatTheExampleSays) {
    auto const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::uint32_t const n = 1000, guard = 24;
    float const a = -1.75f;
    std::vector<float> const x = random_floats(n, seed, -8.0f, 8.0f);
    std::vector<float> y = random_floats(n + guard, seed + 1, -8.0f, 8.0f);
    std::vector<float> const y0 = y;
    ptx::Kernel const kernel = scale_add_kernel();
    ptxsim::Simulator sim(kernel);  // holds the kernel by reference
    sim.allow(x.data(), x.size() * sizeof(float));
    sim.allow(y.data(), y.size() * sizeof(float));
    sim.run({(n + 255) / 256, 1, 1}, {256, 1, 1},
            {ptxsim::param(x.data()), ptxsim::param(y.data()), ptxsim::param(a), std::uint64_t{n}});
    for (std::uint32_t i = 0; i < n; ++i) {
        double const want = double(a) * double(x[i]) + double(y0[i]);
        ASSERT_LE(std::abs(double(y[i]) - want), std::abs(want) * 6e-8 + 1e-30) << i;  // one rounding (fma)
    }
    for (std::uint32_t i = n; i < n + guard; ++i) ASSERT_EQ(y[i], y0[i]) << "guard element " << i << " written";
}

}  // namespace
}  // namespace rayo::test
