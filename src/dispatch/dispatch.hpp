// Runs an op on its device's backend, or on the CPU when that backend reports Unsupported.
#pragma once

#include <functional>
#include <initializer_list>
#include <span>
#include <string_view>

#include "dispatch/backend.hpp"
#include "rayo/detail/storage.hpp"
#include "rayo/tensor.hpp"

namespace rayo::detail {

// A tensor as an op argument: where its bytes live and what they hold.
struct OpArg {
    Storage* storage = nullptr;
    std::size_t offset = 0;
    std::size_t numel = 0;
    DType dtype = DType::f32;
};

template <class T>
OpArg arg(Tensor<T> const& t) noexcept {
    return {&TensorAccess::storage(t), TensorAccess::offset(t), t.numel(), dtype_of<T>};
}
inline OpArg no_arg() noexcept { return {}; }  // an absent optional operand (numel 0)

using OpBody = std::function<void(Backend&, std::span<TensorView const> in, std::span<TensorView const> out)>;

// Calls body on the backend of `device`. If it throws Unsupported on a non-CPU backend, the op is
// logged (once per op and device), counted in rayo::stats(), and run on the CPU on host copies of
// the inputs, after which the outputs are uploaded back.
void dispatch(std::string_view op, Device device, std::initializer_list<OpArg> inputs,
              std::initializer_list<OpArg> outputs, OpBody const& body);

}  // namespace rayo::detail
