#include "cpu/cpu_backend.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <variant>

#include "cpu/cpu_features.hpp"
#include "cpu/host_memory.hpp"
#include "cpu/kernel_runner.hpp"
#include "cpu/ops/ops.hpp"
#include "rayo/error.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif
#include "rayo/settings.hpp"

namespace rayo::cpu {

namespace {

constexpr std::align_val_t buffer_alignment{64};
// Each buffer starts with its size (what release() takes off the counts), padded to keep the
// data aligned.
constexpr std::size_t buffer_header_bytes = 64;

// Buffers of 8 MiB and more ask for transparent huge pages over their 2 MiB-aligned interior
// (Linux's "madvise" mode gives them only on request): an op that walks a large matrix by columns,
// a transposition, otherwise spends most of its time in TLB misses (docs/backends/cpu.md).
void ask_for_huge_pages([[maybe_unused]] void* p, [[maybe_unused]] std::size_t bytes) noexcept {
#if defined(__linux__)
    constexpr std::uintptr_t huge_page = std::uintptr_t{2} << 20;
    if (bytes < 4 * huge_page) return;
    auto const begin = (reinterpret_cast<std::uintptr_t>(p) + huge_page - 1) & ~(huge_page - 1);
    auto const end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(huge_page - 1);
    if (end > begin)
        (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // a hint: failure is fine
#endif
}

constinit detail::MemoryCounters host_memory_counters;

}  // namespace

detail::MemoryCounters& host_memory() noexcept { return host_memory_counters; }

std::string CpuBackend::name() const {
    return cpu_features().brand + " (" + std::string(to_string(cpu_arch())) + ", " + std::to_string(num_threads()) +
           " threads)";
}

std::uintptr_t CpuBackend::allocate(std::size_t bytes) {
    std::size_t const held = buffer_header_bytes + std::max<std::size_t>(bytes, 1);
    void* block = nullptr;
    try {
        block = ::operator new(held, buffer_alignment);
    } catch (std::bad_alloc const&) {
        throw OutOfMemory("cpu: cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    }
    ask_for_huge_pages(block, held);
    std::memcpy(block, &bytes, sizeof bytes);
    host_memory().reserved.add(held);
    host_memory().in_use.add(bytes);
    return reinterpret_cast<std::uintptr_t>(block) + buffer_header_bytes;
}

void CpuBackend::release(std::uintptr_t buffer) noexcept {
    void* const block = reinterpret_cast<void*>(buffer - buffer_header_bytes);
    std::size_t bytes = 0;
    std::memcpy(&bytes, block, sizeof bytes);
    host_memory().in_use.subtract(bytes);
    host_memory().reserved.subtract(buffer_header_bytes + std::max<std::size_t>(bytes, 1));
    ::operator delete(block, buffer_alignment);
}

MemoryUsage CpuBackend::memory_usage() const { return host_memory().usage(); }

void CpuBackend::reset_peak_memory() { host_memory().reset_peaks(); }

void CpuBackend::upload(std::uintptr_t dst, std::size_t offset, void const* src, std::size_t bytes) {
    std::memmove(reinterpret_cast<void*>(dst + offset), src, bytes);
}

void CpuBackend::download(std::uintptr_t src, std::size_t offset, void* dst, std::size_t bytes) {
    std::memmove(dst, reinterpret_cast<void const*>(src + offset), bytes);
}

void CpuBackend::copy(std::uintptr_t src, std::size_t src_offset, std::uintptr_t dst, std::size_t dst_offset,
                      std::size_t bytes) {
    std::memmove(reinterpret_cast<void*>(dst + dst_offset), reinterpret_cast<void const*>(src + src_offset), bytes);
}

void CpuBackend::fill(std::uintptr_t dst, std::size_t offset, std::size_t bytes, void const* pattern,
                      std::size_t pattern_bytes) {
    auto* out = reinterpret_cast<unsigned char*>(dst + offset);
    bool const all_zero =
        std::all_of(static_cast<unsigned char const*>(pattern),
                    static_cast<unsigned char const*>(pattern) + pattern_bytes, [](unsigned char c) { return c == 0; });
    if (all_zero) {
        std::memset(out, 0, bytes);
        return;
    }
    for (std::size_t i = 0; i + pattern_bytes <= bytes; i += pattern_bytes)
        std::memcpy(out + i, pattern, pattern_bytes);
}

detail::Support CpuBackend::supports(detail::OpDescriptor const& op, detail::OpViews const& views) const {
    KernelRunner const runner;
    return std::visit([&](auto const& d) { return ops::supports(runner, d, views); }, op);
}

void CpuBackend::run(detail::OpDescriptor const& op, detail::OpViews const& views) {
    KernelRunner runner;
    std::visit([&](auto const& d) { ops::run(runner, d, views); }, op);
}

}  // namespace rayo::cpu
