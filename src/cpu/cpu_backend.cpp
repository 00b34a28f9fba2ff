#include "cpu/cpu_backend.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <variant>

#include "cpu/cpu_features.hpp"
#include "cpu/kernel_runner.hpp"
#include "cpu/ops/ops.hpp"
#include "rayo/error.hpp"
#include "rayo/settings.hpp"

namespace rayo::cpu {

namespace {

constexpr std::align_val_t buffer_alignment{64};

}  // namespace

std::string CpuBackend::name() const {
    return cpu_features().brand + " (" + std::string(to_string(cpu_arch())) + ", " + std::to_string(num_threads()) +
           " threads)";
}

std::uintptr_t CpuBackend::allocate(std::size_t bytes) {
    try {
        return reinterpret_cast<std::uintptr_t>(::operator new(std::max<std::size_t>(bytes, 1), buffer_alignment));
    } catch (std::bad_alloc const&) {
        throw OutOfMemory("cpu: cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    }
}

void CpuBackend::release(std::uintptr_t buffer) noexcept {
    ::operator delete(reinterpret_cast<void*>(buffer), buffer_alignment);
}

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
    bool const all_zero = std::all_of(static_cast<unsigned char const*>(pattern),
                                      static_cast<unsigned char const*>(pattern) + pattern_bytes,
                                      [](unsigned char c) { return c == 0; });
    if (all_zero) {
        std::memset(out, 0, bytes);
        return;
    }
    for (std::size_t i = 0; i + pattern_bytes <= bytes; i += pattern_bytes) std::memcpy(out + i, pattern, pattern_bytes);
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
