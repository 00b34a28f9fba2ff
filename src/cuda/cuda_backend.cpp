#include "cuda/cuda_backend.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>
#include <string>

#include "core/logging.hpp"
#include "dispatch/device_fault.hpp"
#include "rayo/error.hpp"

namespace rayo::cuda {

namespace {

DeviceProperties query(Driver const& d, CUdevice device, std::string const& label) {
    char name[256] = {};
    check(d.cuDeviceGetName(name, static_cast<int>(sizeof name - 1), device), label + ": cuDeviceGetName");
    std::size_t total_bytes = 0;
    check(d.cuDeviceTotalMem(&total_bytes, device), label + ": cuDeviceTotalMem");
    auto attribute = [&](CUdevice_attribute which, char const* what) {
        int value = 0;
        check(d.cuDeviceGetAttribute(&value, which, device), label + ": cuDeviceGetAttribute(" + what + ")");
        return value;
    };
    int const major = attribute(CUdevice_attribute::compute_capability_major, "COMPUTE_CAPABILITY_MAJOR");
    int const minor = attribute(CUdevice_attribute::compute_capability_minor, "COMPUTE_CAPABILITY_MINOR");
    int const shared =
        attribute(CUdevice_attribute::max_shared_memory_per_block_optin, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN");
    int const multiprocessors = attribute(CUdevice_attribute::multiprocessor_count, "MULTIPROCESSOR_COUNT");
    int const shared_per_multiprocessor =
        attribute(CUdevice_attribute::max_shared_memory_per_multiprocessor, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR");
    int const reserved_per_block =
        attribute(CUdevice_attribute::reserved_shared_memory_per_block, "RESERVED_SHARED_MEMORY_PER_BLOCK");
    if (!attribute(CUdevice_attribute::memory_pools_supported, "MEMORY_POOLS_SUPPORTED"))
        throw Unsupported(label + " (" + name +
                          "): the device has no stream-ordered memory pools "
                          "(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0), which rayo's CUDA backend "
                          "allocates from");
    char memory_text[32];
    std::snprintf(memory_text, sizeof memory_text, "%.1f GiB", static_cast<double>(total_bytes) / (1u << 30));
    DeviceProperties p;
    p.compute_capability = major * 10 + minor;
    p.name = std::string(name) + " (" + memory_text + ", sm_" + std::to_string(p.compute_capability) + ")";
    p.max_shared_bytes = static_cast<unsigned>(std::max(shared, 0));
    p.multiprocessor_count = multiprocessors;
    p.multiprocessor_shared = {.bytes = static_cast<unsigned>(std::max(shared_per_multiprocessor, 0)),
                               .reserved_per_block = static_cast<unsigned>(std::max(reserved_per_block, 0))};
    return p;
}

std::string cuda_label(int index) { return "cuda:" + std::to_string(index); }

}  // namespace

CudaBackend::CudaBackend(Driver const& driver, CUdevice device, int index)
    : index_(index),
      properties_(query(driver, device, cuda_label(index))),
      context_(driver, device, cuda_label(index)),
      stream_(context_),
      memory_(stream_, properties_.name),
      staging_(stream_),
      modules_(stream_, properties_.max_shared_bytes) {
    if (KernelProfile::requested()) set_profiling(true);
}

void CudaBackend::set_profiling(bool on) {
    std::lock_guard lock(mutex_);
    if (on && !profile_) profile_ = std::make_unique<KernelProfile>(context_, stream_.handle());
    profiling_ = on;
}

std::optional<std::string> CudaBackend::profile_table() {
    std::lock_guard lock(mutex_);
    if (!profile_) return std::nullopt;
    ScopedCurrent const current(context_);
    return profile_->table();
}

CudaBackend::~CudaBackend() {
    std::lock_guard lock(mutex_);
    try {
        ScopedCurrent const current(context_);
        // Tensors that outlive the backend (static ones, at exit) go back to the pool with it.
        for (auto const& [pointer, buffer] : buffers_) memory_.free(pointer);
        if (fault_record_) memory_.free(fault_record_);
        stream_.synchronize("shutting the device down");
        if (profile_ && KernelProfile::requested()) std::fputs(("rayo: " + profile_->table()).c_str(), stderr);
    } catch (DeviceError const& e) {
        // After the driver's own exit handlers have run, there is nothing left to free.
        bool const driver_gone = e.code() == static_cast<int>(CUresult::deinitialized);
        LogLevel const level = driver_gone ? LogLevel::debug : LogLevel::error;
        detail::log(level, "rayo: " + label() + ": at shutdown: " + e.what());
    } catch (std::exception const& e) {
        detail::log(LogLevel::error, "rayo: " + label() + ": at shutdown: " + e.what());
    }
}

CUdeviceptr CudaBackend::address(std::uintptr_t handle, std::size_t offset, std::size_t bytes, char const* what) const {
    auto const it = buffers_.find(handle);
    if (it == buffers_.end()) {
        char text[32];
        std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(handle));
        throw Error(label() + ": " + what + ": unknown buffer handle " + text);
    }
    std::size_t const size = it->second.bytes;
    if (offset > size || bytes > size - offset)
        throw Error(label() + ": " + what + " of " + std::to_string(bytes) + " bytes at offset " +
                    std::to_string(offset) + " exceeds the buffer's " + std::to_string(size) + " bytes");
    return handle + offset;
}

std::uintptr_t CudaBackend::allocate(std::size_t bytes) {
    std::lock_guard lock(mutex_);
    refuse_while_captured("an allocation");
    CUdeviceptr const pointer = memory_.allocate(bytes);
    try {
        // Pool memory may be reused while work queued on what it held before still runs.
        buffers_.emplace(pointer, Buffer{bytes, drains_});
    } catch (...) {
        memory_.free(pointer);
        throw;
    }
    return pointer;
}

void CudaBackend::release(std::uintptr_t handle) noexcept {
    std::lock_guard lock(mutex_);
    if (buffers_.erase(handle) == 0) return;
    if (capture_thread_) {  // a free queued now would be recorded into the graph
        try {
            released_in_capture_.push_back(handle);
        } catch (std::bad_alloc const&) {  // the memory stays in the pool's hands
            detail::log(LogLevel::error, "rayo: " + label() + ": release during a capture: out of host memory");
        }
        return;
    }
    try {
        memory_.free(handle);            // ordered after the work already enqueued that uses it
    } catch (std::exception const& e) {  // a failed context: the memory goes with it
        detail::log(LogLevel::error, "rayo: " + label() + ": release: " + e.what());
    }
}

void CudaBackend::upload(std::uintptr_t dst, std::size_t offset, void const* src, std::size_t bytes) {
    if (bytes == 0) return;
    std::lock_guard lock(mutex_);
    refuse_while_captured("an upload");
    CUdeviceptr const to = address(dst, offset, bytes, "upload");
    mark_written(dst);
    staging_.upload(to, {static_cast<std::byte const*>(src), bytes});
}

void CudaBackend::download(std::uintptr_t src, std::size_t offset, void* dst, std::size_t bytes) {
    if (bytes == 0) return;
    std::lock_guard lock(mutex_);
    refuse_while_captured("a download");
    CUdeviceptr const from = address(src, offset, bytes, "download");
    staging_.download(from, {static_cast<std::byte*>(dst), bytes});
    ++drains_;  // the download waited for the stream's last copy, so for everything before it
    raise_recorded_fault();
}

void CudaBackend::copy(std::uintptr_t src, std::size_t src_offset, std::uintptr_t dst, std::size_t dst_offset,
                       std::size_t bytes) {
    if (bytes == 0) return;
    std::lock_guard lock(mutex_);
    refuse_while_captured("a copy");
    CUdeviceptr const from = address(src, src_offset, bytes, "copy source");
    CUdeviceptr const to = address(dst, dst_offset, bytes, "copy destination");
    if (from == to) return;
    mark_written(dst);
    ScopedCurrent const current(context_);
    Driver const& d = context_.driver();
    auto copy_bytes = [&](CUdeviceptr to_address, CUdeviceptr from_address) {
        if (CUresult const r = d.cuMemcpyDtoDAsync(to_address, from_address, bytes, stream_.handle());
            r != CUresult::success)
            throw_error(r, label() + ": cuMemcpyDtoDAsync of " + std::to_string(bytes) + " bytes");
    };
    if (from >= to + bytes || to >= from + bytes) {
        copy_bytes(to, from);
        return;
    }
    // Overlapping ranges (a memmove) are not defined for cuMemcpyDtoD: go through a temporary.
    CUdeviceptr const temporary = memory_.allocate(bytes);
    try {
        copy_bytes(temporary, from);
        copy_bytes(to, temporary);
    } catch (...) {
        memory_.free(temporary);
        throw;
    }
    memory_.free(temporary);
}

void CudaBackend::fill(std::uintptr_t dst, std::size_t offset, std::size_t bytes, void const* pattern,
                       std::size_t pattern_bytes) {
    if (pattern_bytes != 1 && pattern_bytes != 2 && pattern_bytes != 4 && pattern_bytes != 8)
        throw Error(label() + ": fill: a pattern of " + std::to_string(pattern_bytes) +
                    " bytes (1, 2, 4 or 8 expected)");
    bytes -= bytes % pattern_bytes;  // whole patterns only, as on the CPU
    if (bytes == 0) return;
    std::array<std::byte, 8> p{};
    std::memcpy(p.data(), pattern, pattern_bytes);
    auto pattern_at = [&](std::size_t i) { return p[i % pattern_bytes]; };  // the byte at start + i

    std::lock_guard lock(mutex_);
    refuse_while_captured("a fill");
    CUdeviceptr const start = address(dst, offset, bytes, "fill");
    mark_written(dst);
    ScopedCurrent const current(context_);
    Driver const& d = context_.driver();
    CUstream const stream = stream_.handle();
    auto check_memset = [&](CUresult result, char const* call) {
        if (result != CUresult::success)
            throw_error(result, label() + ": fill of " + std::to_string(bytes) + " bytes (" + call + ")");
    };

    // Equal bytes (zeros, above all) are a byte fill at any alignment.
    auto const pattern_end = p.begin() + static_cast<std::ptrdiff_t>(pattern_bytes);
    if (std::all_of(p.begin(), pattern_end, [&](std::byte b) { return b == p[0]; })) {
        check_memset(d.cuMemsetD8Async(start, static_cast<unsigned char>(p[0]), bytes, stream), "cuMemsetD8Async");
        return;
    }
    // The memsets write 2- or 4-byte words at addresses aligned to the word: the aligned middle
    // takes the pattern rotated to where it starts, the few bytes around it go through staging.
    std::size_t const word = std::min<std::size_t>(pattern_bytes, 4);
    std::size_t const head = std::min<std::size_t>((word - start % word) % word, bytes);
    std::size_t const body = (bytes - head) / pattern_bytes * pattern_bytes;
    std::size_t const tail = bytes - head - body;
    auto upload_pattern = [&](std::size_t from, std::size_t count) {
        std::array<std::byte, 8> host{};
        for (std::size_t i = 0; i < count; ++i) host[i] = pattern_at(from + i);
        staging_.upload(start + from, {host.data(), count});
    };
    if (head) upload_pattern(0, head);
    if (body) {
        std::array<std::byte, 8> rotated{};
        for (std::size_t i = 0; i < pattern_bytes; ++i) rotated[i] = pattern_at(head + i);
        CUdeviceptr const at = start + head;
        if (pattern_bytes == 2) {
            unsigned short value = 0;
            std::memcpy(&value, rotated.data(), 2);
            check_memset(d.cuMemsetD16Async(at, value, body / 2, stream), "cuMemsetD16Async");
        } else {
            unsigned low = 0, high = 0;
            std::memcpy(&low, rotated.data(), 4);
            std::memcpy(&high, rotated.data() + (pattern_bytes == 8 ? 4 : 0), 4);
            if (low == high) {
                check_memset(d.cuMemsetD32Async(at, low, body / 4, stream), "cuMemsetD32Async");
            } else {  // an 8-byte pattern: each half as a column of one word with a pitch of 8 bytes
                check_memset(d.cuMemsetD2D32Async(at, 8, low, 1, body / 8, stream), "cuMemsetD2D32Async");
                check_memset(d.cuMemsetD2D32Async(at + 4, 8, high, 1, body / 8, stream), "cuMemsetD2D32Async");
            }
        }
    }
    if (tail) upload_pattern(head + body, tail);
}

void CudaBackend::synchronize() {
    std::lock_guard lock(mutex_);
    refuse_while_captured("synchronize()");
    stream_.synchronize("synchronize");
    ++drains_;
    raise_recorded_fault();
}

CUdeviceptr CudaBackend::fault_record() {
    if (!fault_record_) {
        CUdeviceptr const record = memory_.allocate(detail::device_fault_record_bytes);
        if (CUresult const r =
                context_.driver().cuMemsetD8Async(record, 0, detail::device_fault_record_bytes, stream_.handle());
            r != CUresult::success) {
            memory_.free(record);
            throw_error(r, label() + ": clearing the fault record");
        }
        fault_record_ = record;
    }
    fault_pending_ = true;
    return fault_record_;
}

void CudaBackend::raise_recorded_fault() {
    if (!fault_pending_) return;
    fault_pending_ = false;
    detail::DeviceFaultRecord record{};
    staging_.download(fault_record_, std::as_writable_bytes(std::span(record)));
    if (!detail::raised(record)) return;
    ScopedCurrent const current(context_);
    check(context_.driver().cuMemsetD8Async(fault_record_, 0, detail::device_fault_record_bytes, stream_.handle()),
          label() + ": clearing the fault record");
    throw detail::device_fault_error(record, label());
}

void CudaBackend::mark_written(std::uintptr_t handle) noexcept {
    if (auto const it = buffers_.find(handle); it != buffers_.end()) {
        it->second.written = drains_;
        if (capture_thread_) it->second.written_in_capture = true;
    }
}

bool CudaBackend::settled(std::uintptr_t handle) const noexcept {
    auto const it = buffers_.find(handle);
    // A graph's launch waits for everything queued before it: inside a capture only the graph's
    // own earlier ops can still be writing a buffer when its kernels start early.
    if (capture_thread_) return it != buffers_.end() && !it->second.written_in_capture;
    return it != buffers_.end() && it->second.written < drains_;
}

MemoryUsage CudaBackend::memory_usage() const {
    std::lock_guard lock(mutex_);
    return memory_.memory_usage();
}

void CudaBackend::reset_peak_memory() {
    std::lock_guard lock(mutex_);
    memory_.reset_peaks();
}

MemoryStats CudaBackend::memory_stats() const {
    std::lock_guard lock(mutex_);
    return {buffers_.size(), memory_.usage(), memory_.device_memory()};
}

}  // namespace rayo::cuda
