// The CUDA backend's native handles (rayo/native.hpp): its context and stream, device addresses,
// and device memory allocated elsewhere used as tensors.
#include <cstdio>
#include <exception>
#include <string>

#include "core/logging.hpp"
#include "cuda/cuda_backend.hpp"
#include "rayo/error.hpp"

namespace rayo::cuda {

NativeMemory CudaBackend::native_memory(std::uintptr_t buffer) const {
    return {DeviceKind::cuda, buffer, 0, 0};  // handles are device addresses
}

std::uintptr_t CudaBackend::adopt(NativeMemory const& memory) {
    std::lock_guard lock(mutex_);
    refuse_while_captured("from_native_memory");
    CUdeviceptr const address = memory.handle;
    for (auto const& [start, buffer] : buffers_)
        if (address < start + buffer.bytes && start < address + memory.bytes) {
            char text[32];
            std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(address));
            throw Error(label() + ": from_native_memory: " + std::to_string(memory.bytes) + " bytes at " + text +
                        " overlap " + (buffer.adopted ? "memory already adopted" : "a rayo tensor's memory") +
                        ": use that tensor (or a view of it) instead");
        }
    buffers_.emplace(address, Buffer{static_cast<std::size_t>(memory.bytes), drains_, false, true});
    return address;
}

void CudaBackend::forget(std::uintptr_t buffer) noexcept {
    std::lock_guard lock(mutex_);
    auto const it = buffers_.find(buffer);
    if (it == buffers_.end() || !it->second.adopted) return;
    buffers_.erase(it);
    // Work queued since the host last waited may read it. In a capture, the graph's replays may
    // use it too, which its owner answers for (docs/api.md).
    if (capture_thread_) return;
    try {
        stream_.synchronize("releasing native memory");
        ++drains_;
    } catch (std::exception const& e) {  // the fault stays for the next wait to report
        detail::log(LogLevel::error, "rayo: " + label() + ": releasing native memory: " + e.what());
    }
}

detail::DeviceBackend::NativeHandles CudaBackend::native_handles() const {
    return CudaHandles{context_.device(), context_.handle(), stream_.handle()};
}

}  // namespace rayo::cuda
