// Device memory for tensors: stream-ordered allocations from the device's default memory pool.
// Its release threshold is raised to "never", so memory a tensor frees goes back to the pool and
// the next allocation reuses it instead of a trip through the driver's page allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cuda/stream.hpp"
#include "rayo/device.hpp"

namespace rayo::cuda {

struct PoolUsage {
    std::uint64_t reserved_bytes = 0;  // device memory the pool holds
    std::uint64_t used_bytes = 0;      // of which handed out to live allocations
};

struct DeviceMemoryInfo {
    std::size_t free_bytes = 0;  // cuMemGetInfo: free on the device (the pool's reserve counts as used)
    std::size_t total_bytes = 0;
};

// Not thread-safe: the backend's device mutex guards it.
class MemoryPool {
public:
    // Allocations and frees are ordered on `stream`. `device_name` is for error messages.
    MemoryPool(Stream const& stream, std::string device_name);
    MemoryPool(MemoryPool const&) = delete;
    MemoryPool& operator=(MemoryPool const&) = delete;

    // At least one byte. Throws rayo::OutOfMemory naming the request, the device's free and total
    // memory and the pool's state; the pool stays usable after that.
    [[nodiscard]] CUdeviceptr allocate(std::size_t bytes);
    // Returns the memory to the pool once the work enqueued before this call has finished.
    void free(CUdeviceptr pointer);

    [[nodiscard]] PoolUsage usage() const;
    // The pool's counts and high watermarks (CU_MEMPOOL_ATTR_{USED,RESERVED}_MEM_{CURRENT,HIGH}).
    [[nodiscard]] MemoryUsage memory_usage() const;
    // Restarts both high watermarks from the current counts.
    void reset_peaks();
    [[nodiscard]] DeviceMemoryInfo device_memory() const;

private:
    [[nodiscard]] std::uint64_t attribute(CUmemPool_attribute which) const;

    [[noreturn]] void out_of_memory(std::size_t bytes) const;

    Stream const& stream_;
    std::string device_name_;
    CUmemoryPool pool_ = nullptr;
    std::size_t total_bytes_ = 0;
};

}  // namespace rayo::cuda
