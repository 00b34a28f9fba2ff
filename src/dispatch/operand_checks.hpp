// Checks the backends' `supports` share: the element types and layouts their kernels take.
#pragma once

#include <algorithm>
#include <span>
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

[[nodiscard]] inline bool is_floating(DType t) noexcept {
    return t == DType::f32 || t == DType::f16 || t == DType::bf16;
}

// Every operand present of `views` holds `type`.
[[nodiscard]] inline bool all_of_type(std::span<TensorView const> views, DType type) noexcept {
    return std::all_of(views.begin(), views.end(), [&](TensorView const& t) { return !t.present || t.dtype == type; });
}

// The element type of the element-wise, softmax and norm kernels: the first input's, when it is
// f32, f16 or bf16 and every other operand present holds it.
[[nodiscard]] inline bool one_floating_type(OpViews const& v) noexcept {
    return is_floating(v.in[0].dtype) && all_of_type(v, v.in[0].dtype);
}

[[nodiscard]] inline Support floating_types_only(std::string_view backend, Op op) {
    return Support::no(std::string(backend) + "'s " + std::string(to_string(op)) +
                       " kernels take f32, f16 or bf16 tensors, all of one type");
}

// yes when every operand present is contiguous and of one floating type; otherwise no, saying what
// the kernels take.
[[nodiscard]] inline Support contiguous_floating(std::string_view backend, Op op, OpViews const& v) {
    if (!one_floating_type(v)) return floating_types_only(backend, op);
    if (!all_contiguous(v))
        return Support::no(std::string(backend) + "'s " + std::string(to_string(op)) +
                           " kernels take contiguous tensors");
    return Support::yes();
}

// The element-wise kernels with broadcasting: one floating type throughout, a contiguous output, and
// inputs that are contiguous or broadcast views of the output's shape (stride 0 along repeated axes).
[[nodiscard]] inline Support elementwise_floating(std::string_view backend, Op op, OpViews const& v) {
    if (!one_floating_type(v)) return floating_types_only(backend, op);
    bool ok = v.out[0].is_contiguous();
    for (TensorView const& in : v.in)
        ok = ok && (in.is_contiguous() ||
                    std::equal(in.dims().begin(), in.dims().end(), v.out[0].dims().begin(), v.out[0].dims().end()));
    if (!ok)
        return Support::no(std::string(backend) + "'s " + std::string(to_string(op)) +
                           " kernels take contiguous tensors or broadcast views of the output's shape");
    return Support::yes();
}

// The reductions and dot: contiguous inputs of one floating type, and a contiguous output of `result`
// (f32, or i64 for argmax / argmin).
[[nodiscard]] inline Support reduction_floating(std::string_view backend, Op op, OpViews const& v, DType result) {
    if (!is_floating(v.in[0].dtype) || !all_of_type(v.in, v.in[0].dtype)) return floating_types_only(backend, op);
    if (v.out[0].dtype != result)
        return Support::no(std::string(backend) + "'s " + std::string(to_string(op)) + " kernels write " +
                           std::string(to_string(result)) + " results");
    if (!all_contiguous(v))
        return Support::no(std::string(backend) + "'s " + std::string(to_string(op)) +
                           " kernels take contiguous tensors");
    return Support::yes();
}

}  // namespace rayo::detail
