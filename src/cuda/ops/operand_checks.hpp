// The checks every op's glue makes of its tensor views before it launches anything. A dtype
// without a kernel is Unsupported (the dispatcher then runs the op on the CPU); a view smaller than
// the shape says is a ShapeError.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "dispatch/backend.hpp"
#include "rayo/error.hpp"

namespace rayo::cuda::ops {

inline void require_f32(std::string_view op, detail::TensorView const& view, std::string_view role) {
    if (view.dtype != DType::f32)
        throw Unsupported("cuda: " + std::string(op) + " runs on f32 " + std::string(role) + ", not " +
                          std::string(to_string(view.dtype)));
}

inline void require_numel(std::string_view op, detail::TensorView const& view, std::size_t n, std::string_view role,
                          bool exact) {
    if (exact ? view.numel != n : view.numel < n)
        throw ShapeError("cuda: " + std::string(op) + ": " + std::string(role) + " has " +
                         std::to_string(view.numel) + " elements, expected " + std::string(exact ? "" : "at least ") +
                         std::to_string(n));
}

}  // namespace rayo::cuda::ops
