// Reductions over the whole tensor or one axis, of f32, f16 and bf16 tensors (f32 results).
#include <string>
#include <vector>

#include "dispatch/dispatch.hpp"
#include "ops/floating_instantiations.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

struct Plan {
    detail::op::ReduceShape shape;
    Shape result;
};

template <class T>
Plan plan_all(Tensor<T> const& x) {
    return {{1, x.numel(), 1}, Shape{}};
}

template <class T>
Plan plan_axis(Tensor<T> const& x, int axis, bool keepdim) {
    std::size_t const a = x.shape().axis(axis);
    detail::op::ReduceShape s;
    std::vector<std::int64_t> dims;
    for (std::size_t i = 0; i < x.rank(); ++i) {
        auto const d = static_cast<std::size_t>(x.shape()[i]);
        if (i < a)
            s.outer *= d;
        else if (i > a)
            s.inner *= d;
        else
            s.extent = d;
        if (i != a)
            dims.push_back(x.shape()[i]);
        else if (keepdim)
            dims.push_back(1);
    }
    return {s, Shape(std::move(dims))};
}

template <class T, class O>
void reduce_to(Op op, Tensor<T> const& x, Plan const& plan, Tensor<O> const& out) {
    std::string const name(to_string(op));
    if (op != Op::sum && op != Op::mean && plan.shape.extent == 0 && plan.shape.outer * plan.shape.inner != 0)
        throw ShapeError(name + " of an empty tensor (shape " + x.shape().to_string() + ") has no value");
    detail::check_out(name, out, plan.result, x, false);
    detail::dispatch(x.device(), detail::op::Reduce{op, plan.shape}, {detail::arg(x)}, {detail::arg(out)});
}

template <class O, class T>
Tensor<O> reduce(Op op, Tensor<T> const& x, Plan const& plan) {
    auto out = Tensor<O>::empty(plan.result, x.device());
    reduce_to(op, x, plan, out);
    return out;
}

}  // namespace

template <FloatingElement T>
FTensor sum(Tensor<T> const& x) {
    return reduce<float>(Op::sum, x, plan_all(x));
}
template <FloatingElement T>
void sum_into(Tensor<T> const& x, FTensor const& out) {
    reduce_to(Op::sum, x, plan_all(x), out);
}
template <FloatingElement T>
FTensor sum(Tensor<T> const& x, int axis, bool keepdim) {
    return reduce<float>(Op::sum, x, plan_axis(x, axis, keepdim));
}
template <FloatingElement T>
void sum_into(Tensor<T> const& x, int axis, bool keepdim, FTensor const& out) {
    reduce_to(Op::sum, x, plan_axis(x, axis, keepdim), out);
}
template <FloatingElement T>
FTensor mean(Tensor<T> const& x) {
    return reduce<float>(Op::mean, x, plan_all(x));
}
template <FloatingElement T>
void mean_into(Tensor<T> const& x, FTensor const& out) {
    reduce_to(Op::mean, x, plan_all(x), out);
}
template <FloatingElement T>
FTensor mean(Tensor<T> const& x, int axis, bool keepdim) {
    return reduce<float>(Op::mean, x, plan_axis(x, axis, keepdim));
}
template <FloatingElement T>
void mean_into(Tensor<T> const& x, int axis, bool keepdim, FTensor const& out) {
    reduce_to(Op::mean, x, plan_axis(x, axis, keepdim), out);
}
template <FloatingElement T>
FTensor max(Tensor<T> const& x) {
    return reduce<float>(Op::max, x, plan_all(x));
}
template <FloatingElement T>
void max_into(Tensor<T> const& x, FTensor const& out) {
    reduce_to(Op::max, x, plan_all(x), out);
}
template <FloatingElement T>
FTensor max(Tensor<T> const& x, int axis, bool keepdim) {
    return reduce<float>(Op::max, x, plan_axis(x, axis, keepdim));
}
template <FloatingElement T>
void max_into(Tensor<T> const& x, int axis, bool keepdim, FTensor const& out) {
    reduce_to(Op::max, x, plan_axis(x, axis, keepdim), out);
}
template <FloatingElement T>
FTensor min(Tensor<T> const& x) {
    return reduce<float>(Op::min, x, plan_all(x));
}
template <FloatingElement T>
void min_into(Tensor<T> const& x, FTensor const& out) {
    reduce_to(Op::min, x, plan_all(x), out);
}
template <FloatingElement T>
FTensor min(Tensor<T> const& x, int axis, bool keepdim) {
    return reduce<float>(Op::min, x, plan_axis(x, axis, keepdim));
}
template <FloatingElement T>
void min_into(Tensor<T> const& x, int axis, bool keepdim, FTensor const& out) {
    reduce_to(Op::min, x, plan_axis(x, axis, keepdim), out);
}
template <FloatingElement T>
Tensor<std::int64_t> argmax(Tensor<T> const& x) {
    return reduce<std::int64_t>(Op::argmax, x, plan_all(x));
}
template <FloatingElement T>
void argmax_into(Tensor<T> const& x, Tensor<std::int64_t> const& out) {
    reduce_to(Op::argmax, x, plan_all(x), out);
}
template <FloatingElement T>
Tensor<std::int64_t> argmax(Tensor<T> const& x, int axis, bool keepdim) {
    return reduce<std::int64_t>(Op::argmax, x, plan_axis(x, axis, keepdim));
}
template <FloatingElement T>
void argmax_into(Tensor<T> const& x, int axis, bool keepdim, Tensor<std::int64_t> const& out) {
    reduce_to(Op::argmax, x, plan_axis(x, axis, keepdim), out);
}
template <FloatingElement T>
Tensor<std::int64_t> argmin(Tensor<T> const& x) {
    return reduce<std::int64_t>(Op::argmin, x, plan_all(x));
}
template <FloatingElement T>
void argmin_into(Tensor<T> const& x, Tensor<std::int64_t> const& out) {
    reduce_to(Op::argmin, x, plan_all(x), out);
}
template <FloatingElement T>
Tensor<std::int64_t> argmin(Tensor<T> const& x, int axis, bool keepdim) {
    return reduce<std::int64_t>(Op::argmin, x, plan_axis(x, axis, keepdim));
}
template <FloatingElement T>
void argmin_into(Tensor<T> const& x, int axis, bool keepdim, Tensor<std::int64_t> const& out) {
    reduce_to(Op::argmin, x, plan_axis(x, axis, keepdim), out);
}

