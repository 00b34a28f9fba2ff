// Validation shared by the ops: every check runs before anything is written.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "rayo/error.hpp"
#include "rayo/tensor.hpp"

namespace rayo::detail {

template <class T, class U>
void check_same_device(std::string_view op, Tensor<T> const& a, Tensor<U> const& b) {
    if (a.device() != b.device())
        throw Error(std::string(op) + ": tensors are on different devices (" + a.device().id() + " and " +
                    b.device().id() + "); move one with .to(device)");
}

// `operand` holds the element type of `reference` (the op's first operand, x or a): one call takes
// one element type, and another is a DTypeError naming the op and both types.
template <class T, class U>
void check_same_dtype(std::string_view op, std::string_view reference_name, Tensor<T> const&,
                      std::string_view operand_name, Tensor<U> const&) {
    if constexpr (!std::is_same_v<T, U>)
        throw DTypeError(std::string(op) + ": " + std::string(operand_name) + " is " +
                         std::string(to_string(dtype_of<U>)) + " but " + std::string(reference_name) + " is " +
                         std::string(to_string(dtype_of<T>)) +
                         "; the tensors of one call hold one element type (convert with rayo::cast)");
}

template <class T, class U>
void check_same_shape(std::string_view op, Tensor<T> const& a, Tensor<U> const& b) {
    if (a.shape() != b.shape())
        throw ShapeError(std::string(op) + ": shapes differ: " + a.shape().to_string() + " and " +
                         b.shape().to_string());
}

// True when the two tensors' bytes overlap in the same storage.
template <class T, class U>
bool overlaps(Tensor<T> const& a, Tensor<U> const& b) {
    if (&TensorAccess::storage(a) != &TensorAccess::storage(b)) return false;
    std::size_t const a0 = TensorAccess::offset(a), b0 = TensorAccess::offset(b);
    return a0 < b0 + b.bytes() && b0 < a0 + a.bytes() && a.bytes() && b.bytes();
}

// `out` must have the result's shape, sit on the inputs' device, and either be exactly an input
// (when in_place_ok) or not overlap it at all.
template <class O, class T>
void check_out(std::string_view op, Tensor<O> const& out, Shape const& shape, Tensor<T> const& input,
               bool in_place_ok) {
    if (out.device() != input.device())
        throw Error(std::string(op) + ": out is on " + out.device().id() + " but the inputs are on " +
                    input.device().id());
    if (out.shape() != shape)
        throw ShapeError(std::string(op) + ": out has shape " + out.shape().to_string() + ", the result has shape " +
                         shape.to_string());
    if (!overlaps(out, input)) return;
    bool const same = TensorAccess::offset(out) == TensorAccess::offset(input) && out.bytes() == input.bytes();
    if (!(in_place_ok && same))
        throw Error(std::string(op) + (in_place_ok
                                           ? ": out partially overlaps an input (it may only be the input itself)"
                                           : ": out overlaps an input; this op cannot run in place"));
}

}  // namespace rayo::detail
