// softmax and log_softmax along the last axis, for f32, f16 and bf16 tensors.
#include <string>

#include "dispatch/dispatch.hpp"
#include "ops/floating_instantiations.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

template <class T, class O>
void softmax_rows(Op op, Tensor<T> const& x, int axis, Tensor<O> const& out) {
    std::string const name(to_string(op));
    detail::check_same_dtype(name, "x", x, "out", out);
    if (x.rank() == 0) throw ShapeError(name + " needs at least one axis, got a rank-0 tensor");
    if (x.shape().axis(axis) != x.rank() - 1)
        throw Unsupported(name + " runs along the last axis only; axis " + std::to_string(axis) + " of shape " +
                          x.shape().to_string() + " is not the last");
    detail::check_out(name, out, x.shape(), x, true);
    detail::dispatch(x.device(), detail::op::Softmax{op}, {detail::arg(x)}, {detail::arg(out)});
}

template <class T>
Tensor<T> softmax_of(Op op, Tensor<T> const& x, int axis) {
    Tensor<T> out = Tensor<T>::empty(x.shape(), x.device());
    softmax_rows(op, x, axis, out);
    return out;
}

}  // namespace

template <FloatingElement T>
Tensor<T> softmax(Tensor<T> const& x, int axis) {
    return softmax_of(Op::softmax, x, axis);
}
template <FloatingElement T, FloatingElement O>
void softmax_into(Tensor<T> const& x, int axis, Tensor<O> const& out) {
    softmax_rows(Op::softmax, x, axis, out);
}
template <FloatingElement T>
Tensor<T> log_softmax(Tensor<T> const& x, int axis) {
    return softmax_of(Op::log_softmax, x, axis);
}
template <FloatingElement T, FloatingElement O>
void log_softmax_into(Tensor<T> const& x, int axis, Tensor<O> const& out) {
    softmax_rows(Op::log_softmax, x, axis, out);
}

#define RAYO_INSTANTIATE_ONE_TYPE(T)                   \
    template Tensor<T> softmax(Tensor<T> const&, int); \
    template Tensor<T> log_softmax(Tensor<T> const&, int);
#define RAYO_INSTANTIATE_TWO_TYPES(T, O)                                 \
    template void softmax_into(Tensor<T> const&, int, Tensor<O> const&); \
    template void log_softmax_into(Tensor<T> const&, int, Tensor<O> const&);
RAYO_EACH_FLOATING(RAYO_INSTANTIATE_ONE_TYPE)
RAYO_EACH_FLOATING_PAIR(RAYO_INSTANTIATE_TWO_TYPES)
#undef RAYO_INSTANTIATE_ONE_TYPE
#undef RAYO_INSTANTIATE_TWO_TYPES

}  // namespace rayo
