// Native handles (rayo/native.hpp) on the CPU: a tensor's memory as a host address, host memory
// allocated elsewhere used as a tensor without a copy (ops read and write it in place, views work,
// the owner's release runs once when the last tensor is gone), and the errors for memory that does
// not fit the tensor. Vulkan: vulkan_native_handles_test.cpp; CUDA: fake_cuda_driver_test.cpp and
// the GPU machine.
#include "support/test_support.hpp"

#include <rayo/graph.hpp>
#include <rayo/native.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace rayo::test {
namespace {

TEST(NativeHandles, CpuTensorsAreHostMemoryAndHostMemoryBecomesATensor) {
    auto const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::vector<float> owned = random_floats(2 * 6, seed, -2.0f, 2.0f);
    std::vector<float> const original = owned;
    int released = 0;
    {
        NativeMemory const memory{DeviceKind::cpu, reinterpret_cast<std::uintptr_t>(owned.data()), 0,
                                  owned.size() * sizeof(float)};
        auto tensor = std::optional(from_native_memory<float>(memory, {2, 6}, Device::cpu(), [&] { ++released; }));
        auto const& t = *tensor;
        EXPECT_EQ(t.to_vector(), original);
        // The tensor's memory is the vector's: a view starts 6 floats in, and an op writes in place.
        NativeMemory const row = native_memory(t.slice(1, 2));
        EXPECT_EQ(row.handle, reinterpret_cast<std::uintptr_t>(owned.data() + 6));
        EXPECT_EQ(row.bytes, 6 * sizeof(float));
        EXPECT_EQ(row.kind, DeviceKind::cpu);
        auto const doubled = add(t, t);
        add_into(t, t, t);
        for (std::size_t i = 0; i < owned.size(); ++i) EXPECT_EQ(owned[i], 2 * original[i]) << i;
        EXPECT_EQ(doubled.to_vector(), owned);
        auto const view = t.reshape({12});  // shares the memory: no release yet
        tensor.reset();
        EXPECT_EQ(released, 0);
        EXPECT_EQ(view.to_vector(), owned);
    }
    EXPECT_EQ(released, 1);
    EXPECT_EQ(owned, std::vector<float>(owned));  // still the caller's
}

TEST(NativeHandles, MemoryThatDoesNotFitTheTensorIsRefusedAndNothingIsReleased) {
    std::vector<float> owned(16, 1.0f);
    auto const address = reinterpret_cast<std::uintptr_t>(owned.data());
    int released = 0;
    auto const release = [&] { ++released; };
    expect_error(
        [&] {
            (void)from_native_memory<float>({DeviceKind::cpu, address, 0, 60}, {4, 4}, Device::cpu());
        },
        "needs 64 bytes, the memory holds 60");
    expect_error(
        [&] {
            (void)from_native_memory<float>({DeviceKind::cpu, address + 2, 0, 32}, {2, 2}, Device::cpu(), release);
        },
        "is not aligned to the 4-byte elements");
    expect_error(
        [&] {
            (void)from_native_memory<float>({DeviceKind::cuda, address, 0, 64}, {16}, Device::cpu());
        },
        "the memory is cuda memory");
    expect_error(
        [&] {
            (void)from_native_memory<float>({DeviceKind::cpu, 0, 0, 64}, {16}, Device::cpu());
        },
        "the memory's handle is null");
    expect_error(
        [&] {
            (void)from_native_memory<q8_0>({DeviceKind::cpu, address, 0, 64}, {1, 16}, Device::cpu());
        },
        "the last dimension must be a multiple of 32");
    expect_error([&] { (void)vulkan_handles(Device::cpu()); }, "vulkan_handles: cpu is not a vulkan device");
    expect_error([&] { (void)cuda_handles(Device::cpu()); }, "cuda_handles: cpu is not a cuda device");
    EXPECT_EQ(released, 0);
    // A 0-sized tensor over no memory at all.
    auto const empty = from_native_memory<float>({DeviceKind::cpu, 0, 0, 0}, {0, 3}, Device::cpu());
    EXPECT_EQ(empty.numel(), 0u);
}

TEST(NativeHandles, ATensorOverHostMemoryIsNotMadeInACapture) {
    std::vector<float> owned(4, 1.0f);
    auto const x = Tensor<float>::from(owned, {4});
    auto y = Tensor<float>::empty({4});
    auto graph = capture(Device::cpu(), [&] {
        expect_error(
            [&] {
                (void)from_native_memory<float>(
                    {DeviceKind::cpu, reinterpret_cast<std::uintptr_t>(owned.data()), 0, 16}, {4}, Device::cpu());
            },
            "from_native_memory");
        add_into(x, x, y);
    });
    graph.replay();
    EXPECT_EQ(y.to_vector(), std::vector<float>(4, 2.0f));
}

}  // namespace
}  // namespace rayo::test
