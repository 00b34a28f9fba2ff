// layer_norm and rms_norm over the last axis, for f32, f16 and bf16 tensors (gamma and beta of x's
// type).
#include <string>

#include "dispatch/dispatch.hpp"
#include "ops/floating_instantiations.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

// x's affine parameters: gamma and beta [cols], or absent (nullptr).
template <class W>
struct Affine {
    Tensor<W> const* gamma = nullptr;
    Tensor<W> const* beta = nullptr;
};

template <class T, class W, class O>
void norm_rows(Op op, Tensor<T> const& x, Affine<W> affine, float eps, Tensor<O> const& out) {
    std::string const name(to_string(op));
    if (affine.gamma) detail::check_same_dtype(name, "x", x, "gamma", *affine.gamma);
    if (affine.beta) detail::check_same_dtype(name, "x", x, "beta", *affine.beta);
    detail::check_same_dtype(name, "x", x, "out", out);
    if (x.rank() == 0) throw ShapeError(name + " needs at least one axis, got a rank-0 tensor");
    auto const cols = static_cast<std::size_t>(x.shape()[x.rank() - 1]);
    if (!(eps >= 0.0f)) throw Error(name + ": eps must be >= 0, got " + std::to_string(eps));
    for (Tensor<W> const* p : {affine.gamma, affine.beta}) {
        if (!p) continue;
        detail::check_same_device(name, x, *p);
        if (p->rank() != 1 || static_cast<std::size_t>(p->shape()[0]) != cols)
            throw ShapeError(name + ": " + (p == affine.gamma ? "gamma" : "beta") + " has shape " +
                             p->shape().to_string() + ", expected [" + std::to_string(cols) +
                             "] to match the last axis of " + x.shape().to_string());
        detail::check_out(name, out, x.shape(), *p, false);
    }
    detail::check_out(name, out, x.shape(), x, true);
    detail::dispatch(x.device(), detail::op::Norm{op, eps},
                     {detail::arg(x), affine.gamma ? detail::arg(*affine.gamma) : detail::no_arg(),
                      affine.beta ? detail::arg(*affine.beta) : detail::no_arg()},
                     {detail::arg(out)});
}

template <class T, class W>
Tensor<T> norm(Op op, Tensor<T> const& x, Affine<W> affine, float eps) {
    Tensor<T> out = Tensor<T>::empty(x.shape(), x.device());
    norm_rows(op, x, affine, eps, out);
    return out;
}

}  // namespace

template <FloatingElement T>
Tensor<T> layer_norm(Tensor<T> const& x, float eps) {
    return norm(Op::layer_norm, x, Affine<T>{}, eps);
}
template <FloatingElement T, FloatingElement O>
void layer_norm_into(Tensor<T> const& x, float eps, Tensor<O> const& out) {
    norm_rows(Op::layer_norm, x, Affine<T>{}, eps, out);
}
template <FloatingElement T, FloatingElement W>
Tensor<T> layer_norm(Tensor<T> const& x, Tensor<W> const& gamma, Tensor<W> const& beta, float eps) {
    return norm(Op::layer_norm, x, Affine<W>{&gamma, &beta}, eps);
}
template <FloatingElement T, FloatingElement W, FloatingElement O>
void layer_norm_into(Tensor<T> const& x, Tensor<W> const& gamma, Tensor<W> const& beta, float eps,
                     Tensor<O> const& out) {
    norm_rows(Op::layer_norm, x, Affine<W>{&gamma, &beta}, eps, out);
}
template <FloatingElement T>
Tensor<T> rms_norm(Tensor<T> const& x, float eps) {
    return norm(Op::rms_norm, x, Affine<T>{}, eps);
}
template <FloatingElement T, FloatingElement O>
void rms_norm_into(Tensor<T> const& x, float eps, Tensor<O> const& out) {
    norm_rows(Op::rms_norm, x, Affine<T>{}, eps, out);
}
template <FloatingElement T, FloatingElement W>
Tensor<T> rms_norm(Tensor<T> const& x, Tensor<W> const& gamma, float eps) {
    return norm(Op::rms_norm, x, Affine<W>{&gamma, nullptr}, eps);
}
template <FloatingElement T, FloatingElement W, FloatingElement O>
void rms_norm_into(Tensor<T> const& x, Tensor<W> const& gamma, float eps, Tensor<O> const& out) {
    norm_rows(Op::rms_norm, x, Affine<W>{&gamma, nullptr}, eps, out);
}

#define RAYO_INSTANTIATE_ONE_TYPE(T)                        \
    template Tensor<T> layer_norm(Tensor<T> const&, float); \
    template Tensor<T> rms_norm(Tensor<T> const&, float);
#define RAYO_INSTANTIATE_TWO_TYPES(T, U)                                                        \
    template void layer_norm_into(Tensor<T> const&, float, Tensor<U> const&);                   \
    template void rms_norm_into(Tensor<T> const&, float, Tensor<U> const&);                     \
    template Tensor<T> layer_norm(Tensor<T> const&, Tensor<U> const&, Tensor<U> const&, float); \
    template Tensor<T> rms_norm(Tensor<T> const&, Tensor<U> const&, float);
#define RAYO_INSTANTIATE_THREE_TYPES(T, W, O)                                                                     \
    template void layer_norm_into(Tensor<T> const&, Tensor<W> const&, Tensor<W> const&, float, Tensor<O> const&); \
    template void rms_norm_into(Tensor<T> const&, Tensor<W> const&, float, Tensor<O> const&);
RAYO_EACH_FLOATING(RAYO_INSTANTIATE_ONE_TYPE)
RAYO_EACH_FLOATING_PAIR(RAYO_INSTANTIATE_TWO_TYPES)
RAYO_EACH_FLOATING_TRIPLE(RAYO_INSTANTIATE_THREE_TYPES)
#undef RAYO_INSTANTIATE_ONE_TYPE
#undef RAYO_INSTANTIATE_TWO_TYPES
#undef RAYO_INSTANTIATE_THREE_TYPES

}  // namespace rayo