#define RAYO_INSTANTIATE_REDUCTIONS(T)                                                   \
    template FTensor sum(Tensor<T> const&);                                              \
    template void sum_into(Tensor<T> const&, FTensor const&);                            \
    template FTensor sum(Tensor<T> const&, int, bool);                                   \
    template void sum_into(Tensor<T> const&, int, bool, FTensor const&);                 \
    template FTensor mean(Tensor<T> const&);                                             \
    template void mean_into(Tensor<T> const&, FTensor const&);                           \
    template FTensor mean(Tensor<T> const&, int, bool);                                  \
    template void mean_into(Tensor<T> const&, int, bool, FTensor const&);                \
    template FTensor max(Tensor<T> const&);                                              \
    template void max_into(Tensor<T> const&, FTensor const&);                            \
    template FTensor max(Tensor<T> const&, int, bool);                                   \
    template void max_into(Tensor<T> const&, int, bool, FTensor const&);                 \
    template FTensor min(Tensor<T> const&);                                              \
    template void min_into(Tensor<T> const&, FTensor const&);                            \
    template FTensor min(Tensor<T> const&, int, bool);                                   \
    template void min_into(Tensor<T> const&, int, bool, FTensor const&);                 \
    template Tensor<std::int64_t> argmax(Tensor<T> const&);                              \
    template void argmax_into(Tensor<T> const&, Tensor<std::int64_t> const&);            \
    template Tensor<std::int64_t> argmax(Tensor<T> const&, int, bool);                   \
    template void argmax_into(Tensor<T> const&, int, bool, Tensor<std::int64_t> const&); \
    template Tensor<std::int64_t> argmin(Tensor<T> const&);                              \
    template void argmin_into(Tensor<T> const&, Tensor<std::int64_t> const&);            \
    template Tensor<std::int64_t> argmin(Tensor<T> const&, int, bool);                   \
    template void argmin_into(Tensor<T> const&, int, bool, Tensor<std::int64_t> const&);
RAYO_EACH_FLOATING(RAYO_INSTANTIATE_REDUCTIONS)
#undef RAYO_INSTANTIATE_REDUCTIONS

}  // namespace rayo
