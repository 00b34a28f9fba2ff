// Byte counts with their high watermarks, updated and read from any thread without a lock: the
// bookkeeping behind Device::memory_usage for the backends that count their own allocations (the
// CPU's and Vulkan's; CUDA's pool counts for itself, read through consistent_usage too).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>

#include "rayo/device.hpp"

namespace rayo::detail {

// A snapshot read count by count, made to keep MemoryUsage's invariants: counts read while an
// allocation races the reads may show one updated and not the other, so each peak is raised to
// its current value, and reserved to in use.
[[nodiscard]] inline MemoryUsage consistent_usage(MemoryUsage u) noexcept {
    u.peak_in_use_bytes = std::max(u.peak_in_use_bytes, u.in_use_bytes);
    u.reserved_bytes = std::max(u.reserved_bytes, u.in_use_bytes);
    u.peak_reserved_bytes = std::max({u.peak_reserved_bytes, u.reserved_bytes, u.peak_in_use_bytes});
    return u;
}

class MemoryCounter {
public:
    void add(std::size_t bytes) noexcept {
        std::size_t const now = current_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
        std::size_t seen = peak_.load(std::memory_order_relaxed);
        while (now > seen && !peak_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
        }
    }
    void subtract(std::size_t bytes) noexcept { current_.fetch_sub(bytes, std::memory_order_relaxed); }

    [[nodiscard]] std::size_t current() const noexcept { return current_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::size_t peak() const noexcept { return peak_.load(std::memory_order_relaxed); }
    // The peak restarts from the current count.
    void reset_peak() noexcept { peak_.store(current(), std::memory_order_relaxed); }

private:
    std::atomic<std::size_t> current_{0};
    std::atomic<std::size_t> peak_{0};
};

// The two counts of rayo::MemoryUsage. Every byte added to in_use must be inside memory already
// added to reserved.
struct MemoryCounters {
    MemoryCounter in_use;
    MemoryCounter reserved;

    [[nodiscard]] MemoryUsage usage() const noexcept {
        return consistent_usage({.in_use_bytes = in_use.current(),
                                 .peak_in_use_bytes = in_use.peak(),
                                 .reserved_bytes = reserved.current(),
                                 .peak_reserved_bytes = reserved.peak()});
    }
    void reset_peaks() noexcept {
        in_use.reset_peak();
        reserved.reset_peak();
    }
};

}  // namespace rayo::detail
