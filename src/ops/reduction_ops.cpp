// Reductions over the whole tensor or one axis.
#include <string>
#include <vector>

#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

struct Plan {
    detail::op::ReduceShape shape;
    Shape result;
};

Plan plan_all(FTensor const& x) { return {{1, x.numel(), 1}, Shape{}}; }

Plan plan_axis(FTensor const& x, int axis, bool keepdim) {
    std::size_t const a = x.shape().axis(axis);
    detail::op::ReduceShape s;
    std::vector<std::int64_t> dims;
    for (std::size_t i = 0; i < x.rank(); ++i) {
        auto const d = static_cast<std::size_t>(x.shape()[i]);
        if (i < a) s.outer *= d;
        else if (i > a) s.inner *= d;
        else s.extent = d;
        if (i != a) dims.push_back(x.shape()[i]);
        else if (keepdim) dims.push_back(1);
    }
    return {s, Shape(std::move(dims))};
}

template <class O>
void reduce_to(Op op, FTensor const& x, Plan const& plan, Tensor<O> const& out) {
    std::string const name(to_string(op));
    if (op != Op::sum && op != Op::mean && plan.shape.extent == 0 && plan.shape.outer * plan.shape.inner != 0)
        throw ShapeError(name + " of an empty tensor (shape " + x.shape().to_string() + ") has no value");
    detail::check_out(name, out, plan.result, x, false);
    detail::dispatch(x.device(), detail::op::Reduce{op, plan.shape}, {detail::arg(x)}, {detail::arg(out)});
}

template <class O>
Tensor<O> reduce(Op op, FTensor const& x, Plan const& plan) {
    auto out = Tensor<O>::empty(plan.result, x.device());
    reduce_to(op, x, plan, out);
    return out;
}

}  // namespace

FTensor sum(FTensor const& x) { return reduce<float>(Op::sum, x, plan_all(x)); }
void sum_into(FTensor const& x, FTensor const& out) { reduce_to(Op::sum, x, plan_all(x), out); }
FTensor sum(FTensor const& x, int axis, bool keepdim) { return reduce<float>(Op::sum, x, plan_axis(x, axis, keepdim)); }
void sum_into(FTensor const& x, int axis, bool keepdim, FTensor const& out) {
    reduce_to(Op::sum, x, plan_axis(x, axis, keepdim), out);
}
FTensor mean(FTensor const& x) { return reduce<float>(Op::mean, x, plan_all(x)); }
void mean_into(FTensor const& x, FTensor const& out) { reduce_to(Op::mean, x, plan_all(x), out); }
FTensor mean(FTensor const& x, int axis, bool keepdim) { return reduce<float>(Op::mean, x, plan_axis(x, axis, keepdim)); }
void mean_into(FTensor const& x, int axis, bool keepdim, FTensor const& out) {
    reduce_to(Op::mean, x, plan_axis(x, axis, keepdim), out);
}
FTensor max(FTensor const& x) { return reduce<float>(Op::max, x, plan_all(x)); }
void max_into(FTensor const& x, FTensor const& out) { reduce_to(Op::max, x, plan_all(x), out); }
FTensor max(FTensor const& x, int axis, bool keepdim) { return reduce<float>(Op::max, x, plan_axis(x, axis, keepdim)); }
void max_into(FTensor const& x, int axis, bool keepdim, FTensor const& out) {
    reduce_to(Op::max, x, plan_axis(x, axis, keepdim), out);
}
FTensor min(FTensor const& x) { return reduce<float>(Op::min, x, plan_all(x)); }
void min_into(FTensor const& x, FTensor const& out) { reduce_to(Op::min, x, plan_all(x), out); }
FTensor min(FTensor const& x, int axis, bool keepdim) { return reduce<float>(Op::min, x, plan_axis(x, axis, keepdim)); }
void min_into(FTensor const& x, int axis, bool keepdim, FTensor const& out) {
    reduce_to(Op::min, x, plan_axis(x, axis, keepdim), out);
}
Tensor<std::int64_t> argmax(FTensor const& x) { return reduce<std::int64_t>(Op::argmax, x, plan_all(x)); }
void argmax_into(FTensor const& x, Tensor<std::int64_t> const& out) { reduce_to(Op::argmax, x, plan_all(x), out); }
Tensor<std::int64_t> argmax(FTensor const& x, int axis, bool keepdim) {
    return reduce<std::int64_t>(Op::argmax, x, plan_axis(x, axis, keepdim));
}
void argmax_into(FTensor const& x, int axis, bool keepdim, Tensor<std::int64_t> const& out) {
    reduce_to(Op::argmax, x, plan_axis(x, axis, keepdim), out);
}
Tensor<std::int64_t> argmin(FTensor const& x) { return reduce<std::int64_t>(Op::argmin, x, plan_all(x)); }
void argmin_into(FTensor const& x, Tensor<std::int64_t> const& out) { reduce_to(Op::argmin, x, plan_all(x), out); }
Tensor<std::int64_t> argmin(FTensor const& x, int axis, bool keepdim) {
    return reduce<std::int64_t>(Op::argmin, x, plan_axis(x, axis, keepdim));
}
void argmin_into(FTensor const& x, int axis, bool keepdim, Tensor<std::int64_t> const& out) {
    reduce_to(Op::argmin, x, plan_axis(x, axis, keepdim), out);
}

}  // namespace rayo
