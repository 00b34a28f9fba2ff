// Native handles: what a rayo device and a tensor are to the driver underneath (the CUDA context
// and stream, the Vulkan device and queue, a tensor's device address or VkBuffer), and device
// memory allocated elsewhere used as a rayo tensor without a copy. The types are the drivers'
// handles as integers and untyped pointers, so this header needs neither cuda.h nor vulkan.h:
// cast them to the driver's types (docs/api.md, "Native handles").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "rayo/detail/storage.hpp"
#include "rayo/device.hpp"
#include "rayo/dtype.hpp"
#include "rayo/export.hpp"
#include "rayo/shape.hpp"
#include "rayo/tensor.hpp"

namespace rayo {

// A CUDA device's objects. rayo queues every op and copy on the device on `stream`, in order:
// work a caller queues there after rayo's runs after it, with no further synchronization.
struct CudaHandles {
    int device = 0;           // CUdevice (the ordinal)
    void* context = nullptr;  // CUcontext: the device's primary context
    void* stream = nullptr;   // CUstream
};

// A Vulkan device's objects. rayo records its work into command buffers that it submits in
// batches to `queue` (queue_family_index): call Device::synchronize() before other work reads
// what rayo wrote, and finish writes of one's own before a rayo op reads them.
struct VulkanHandles {
    void* instance = nullptr;         // VkInstance
    void* physical_device = nullptr;  // VkPhysicalDevice
    void* device = nullptr;           // VkDevice
    void* queue = nullptr;            // VkQueue
    std::uint32_t queue_family_index = 0;
};

// Where a tensor's bytes are. On the CPU and on CUDA, `handle` is the address of the first byte
// (a host pointer; a CUdeviceptr) and `offset` is 0; on Vulkan, `handle` is the VkBuffer and
// `offset` the first byte's offset in it. `bytes` is the tensor's size.
struct NativeMemory {
    DeviceKind kind = DeviceKind::cpu;
    std::uint64_t handle = 0;
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
};

// The driver objects of a CUDA / Vulkan device; rayo::Error when `device` is of another kind.
[[nodiscard]] RAYO_API CudaHandles cuda_handles(Device device);
[[nodiscard]] RAYO_API VulkanHandles vulkan_handles(Device device);

namespace detail {
[[nodiscard]] RAYO_API NativeMemory native_memory(Storage const& storage, std::size_t offset, std::size_t bytes);
// Checks `memory` against the tensor (dtype, shape, device) and registers it with the device's
// backend; rayo::Error naming the problem otherwise.
[[nodiscard]] RAYO_API std::shared_ptr<Storage> adopt_native_memory(Device device, NativeMemory const& memory,
                                                                    DType dtype, Shape const& shape,
                                                                    std::function<void()> release);
}  // namespace detail

// The memory a tensor views (its own bytes, a view's included). The memory stays the tensor's:
// it is valid while the tensor (or another view of its storage) lives, and rayo's queued work may
// still be writing it (see CudaHandles / VulkanHandles for the order).
template <Element T>
[[nodiscard]] NativeMemory native_memory(Tensor<T> const& tensor) {
    return detail::native_memory(detail::TensorAccess::storage(tensor), detail::TensorAccess::offset(tensor),
                                 tensor.bytes());
}

// A tensor of `shape` over memory rayo did not allocate, without a copy: a host pointer (CPU), a
// CUdeviceptr in the device's context (CUDA), or a range of a VkBuffer created on rayo's VkDevice
// with storage-buffer and transfer usage (Vulkan). `memory.bytes` must hold the shape and
// `memory.kind` name the device's kind; the address must be aligned to the element (16 bytes for
// CUDA and Vulkan, where kernels load vectors) and the Vulkan offset to the device's
// minStorageBufferOffsetAlignment. The caller keeps the memory alive; when the last tensor over it
// is gone and rayo's queued work on it has finished, rayo calls `release` (if given) once, from
// the thread dropping that tensor. Views, ops and copies treat it as any tensor.
template <Element T>
[[nodiscard]] Tensor<T> from_native_memory(NativeMemory const& memory, Shape shape, Device device,
                                           std::function<void()> release = {}) {
    auto storage = detail::adopt_native_memory(device, memory, dtype_of<T>, shape, std::move(release));
    return detail::TensorAccess::make<T>(std::move(storage), 0, std::move(shape));
}

}  // namespace rayo
