#include "cuda/memory_pool.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "dispatch/memory_counter.hpp"
#include "rayo/error.hpp"

namespace rayo::cuda {

MemoryPool::MemoryPool(Stream const& stream, std::string device_name)
    : stream_(stream), device_name_(std::move(device_name)) {
    PrimaryContext const& context = stream_.context();
    ScopedCurrent const current(context);
    Driver const& d = context.driver();
    check(d.cuDeviceGetDefaultMemPool(&pool_, context.device()), context.label() + ": cuDeviceGetDefaultMemPool");
    total_bytes_ = device_memory().total_bytes;
    // Freed memory up to a quarter of the device stays reserved for reuse (no driver allocation
    // per tensor); beyond that it goes back at the next synchronisation, so a peak does not starve
    // other users of the GPU (another process, or rayo's own Vulkan device on the same GPU).
    std::uint64_t keep = total_bytes_ / 4;
    check(d.cuMemPoolSetAttribute(pool_, CUmemPool_attribute::release_threshold, &keep),
          context.label() + ": cuMemPoolSetAttribute(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)");
}

void MemoryPool::out_of_memory(std::size_t bytes) const {
    DeviceMemoryInfo const memory = device_memory();
    PoolUsage const pool = usage();
    throw OutOfMemory(stream_.context().label() + " (" + device_name_ + "): cannot allocate " + std::to_string(bytes) +
                      " bytes: the device has " + std::to_string(memory.free_bytes) + " bytes free of " +
                      std::to_string(memory.total_bytes) + " (cuMemGetInfo); rayo's pool holds " +
                      std::to_string(pool.reserved_bytes) + " bytes, " + std::to_string(pool.used_bytes) +
                      " of them in live tensors");
}

CUdeviceptr MemoryPool::allocate(std::size_t bytes) {
    PrimaryContext const& context = stream_.context();
    ScopedCurrent const current(context);
    Driver const& d = context.driver();
    if (bytes > total_bytes_) out_of_memory(bytes);  // no need to ask the driver
    // A zero-byte request still needs a distinct address: the backend's handles are addresses.
    std::size_t const request = std::max<std::size_t>(bytes, 1);
    CUdeviceptr pointer = 0;
    CUresult result = d.cuMemAllocFromPoolAsync(&pointer, request, pool_, stream_.handle());
    if (result == CUresult::out_of_memory) {
        // The pool's free blocks may be too fragmented for this request: hand them back to the
        // device (after the frees in flight complete) and try once more.
        stream_.synchronize("allocation retry after out-of-memory");
        check(d.cuMemPoolTrimTo(pool_, 0), context.label() + ": cuMemPoolTrimTo");
        result = d.cuMemAllocFromPoolAsync(&pointer, request, pool_, stream_.handle());
    }
    if (result == CUresult::out_of_memory) out_of_memory(bytes);
    if (result != CUresult::success)
        throw_error(result, context.label() + ": cuMemAllocFromPoolAsync of " + std::to_string(bytes) + " bytes");
    return pointer;
}

void MemoryPool::free(CUdeviceptr pointer) {
    PrimaryContext const& context = stream_.context();
    ScopedCurrent const current(context);
    if (CUresult const r = context.driver().cuMemFreeAsync(pointer, stream_.handle()); r != CUresult::success)
        throw_error(r, context.label() + ": cuMemFreeAsync");
}

std::uint64_t MemoryPool::attribute(CUmemPool_attribute which) const {
    PrimaryContext const& context = stream_.context();
    ScopedCurrent const current(context);
    std::uint64_t value = 0;
    check(context.driver().cuMemPoolGetAttribute(pool_, which, &value), context.label() + ": cuMemPoolGetAttribute");
    return value;
}

PoolUsage MemoryPool::usage() const {
    return {attribute(CUmemPool_attribute::reserved_mem_current), attribute(CUmemPool_attribute::used_mem_current)};
}

MemoryUsage MemoryPool::memory_usage() const {
    // Four reads, not one snapshot: another user of the pool may allocate between them.
    return detail::consistent_usage({.in_use_bytes = attribute(CUmemPool_attribute::used_mem_current),
                                     .peak_in_use_bytes = attribute(CUmemPool_attribute::used_mem_high),
                                     .reserved_bytes = attribute(CUmemPool_attribute::reserved_mem_current),
                                     .peak_reserved_bytes = attribute(CUmemPool_attribute::reserved_mem_high)});
}

void MemoryPool::reset_peaks() {
    PrimaryContext const& context = stream_.context();
    ScopedCurrent const current(context);
    Driver const& d = context.driver();
    // Zero is the one value these attributes take: it resets them to the current counts.
    for (auto const which : {CUmemPool_attribute::used_mem_high, CUmemPool_attribute::reserved_mem_high}) {
        std::uint64_t zero = 0;
        check(d.cuMemPoolSetAttribute(pool_, which, &zero),
              context.label() + ": cuMemPoolSetAttribute (resetting a high watermark)");
    }
}

DeviceMemoryInfo MemoryPool::device_memory() const {
    PrimaryContext const& context = stream_.context();
    ScopedCurrent const current(context);
    DeviceMemoryInfo info;
    check(context.driver().cuMemGetInfo(&info.free_bytes, &info.total_bytes), context.label() + ": cuMemGetInfo");
    return info;
}

}  // namespace rayo::cuda
