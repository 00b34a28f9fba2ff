// DLPack: rayo tensors to and from the DLManagedTensor that NumPy, PyTorch, JAX, CuPy and others
// exchange, without a copy. Include <dlpack/dlpack.h> (Debian's libdlpack-dev, DLPack 0.6 or newer)
// to read the struct; this header only names it.
#pragma once

#include "rayo/device.hpp"
#include "rayo/dtype.hpp"
#include "rayo/export.hpp"
#include "rayo/native.hpp"
#include "rayo/shape.hpp"
#include "rayo/tensor.hpp"

extern "C" {
struct DLManagedTensor;
}

namespace rayo {

namespace detail {
[[nodiscard]] RAYO_API DLManagedTensor* to_dlpack(Storage const& storage, std::size_t offset, DType dtype,
                                                  Shape const& shape);
// The storage and byte offset of the tensor a DLManagedTensor describes; its shape into `shape`.
struct DLPackView {
    std::shared_ptr<Storage> storage;
    std::size_t offset = 0;
};
[[nodiscard]] RAYO_API DLPackView from_dlpack(DLManagedTensor* managed, DType dtype, Shape& shape);
}  // namespace detail

// A DLManagedTensor over the tensor's memory (a view's own range), without a copy: the CPU as
// kDLCPU, CUDA device N as kDLCUDA N (data: the CUdeviceptr), Vulkan device N as kDLVulkan N (data:
// the VkBuffer, byte_offset: the offset in it). Compact row-major (strides null). Waits for the
// device's queued work first, so the consumer may read it on any stream or queue. The consumer
// calls its deleter once, which lets go of the tensor's memory. The element types that DLPack
// names: f32, f16, bf16, i32, i64; the block types (q4_k, ...) throw rayo::Unsupported.
template <Element T>
[[nodiscard]] DLManagedTensor* to_dlpack(Tensor<T> const& tensor) {
    return detail::to_dlpack(detail::TensorAccess::storage(tensor), detail::TensorAccess::offset(tensor), dtype_of<T>,
                             tensor.shape());
}

// A tensor over a DLManagedTensor's memory, without a copy; rayo owns it from then on and calls
// its deleter once the last tensor over it is gone and rayo's work on it has finished (also when
// from_dlpack throws). The device follows from its DLDevice (kDLCPU; kDLCUDA, kDLCUDAManaged: cuda:N;
// kDLVulkan: vulkan:N, data a VkBuffer). The data type must be T's, the layout compact row-major
// (null strides, or the row-major ones; size-1 axes may have any stride), and for a GPU the
// producer's writes finished or queued on rayo's stream (rayo::cuda_handles). A DLManagedTensor
// that to_dlpack made gives a view of the tensor it came from. rayo::Error naming the problem
// otherwise.
template <Element T>
[[nodiscard]] Tensor<T> from_dlpack(DLManagedTensor* managed) {
    Shape shape;
    detail::DLPackView view = detail::from_dlpack(managed, dtype_of<T>, shape);
    return detail::TensorAccess::make<T>(std::move(view.storage), view.offset, std::move(shape));
}

}  // namespace rayo
