// Runs an op descriptor on its device's backend, or on the CPU when that backend does not support it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>

#include "dispatch/backend.hpp"
#include "rayo/detail/storage.hpp"
#include "rayo/tensor.hpp"

namespace rayo::detail {

// A tensor as an op operand: its storage (which the CPU fallback copies) and how the backend sees it.
struct OpArg {
    Storage* storage = nullptr;  // null: an optional operand that was not given
    TensorView view;
};

// The view of `dims` elements of `dtype` at byte `offset` of `storage`, contiguous; more than
// max_view_rank axes are seen with the leading ones merged.
[[nodiscard]] TensorView view_of(Storage const& storage, std::size_t offset, DType dtype,
                                 std::span<std::int64_t const> dims) noexcept;

template <class T>
OpArg arg(Tensor<T> const& t) noexcept {
    Storage& s = TensorAccess::storage(t);
    return {&s, view_of(s, TensorAccess::offset(t), dtype_of<T>, t.shape().dims())};
}
inline OpArg no_arg() noexcept { return {}; }

// Runs `op` on the backend of `device` when it supports the op on these operands; otherwise the
// op is logged (once per op and device), counted in rayo::stats(), and run on the CPU on host
// copies of the inputs, after which the outputs are uploaded back. On the CPU itself, an op the
// CPU backend does not support throws rayo::Unsupported. While this thread captures
// (rayo::capture), the op is recorded instead (dispatch/capture.hpp).
void dispatch(Device device, OpDescriptor const& op, std::initializer_list<OpArg> inputs,
              std::initializer_list<OpArg> outputs);

// Adds `count` ops to rayo::stats().ops (a graph's replay).
void count_ops(std::size_t count) noexcept;

}  // namespace rayo::detail
