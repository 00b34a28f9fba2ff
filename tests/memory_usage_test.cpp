// Device::memory_usage() on every device present (the CPU, each Vulkan device with the validation
// layer on, each CUDA device) and on the PTX simulator's CUDA device: tensors count while they
// live, peaks stay until reset_peak_memory(), reserved covers in use.
#include "support/memory_usage_checks.hpp"
#include "support/test_support.hpp"

#include <string>
#include <vector>

#if RAYO_TEST_VULKAN
#include "vulkan/diagnostics.hpp"
#endif
#if RAYO_TEST_SIMULATED_CUDA
#include "ops/simulated_cuda.hpp"
#endif

namespace rayo::test {
namespace {

constexpr char simulated_cuda[] = "cuda_sim";

// Device ids ("cpu", "vulkan:0", "cuda:0") and simulated_cuda.
std::vector<std::string> device_ids(bool vulkan) {
    std::vector<std::string> ids;
    for (Device d : Device::all())
        if ((d.kind() == DeviceKind::vulkan) == vulkan) ids.push_back(d.id());
#if RAYO_TEST_SIMULATED_CUDA
    if (!vulkan) ids.emplace_back(simulated_cuda);
#endif
    return ids;
}

std::string param_name(::testing::TestParamInfo<std::string> const& info) {
    std::string name = info.param;
    std::erase(name, ':');
    return name;
}

class MemoryUsageTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
#if RAYO_TEST_SIMULATED_CUDA
        if (simulated()) {
            device = ops::register_simulated_cuda();
            return;
        }
#endif
        device = Device::parse(GetParam());
#if RAYO_TEST_VULKAN
        if (device.kind() == DeviceKind::vulkan) messages_before = vulkan::validation_message_count();
#endif
    }
    void TearDown() override {
        device.synchronize();
#if RAYO_TEST_VULKAN
        if (device.kind() == DeviceKind::vulkan) {
            EXPECT_EQ(vulkan::validation_message_count(), messages_before)
                << "the validation layer reported messages (logged above)";
        }
#endif
#if RAYO_TEST_SIMULATED_CUDA
        if (simulated()) ops::unregister_simulated_cuda();
#endif
    }
    [[nodiscard]] bool simulated() const { return GetParam() == simulated_cuda; }

    Device device = Device::cpu();
    std::uint64_t messages_before = 0;
};

TEST_P(MemoryUsageTest, TensorsCountWhileTheyLiveAndPeaksStayUntilReset) {
    check_tensor_counts(device, 1);
    check_tensor_counts(device, 250'001);     // about 1 MiB: a shared block on Vulkan
    check_tensor_counts(device, 12'000'003);  // about 46 MiB: a block of its own on Vulkan
}

TEST_P(MemoryUsageTest, ThePeakCoversAnOpsInputsAndOutput) { check_op_counts(device); }

TEST_P(MemoryUsageTest, ReadsFromAnotherThreadSeeConsistentCounts) {
    if (simulated()) GTEST_SKIP() << "the simulator's device serves one thread";
    check_concurrent_reads(device);
}

TEST(MemoryUsage, TheCpuCountsTheKernelsScratchAsReserved) {
    Device const cpu = Device::cpu();
    // A GEMM large enough to pack panels of B (at least 16 KiB) into per-thread scratch, which is
    // kept after it; the few tensor headers alive are far less.
    auto a = Tensor<float>::full({256, 512}, 0.5f, cpu);
    auto b = Tensor<float>::full({512, 256}, 0.25f, cpu);
    MemoryUsage const before = cpu.memory_usage();
    auto c = matmul(a, b);
    MemoryUsage const after = cpu.memory_usage();
    EXPECT_GE(after.reserved_bytes - after.in_use_bytes, std::size_t{16} << 10) << after;
    EXPECT_GE(after.in_use_bytes, before.in_use_bytes + c.bytes()) << after;
}

INSTANTIATE_TEST_SUITE_P(Devices, MemoryUsageTest, ::testing::ValuesIn(device_ids(false)), param_name);
// The ctest entries of these run with RAYO_VULKAN_VALIDATION=1 (tests/CMakeLists.txt).
INSTANTIATE_TEST_SUITE_P(Vulkan, MemoryUsageTest, ::testing::ValuesIn(device_ids(true)), param_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MemoryUsageTest);

}  // namespace
}  // namespace rayo::test
