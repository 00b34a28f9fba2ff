// What Device::memory_usage() must say on every device, as checks the device tests call
// (memory_usage_test.cpp on each device present and the PTX simulator's, fake_cuda_driver_test.cpp
// on the CUDA backend over the fake driver).
#pragma once

#include <gtest/gtest.h>
#include <rayo/rayo.hpp>

#include <atomic>
#include <cstddef>
#include <ostream>
#include <thread>
#include <vector>

namespace rayo {
inline std::ostream& operator<<(std::ostream& os, MemoryUsage const& u) {
    return os << "{in use " << u.in_use_bytes << " (peak " << u.peak_in_use_bytes << "), reserved " << u.reserved_bytes
              << " (peak " << u.peak_reserved_bytes << ")}";
}
}  // namespace rayo

namespace rayo::test {

// The invariants of every snapshot.
inline void expect_consistent(MemoryUsage const& u) {
    EXPECT_GE(u.peak_in_use_bytes, u.in_use_bytes) << u;
    EXPECT_GE(u.reserved_bytes, u.in_use_bytes) << u;
    EXPECT_GE(u.peak_reserved_bytes, u.reserved_bytes) << u;
    EXPECT_GE(u.peak_reserved_bytes, u.peak_in_use_bytes) << u;
}

// The usage once everything queued has finished (GPU backends free a dropped tensor's memory when
// the work that uses it is done).
inline MemoryUsage settled_usage(Device device) {
    device.synchronize();
    MemoryUsage const u = device.memory_usage();
    expect_consistent(u);
    return u;
}

// A tensor of `elements` floats raises in use by at least its bytes and the peak with it; dropped,
// in use comes back down and the peak stays; reset_peak_memory() brings the peaks to the current
// values.
inline void check_tensor_counts(Device device, std::size_t elements) {
    SCOPED_TRACE(device.id() + ", a tensor of " + std::to_string(elements * sizeof(float)) + " bytes");
    std::size_t const bytes = elements * sizeof(float);
    MemoryUsage const before = settled_usage(device);
    MemoryUsage with;
    {
        auto t = Tensor<float>::full({elements}, 1.5f, device);
        with = settled_usage(device);
        EXPECT_GE(with.in_use_bytes, before.in_use_bytes + bytes) << "before " << before << ", with " << with;
        EXPECT_GE(with.peak_in_use_bytes, before.in_use_bytes + bytes) << with;
        EXPECT_GE(with.reserved_bytes, before.in_use_bytes + bytes) << with;
        EXPECT_EQ(t.slice(0, 1).to_vector(), std::vector<float>{1.5f});
    }
    MemoryUsage const after = settled_usage(device);
    EXPECT_LE(after.in_use_bytes + bytes, with.in_use_bytes) << "with " << with << ", after " << after;
    EXPECT_GE(after.peak_in_use_bytes, with.in_use_bytes) << "a free must not lower the peak: " << after;
    EXPECT_GE(after.peak_reserved_bytes, with.reserved_bytes) << after;

    device.reset_peak_memory();
    MemoryUsage const reset = settled_usage(device);
    EXPECT_EQ(reset.peak_in_use_bytes, reset.in_use_bytes) << reset;
    EXPECT_EQ(reset.peak_reserved_bytes, reset.reserved_bytes) << reset;
    EXPECT_LT(reset.peak_in_use_bytes, with.in_use_bytes) << reset;
}

// The peak covers everything alive at once: an op's inputs and its output.
inline void check_op_counts(Device device) {
    SCOPED_TRACE(device.id());
    constexpr std::size_t rows = 96, cols = 80, bytes = 3 * rows * cols * sizeof(float);
    device.reset_peak_memory();
    MemoryUsage const before = settled_usage(device);
    {
        auto a = Tensor<float>::full({rows, cols}, 0.5f, device);
        auto b = Tensor<float>::full({rows, cols}, 0.25f, device);
        auto c = add(a, b);  // its values are the op tests' business (the fake CUDA driver computes nothing)
        MemoryUsage const with = settled_usage(device);
        EXPECT_GE(with.in_use_bytes, before.in_use_bytes + bytes) << "before " << before << ", with " << with;
    }
    EXPECT_GE(settled_usage(device).peak_in_use_bytes, before.in_use_bytes + bytes);
}

// Threads making and dropping tensors while another reads the counts: every snapshot consistent.
inline void check_concurrent_reads(Device device) {
    SCOPED_TRACE(device.id());
    std::atomic<bool> done{false};
    std::atomic<int> inconsistent{0};
    std::thread reader([&] {
        while (!done.load()) {
            MemoryUsage const u = device.memory_usage();
            if (u.peak_in_use_bytes < u.in_use_bytes || u.reserved_bytes < u.in_use_bytes ||
                u.peak_reserved_bytes < u.reserved_bytes || u.peak_reserved_bytes < u.peak_in_use_bytes)
                inconsistent.fetch_add(1);
        }
    });
    std::vector<std::thread> writers;
    for (int w = 0; w < 2; ++w)
        writers.emplace_back([&, w] {
            for (std::size_t i = 0; i < 50; ++i) {
                auto t = Tensor<float>::zeros({1000 * (i + 1) + static_cast<std::size_t>(w)}, device);
                (void)t;
            }
        });
    for (auto& t : writers) t.join();
    done.store(true);
    reader.join();
    EXPECT_EQ(inconsistent.load(), 0);
    expect_consistent(settled_usage(device));
}

}  // namespace rayo::test
