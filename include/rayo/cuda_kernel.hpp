// Kernels of one's own on rayo tensors: a kernel written with the PTX builder (rayo/ptx) launched
// on a CUDA device's tensors, queued on the device's stream in order with rayo's ops.
//
//   rayo::ptx::Kernel k("scale");                          // (see examples/cuda_kernel.cpp)
//   ...
//   rayo::launch_cuda_kernel(dev, k, {.grid = {blocks, 1, 1}, .block = {256, 1, 1}}, {x, 2.0f, n});
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "rayo/detail/storage.hpp"
#include "rayo/device.hpp"
#include "rayo/dtype.hpp"
#include "rayo/export.hpp"
#include "rayo/ptx/kernel.hpp"
#include "rayo/tensor.hpp"

namespace rayo {

// The launch's grid and block (x, y, z) and its dynamic shared memory in bytes.
struct LaunchShape {
    std::array<unsigned, 3> grid{1, 1, 1};
    std::array<unsigned, 3> block{1, 1, 1};
    unsigned shared_bytes = 0;
};

// One argument of a kernel: a tensor, passed as the device address of its first byte (a .u64 /
// .b64 / .s64 parameter), or a scalar of exactly the parameter's type: float (.f32),
// std::int32_t (.s32 / .b32), std::uint32_t (.u32 / .b32), std::int64_t (.s64 / .b64),
// std::uint64_t (.u64 / .b64). Holds a reference to the tensor for the call only.
class KernelArgument {
public:
    enum class Kind : std::uint8_t { tensor, f32, s32, u32, s64, u64 };

    template <Element T>
    KernelArgument(Tensor<T> const& t)  // NOLINT(google-explicit-constructor): an argument list
        : kind_(Kind::tensor),
          storage_(&detail::TensorAccess::storage(t)),
          offset_(detail::TensorAccess::offset(t)),
          bytes_(t.bytes()),
          dtype_(dtype_of<T>) {}
    KernelArgument(float v) : kind_(Kind::f32), bits_(std::bit_cast<std::uint32_t>(v)) {}       // NOLINT
    KernelArgument(std::int32_t v) : kind_(Kind::s32), bits_(static_cast<std::uint32_t>(v)) {}  // NOLINT
    KernelArgument(std::uint32_t v) : kind_(Kind::u32), bits_(v) {}                             // NOLINT
    KernelArgument(std::int64_t v) : kind_(Kind::s64), bits_(static_cast<std::uint64_t>(v)) {}  // NOLINT
    KernelArgument(std::uint64_t v) : kind_(Kind::u64), bits_(v) {}                             // NOLINT

    [[nodiscard]] Kind kind() const noexcept { return kind_; }
    // A tensor's storage, byte offset, size and element type (kind() == tensor).
    [[nodiscard]] detail::Storage const& storage() const noexcept { return *storage_; }
    [[nodiscard]] std::size_t offset() const noexcept { return offset_; }
    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
    [[nodiscard]] DType dtype() const noexcept { return dtype_; }
    // A scalar's bits, in the low bytes for 32-bit kinds.
    [[nodiscard]] std::uint64_t bits() const noexcept { return bits_; }

private:
    Kind kind_;
    detail::Storage const* storage_ = nullptr;
    std::size_t offset_ = 0;
    std::size_t bytes_ = 0;
    DType dtype_ = DType::f32;
    std::uint64_t bits_ = 0;
};

// Queues `kernel` on the CUDA device's stream, after the ops queued there before and before those
// queued after; it is assembled for the device (by the driver, from the PTX rayo emits for its
// target) the first time it is launched and kept. Every tensor argument counts as written by it.
// rayo::Error, naming the kernel and the argument or dimension, when the device is not a CUDA
// device, a tensor is on another device, the arguments do not match the kernel's parameters in
// number or type, a dimension is 0, the block has more than 1024 threads, grid y or z exceeds
// 65535, or the shared memory exceeds what the device allows a block; rayo::ptx::BuildError when
// the kernel does not verify. Nothing is queued then.
RAYO_API void launch_cuda_kernel(Device device, ptx::Kernel const& kernel, LaunchShape shape,
                                 std::initializer_list<KernelArgument> arguments);

}  // namespace rayo
