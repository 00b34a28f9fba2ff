// The Vulkan backend's device layer: enumeration, selection, memory reuse, out-of-memory,
// deferred frees, batching and concurrency. Runs on every machine with a Vulkan device (lavapipe in
// CI, with RAYO_VULKAN_VALIDATION=1 set by ctest).
#include "support/vulkan_support.hpp"

#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

namespace rayo::test {
namespace {

using VulkanDevice = VulkanTest;

TEST_F(VulkanDevice, EnumeratesEveryDeviceWithNameTypeAndMemory) {
    int expected_index = 0;
    for (Device d : Device::all()) {
        if (d.kind() != DeviceKind::vulkan) continue;
        EXPECT_EQ(d.index(), expected_index++);
        EXPECT_EQ(d.id(), "vulkan:" + std::to_string(d.index()));
        EXPECT_EQ(Device::parse(d.id()), d);
        std::string const name = d.name();
        EXPECT_NE(name.find("GiB"), std::string::npos) << name;
        EXPECT_TRUE(name.find("GPU") != std::string::npos || name.find("software") != std::string::npos) << name;
    }
}

TEST_F(VulkanDevice, BestNeverPicksASoftwareDevice) {
    if (std::getenv("RAYO_DEVICE")) GTEST_SKIP() << "RAYO_DEVICE overrides best()";
    Device const best = Device::best();
    if (best.kind() == DeviceKind::vulkan) {
        EXPECT_EQ(best.name().find("software"), std::string::npos) << best.name();
    }
    for (Device d : Device::all())
        if (d.name().find("software") != std::string::npos) {
            EXPECT_NE(best, d) << d.name();
        }
}

// f16 / bf16 element-wise, row and reduction ops on a device without 16-bit storage (the switch
// stands in for one): they run on the CPU, counted in stats() by op and device, with the results
// the device gives.
TEST_F(VulkanDevice, SixteenBitOpsWithoutSixteenBitStorageRunOnTheCpuVisibly) {
    std::vector<float> const v = random_floats(3 * 257, fresh_seed());
    std::vector<half> const hv(v.begin(), v.end());
    Tensor<half> const x = Tensor<half>::from(hv, {3, 257}, device);
    std::vector<half> const relu_native = relu(x).to_vector(), softmax_native = softmax(x).to_vector();
    float const sum_native = sum(x).item();
    vulkan::use_element16_builds(device, false);
    reset_stats();
    std::vector<half> const relu_cpu = relu(x).to_vector(), softmax_cpu = softmax(x).to_vector();
    float const sum_cpu = sum(x).item();
    Stats const s = stats();
    vulkan::use_element16_builds(device, true);
    EXPECT_EQ(s.cpu_fallbacks, 3u);
    std::string const id = device.id();
    for (std::string const op : {"relu", "softmax", "sum"})
        EXPECT_TRUE(s.fallbacks_by_op.contains(op + " on " + id)) << op << " was not counted as a fallback on " << id;
    EXPECT_EQ(relu_cpu, relu_native);
    for (std::size_t i = 0; i < hv.size(); ++i)
        EXPECT_NEAR(static_cast<float>(softmax_cpu[i]), static_cast<float>(softmax_native[i]),
                    0x1p-10f * static_cast<float>(softmax_native[i]) + 0x1p-24f)
            << i;
    EXPECT_NEAR(sum_cpu, sum_native, 1e-5f * 3 * 257 * 4);
    // Switched back: on the device again.
    reset_stats();
    (void)relu(x).to_vector();
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

TEST_F(VulkanDevice, RoundTripsBytesThroughDeviceMemory) {
    auto const v = random_floats(100'003, fresh_seed());
    auto t = Tensor<float>::from(v, {v.size()}, device);
    EXPECT_EQ(t.to_vector(), v);
    EXPECT_EQ(t.clone().to_vector(), v);
    EXPECT_EQ(t.to(Device::cpu()).to(device).to_vector(), v);
    // Views at element offsets, fills with 1-, 4- and 8-byte patterns.
    auto s = Tensor<float>::from(std::vector<float>(v.begin(), v.begin() + 100'000), {1000, 100}, device).slice(3, 7);
    EXPECT_EQ(s.to_vector(), std::vector<float>(v.begin() + 300, v.begin() + 700));
    EXPECT_EQ(Tensor<float>::full({37}, 2.5f, device).to_vector(), std::vector<float>(37, 2.5f));
    EXPECT_EQ(Tensor<float>::zeros({5}, device).to_vector(), std::vector<float>(5, 0.0f));
    std::vector<std::int32_t> ints{1, -2, 3};
    EXPECT_EQ(Tensor<std::int32_t>::from(ints, {3}, device).to_vector(), ints);
}

// An upload larger than a staging block goes through the staging blocks already held, piece by
// piece, and arrives whole.
TEST_F(VulkanDevice, LargeUploadsCycleThroughTheStagingBlocks) {
    (void)Tensor<float>::from(random_floats(1000, fresh_seed()), {1000}, device).to_vector();
    std::size_t const before = vulkan::memory_stats(device).staging_blocks;
    std::size_t const count = std::size_t{25} << 20;  // 100 MiB of floats
    auto const v = random_floats(count, fresh_seed());
    auto const t = Tensor<float>::from(v, {count}, device);
    EXPECT_LE(vulkan::memory_stats(device).staging_blocks, before) << before;
    EXPECT_TRUE(t.to_vector() == v);
}

// A tensor too large to share a block gets one of its own; freed, the block is kept and the next
// tensor of about its size takes it (instead of a new vkAllocateMemory), with its own contents.
TEST_F(VulkanDevice, KeepsFreedLargeBlocksForTheNextLargeTensor) {
    std::size_t const large = std::size_t{12} << 20;  // 48 MiB of floats: more than half a block
    { auto t = Tensor<float>::full({large}, 1.0f, device); }
    device.synchronize();
    auto const kept = vulkan::memory_stats(device);
    // Each still more than half a 64 MiB block (its own block), and at least half the kept one.
    for (std::size_t count : {large, large - 1000, large * 3 / 4}) {
        auto const v = random_floats(count, fresh_seed());
        auto t = Tensor<float>::from(v, {count}, device);
        EXPECT_EQ(vulkan::memory_stats(device).device_blocks, kept.device_blocks) << count << " floats";
        auto const back = t.to_vector();
        EXPECT_TRUE(back == v) << count << " floats";
    }
    device.synchronize();
    EXPECT_EQ(vulkan::memory_stats(device).device_blocks, kept.device_blocks);
}

TEST_F(VulkanDevice, ReusesMemoryForTenThousandTensors) {
    auto const v = random_floats(1000, fresh_seed());
    { auto warm = Tensor<float>::from(v, {v.size()}, device); }
    device.synchronize();
    auto const before = vulkan::memory_stats(device);
    for (int i = 0; i < 10'000; ++i) {
        auto t = Tensor<float>::from(v, {v.size()}, device);  // an upload: its free is deferred
        if (i % 1000 == 0) {
            EXPECT_EQ(t.to_vector(), v);
        }
    }
    device.synchronize();
    auto const after = vulkan::memory_stats(device);
    EXPECT_LE(after.device_blocks, before.device_blocks);
    EXPECT_LE(after.staging_blocks, std::max<std::size_t>(before.staging_blocks, 1));
    EXPECT_EQ(after.live_buffers, before.live_buffers);
    EXPECT_EQ(after.pending_frees, 0u);
}

// `clones` copies of a tensor of `count` floats, made and dropped in a loop faster than the device
// runs (clone() in a benchmark, a temporary per call): the device's memory may grow by 2 blocks at
// most, instead of a block every few tensors (milliseconds each from the driver).
void expect_dropped_clones_reuse_blocks(Device device, std::size_t count, int clones) {
    auto const source = Tensor<float>::from(random_floats(count, fresh_seed()), {count}, device);
    device.synchronize();
    auto const before = vulkan::memory_stats(device);
    for (int i = 0; i < clones; ++i) (void)source.clone();
    auto const last = source.clone();
    EXPECT_EQ(last.to_vector(), source.to_vector());
    EXPECT_LE(vulkan::memory_stats(device).device_blocks, before.device_blocks + 2);
}

// Tensors large enough for a block of their own: each reuses the block the previous one freed,
// once the GPU is done with it.
TEST_F(VulkanDevice, ReusesLargeBlocksOfDroppedTensors) {
    expect_dropped_clones_reuse_blocks(device, std::size_t{10} << 20, 20);  // 40 MiB
}

// Mid-size tensors sharing blocks: once no block has room, a new tensor waits for the oldest batch
// holding freed memory.
TEST_F(VulkanDevice, ReusesSharedBlocksOfDroppedTensors) {
    expect_dropped_clones_reuse_blocks(device, std::size_t{5} << 20, 40);  // 20 MiB: 2 to 3 a 64 MiB block
}

TEST_F(VulkanDevice, OutOfMemoryIsClearAndRecoverable) {
    auto const stats = vulkan::memory_stats(device);
    std::size_t const too_many = (stats.heap_bytes + (std::uint64_t{1} << 30)) / sizeof(float);
    try {
        (void)Tensor<float>::empty({too_many}, device);
        ADD_FAILURE() << "no exception for " << too_many * sizeof(float) << " bytes";
    } catch (OutOfMemory const& e) {
        std::string const what = e.what();
        EXPECT_NE(what.find(std::to_string(too_many * sizeof(float))), std::string::npos) << what;
        EXPECT_NE(what.find(std::to_string(stats.heap_bytes)), std::string::npos) << what;
    }
    // Larger than one storage binding but within the heap: rejected with both sizes named.
    if (stats.max_buffer_bytes < stats.heap_bytes) {
        std::size_t const n = stats.max_buffer_bytes / sizeof(float) + 1;
        try {
            (void)Tensor<float>::empty({n}, device);
            ADD_FAILURE() << "no exception for " << n * sizeof(float) << " bytes";
        } catch (Error const& e) {
            std::string const what = e.what();
            EXPECT_NE(what.find(std::to_string(n * sizeof(float))), std::string::npos) << what;
        }
    }
    auto const v = random_floats(4096, fresh_seed());
    EXPECT_EQ(Tensor<float>::from(v, {v.size()}, device).to_vector(), v);
    EXPECT_EQ(vulkan::memory_stats(device).live_buffers, stats.live_buffers);
}

TEST_F(VulkanDevice, ChainedOpsStayOnTheDeviceAndHonourDependencies) {
    // Each op reads the previous one's output: a missing barrier shows up as a wrong value.
    reset_stats();  // earlier tests in the same process may have counted fallbacks
    auto const v = random_floats(70'000, fresh_seed(), 0.0f, 1.0f);
    auto x = Tensor<float>::from(v, {v.size()}, device);
    auto y = x;
    for (int i = 0; i < 200; ++i) y = add(y, 1.0f);
    add_into(y, y, y);  // in place, reading what the last op wrote
    auto const got = y.to_vector();
    for (std::size_t i = 0; i < v.size(); i += 997) ASSERT_NEAR(got[i], 2.0 * (v[i] + 200.0), 1e-3) << "at " << i;
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

TEST_F(VulkanDevice, ProfileCountsEveryCommandByName) {
    // 1100 commands: more than one batch's timestamps, so the profile spans batches.
    auto const x = Tensor<float>::from(random_floats(4096, fresh_seed(), -1.0f, 1.0f), {1, 4096}, device);
    auto const gamma = Tensor<float>::from(random_floats(4096, fresh_seed(), 0.5f, 1.5f), {4096}, device);
    auto const h = Tensor<float>::empty({1, 4096}, device);
    device.synchronize();
    try {
        vulkan::set_profiling(device, true);
    } catch (Unsupported const& e) {
        GTEST_SKIP() << e.what();
    }
    for (int i = 0; i < 550; ++i) {
        rms_norm_into(x, gamma, 1e-5f, h);
        add_into(h, x, h);
    }
    vulkan::set_profiling(device, false);
    std::optional<std::string> const table = vulkan::profile_table(device);
    vulkan::set_profiling(device, true);
    (void)add(x, 1.0f);
    std::optional<std::string> const later = vulkan::profile_table(device);  // the add is counted too
    vulkan::set_profiling(device, false);
    ASSERT_TRUE(table && later);
    std::istringstream rows(*table);
    std::string line;
    std::map<std::string, std::uint64_t> counts;
    double total_ms = 0;
    while (std::getline(rows, line)) {
        std::istringstream fields(line);
        std::string name;
        std::uint64_t count = 0;
        double ms = 0;
        if (fields >> name >> count >> ms) {
            counts[name] += count;
            total_ms += ms;
        }
    }
    std::string const norm = vulkan::has_subgroup_arithmetic(device) ? "rows_subgroup" : "rows";
    EXPECT_EQ(counts[norm], 550u) << *table;
    EXPECT_EQ(counts["binary"], 550u) << *table;
    EXPECT_GT(total_ms, 0.0) << *table;
    EXPECT_NE(table->find("batches"), std::string::npos) << *table;
    EXPECT_NE(later->find("binary"), std::string::npos);
    EXPECT_NE(*later, *table);
}

TEST_F(VulkanDevice, FourThreadsShareOneDevice) {
    reset_stats();
    std::vector<std::thread> threads;
    std::vector<int> failures(4, 0);
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            auto const v = random_floats(257, static_cast<std::uint32_t>(t) + 1);
            auto x = Tensor<float>::from(v, {v.size()}, device);
            for (int i = 0; i < 1000; ++i) {
                x = mul(x, 1.0f);  // exact, so the result must equal the input
                if (i % 250 == 249 && x.to_vector() != v) ++failures[static_cast<std::size_t>(t)];
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures, std::vector<int>(4, 0));
    EXPECT_EQ(stats().ops, 4000u);
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

TEST_F(VulkanDevice, UnwrittenOpsFallBackToTheCpuVisibly) {
    // quantize to q4_k has no shader on purpose (its per-block search runs on the CPU).
    auto const v = random_floats(3 * 256, fresh_seed());
    auto x = Tensor<float>::from(v, {3, 256}, device);
    reset_stats();
    auto q = quantize<q4_k>(x);
    EXPECT_EQ(q.device(), device);
    EXPECT_EQ(stats().cpu_fallbacks, 1u);
    EXPECT_EQ(stats().fallbacks_by_op.at("quantize on " + device.id()), 1u);
    auto const want = quantize<q4_k>(x.to(Device::cpu()));
    auto const got_blocks = q.to_vector(), want_blocks = want.to_vector();
    ASSERT_EQ(got_blocks.size(), want_blocks.size());
    EXPECT_EQ(std::memcmp(got_blocks.data(), want_blocks.data(), got_blocks.size() * sizeof(q4_k)), 0);
    // The result of a fallback feeds later device ops.
    EXPECT_EQ(add(dequantize(q), 1.0f).to_vector(), add(dequantize(want), 1.0f).to_vector());
}

}  // namespace
}  // namespace rayo::test
