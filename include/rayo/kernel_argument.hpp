// KernelArgument: a tensor or a scalar passed to a kernel of one's own (rayo/cuda_kernel.hpp,
// rayo/vulkan_shader.hpp).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "rayo/detail/storage.hpp"
#include "rayo/dtype.hpp"
#include "rayo/tensor.hpp"

namespace rayo {

// One argument of a kernel of one's own: a tensor or a scalar. launch_cuda_kernel passes a tensor
// as the device address of its first byte (a .u64 / .b64 / .s64 parameter) and a scalar as a
// parameter of exactly its type: float (.f32), std::int32_t (.s32 / .b32), std::uint32_t (.u32 /
// .b32), std::int64_t (.s64 / .b64), std::uint64_t (.u64 / .b64). dispatch_vulkan_shader binds
// the tensors in order and packs the scalars in order into the push constants. Holds a reference
// to the tensor for the call only.
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

}  // namespace rayo
