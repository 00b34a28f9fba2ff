// linear with a formed input (op::LinearInput: swiglu(x, up) or rms_norm(x)·gain) on a backend that
// does not form it inside the product's kernel: the input is formed by the backend's own swiglu or
// rms_norm into a temporary of x's shape, then multiplied by the plain linear. Backends call these
// from their matmul family with their own run/supports functions and their own temporary.
#pragma once

#include <array>
#include <span>
#include <string>

#include "dispatch/backend.hpp"
#include "dispatch/op_descriptor.hpp"

namespace rayo::detail {

// The ops of the two steps and their operands: the forming op reads x and the fourth operand into
// `formed`; the product reads `formed`, the weights and the bias.
struct LinearInputSteps {
    op::Binary swiglu{.op = Op::swiglu};
    op::Norm norm;
    op::Matmul product;
    std::array<TensorView, 3> form_in;
    TensorView formed;
    std::array<TensorView, 3> product_in;
    std::size_t form_inputs = 0;

    LinearInputSteps(op::Matmul const& d, OpViews const& v, TensorView const& formed_view)
        : norm{.op = Op::rms_norm, .eps = d.eps}, product(d), formed(formed_view) {
        product.input = op::LinearInput::x;
        TensorView absent{};
        form_in = {v.in[0], v.in[3], absent};
        form_inputs = d.input == op::LinearInput::swiglu ? 2 : 3;
        product_in = {formed, v.in[1], v.in[2]};
    }
    [[nodiscard]] OpViews form_views() const { return {std::span(form_in.data(), form_inputs), std::span(&formed, 1)}; }
    [[nodiscard]] OpViews product_views(OpViews const& v) const { return {std::span(product_in), v.out}; }
};

// `formed`: a contiguous f32 view of x's shape, whose buffer the backend holds for the two steps.
// run_op(descriptor, views) runs one op on the backend.
template <class RunOp>
void run_with_formed_input(op::Matmul const& d, OpViews const& v, TensorView const& formed, RunOp&& run_op) {
    LinearInputSteps const steps(d, v, formed);
    if (d.input == op::LinearInput::swiglu)
        run_op(steps.swiglu, steps.form_views());
    else
        run_op(steps.norm, steps.form_views());
    run_op(steps.product, steps.product_views(v));
}

// Whether the backend runs both steps (supports_op(descriptor, views)); `formed` may be any
// contiguous f32 view of x's shape.
template <class SupportsOp>
Support supports_with_formed_input(op::Matmul const& d, OpViews const& v, TensorView const& formed,
                                   SupportsOp&& supports_op) {
    if (v.in.size() < 4 || !v.in[3].present)
        return Support::no(std::string(to_string(d.op)) + ": a formed input needs its second operand");
    LinearInputSteps const steps(d, v, formed);
    Support const form = d.input == op::LinearInput::swiglu ? supports_op(steps.swiglu, steps.form_views())
                                                            : supports_op(steps.norm, steps.form_views());
    if (!form.native) return form;
    return supports_op(steps.product, steps.product_views(v));
}

// A buffer handle no backend gives out: the formed input's view while supports() is asked.
inline constexpr std::uintptr_t unbound_buffer = ~std::uintptr_t{0};

// A contiguous f32 view of x's shape over `buffer` from byte 0: where the formed input goes.
[[nodiscard]] inline TensorView formed_input_view(TensorView const& x, std::uintptr_t buffer) noexcept {
    return contiguous_view(buffer, 0, DType::f32, x.dims());
}

}  // namespace rayo::detail
