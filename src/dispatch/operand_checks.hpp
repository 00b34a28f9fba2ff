// Checks the backends' `supports` share: the element types and layouts their kernels take.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "dispatch/backend.hpp"

namespace rayo::detail {

// Every operand present is contiguous.
[[nodiscard]] inline bool all_contiguous(OpViews const& v) noexcept {
    for (auto const* list : {&v.in, &v.out})
        for (TensorView const& t : *list)
            if (t.present && !t.is_contiguous()) return false;
    return true;
}

// The element types cast and the layout ops take: f32, f16, bf16, i32.
[[nodiscard]] inline bool castable(DType t) noexcept {
    return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::i32;
}

// Every operand present holds `type`.
[[nodiscard]] inline bool all_of_type(OpViews const& v, DType type) noexcept {
    for (auto const* list : {&v.in, &v.out})
        for (TensorView const& t : *list)
            if (t.present && t.dtype != type) return false;
    return true;
}

// yes when every operand present is contiguous f32; otherwise no, saying what the kernels take.
[[nodiscard]] inline Support contiguous_f32(std::string_view backend, Op op, OpViews const& v) {
    if (!all_of_type(v, DType::f32))
        return Support::no(std::string(backend) + "'s " + std::string(to_string(op)) + " kernels take f32 tensors");
    if (!all_contiguous(v))
        return Support::no(std::string(backend) + "'s " + std::string(to_string(op)) + " kernels take contiguous tensors");
    return Support::yes();
}

// The element-wise kernels with broadcasting: f32 throughout, a contiguous output, and inputs that
// are contiguous or broadcast views of the output's shape (stride 0 along repeated axes).
[[nodiscard]] inline Support elementwise_f32(std::string_view backend, Op op, OpViews const& v) {
    if (!all_of_type(v, DType::f32))
        return Support::no(std::string(backend) + "'s " + std::string(to_string(op)) + " kernels take f32 tensors");
    bool ok = v.out[0].is_contiguous();
    for (TensorView const& in : v.in)
        ok = ok && (in.is_contiguous() || std::equal(in.dims().begin(), in.dims().end(), v.out[0].dims().begin(), v.out[0].dims().end()));
    if (!ok)
        return Support::no(std::string(backend) + "'s " + std::string(to_string(op)) +
                           " kernels take contiguous tensors or broadcast views of the output's shape");
    return Support::yes();
}

}  // namespace rayo::detail
