// Reductions over the whole tensor or one axis.
#include <string>
#include <vector>

#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

using detail::ReduceOp;

namespace {

struct Plan {
    detail::ReduceShape shape;
    Shape result;
};

Plan plan_all(FTensor const& x) { return {{1, x.numel(), 1}, Shape{}}; }

Plan plan_axis(FTensor const& x, int axis, bool keepdim) {
    std::size_t const a = x.shape().axis(axis);
    detail::ReduceShape s;
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

std::string op_name(ReduceOp op, bool mean) { return mean ? "mean" : std::string(detail::to_string(op)); }

template <class O>
void reduce_into(ReduceOp op, bool mean, FTensor const& x, Plan const& plan, Tensor<O> const& out) {
    std::string const name = op_name(op, mean);
    if (op != ReduceOp::sum && plan.shape.extent == 0 && plan.shape.outer * plan.shape.inner != 0)
        throw ShapeError(name + " of an empty tensor (shape " + x.shape().to_string() + ") has no value");
    detail::check_out(name, out, plan.result, x, false);
    detail::dispatch(name, x.device(), {detail::arg(x)}, {detail::arg(out)},
                     [&](detail::Backend& b, auto in, auto o) { b.reduce(op, plan.shape, mean, in[0], o[0]); });
}

template <class O>
Tensor<O> reduce(ReduceOp op, bool mean, FTensor const& x, Plan const& plan) {
    auto out = Tensor<O>::empty(plan.result, x.device());
    reduce_into(op, mean, x, plan, out);
    return out;
}

}  // namespace

FTensor sum(FTensor const& x) { return reduce<float>(ReduceOp::sum, false, x, plan_all(x)); }
void sum(FTensor const& x, FTensor const& out) { reduce_into(ReduceOp::sum, false, x, plan_all(x), out); }
FTensor sum(FTensor const& x, int axis, bool keepdim) { return reduce<float>(ReduceOp::sum, false, x, plan_axis(x, axis, keepdim)); }
void sum(FTensor const& x, int axis, bool keepdim, FTensor const& out) {
    reduce_into(ReduceOp::sum, false, x, plan_axis(x, axis, keepdim), out);
}
FTensor mean(FTensor const& x) { return reduce<float>(ReduceOp::sum, true, x, plan_all(x)); }
void mean(FTensor const& x, FTensor const& out) { reduce_into(ReduceOp::sum, true, x, plan_all(x), out); }
FTensor mean(FTensor const& x, int axis, bool keepdim) { return reduce<float>(ReduceOp::sum, true, x, plan_axis(x, axis, keepdim)); }
void mean(FTensor const& x, int axis, bool keepdim, FTensor const& out) {
    reduce_into(ReduceOp::sum, true, x, plan_axis(x, axis, keepdim), out);
}
FTensor max(FTensor const& x) { return reduce<float>(ReduceOp::max, false, x, plan_all(x)); }
void max(FTensor const& x, FTensor const& out) { reduce_into(ReduceOp::max, false, x, plan_all(x), out); }
FTensor max(FTensor const& x, int axis, bool keepdim) { return reduce<float>(ReduceOp::max, false, x, plan_axis(x, axis, keepdim)); }
void max(FTensor const& x, int axis, bool keepdim, FTensor const& out) {
    reduce_into(ReduceOp::max, false, x, plan_axis(x, axis, keepdim), out);
}
FTensor min(FTensor const& x) { return reduce<float>(ReduceOp::min, false, x, plan_all(x)); }
void min(FTensor const& x, FTensor const& out) { reduce_into(ReduceOp::min, false, x, plan_all(x), out); }
FTensor min(FTensor const& x, int axis, bool keepdim) { return reduce<float>(ReduceOp::min, false, x, plan_axis(x, axis, keepdim)); }
void min(FTensor const& x, int axis, bool keepdim, FTensor const& out) {
    reduce_into(ReduceOp::min, false, x, plan_axis(x, axis, keepdim), out);
}
Tensor<std::int64_t> argmax(FTensor const& x) { return reduce<std::int64_t>(ReduceOp::argmax, false, x, plan_all(x)); }
void argmax(FTensor const& x, Tensor<std::int64_t> const& out) { reduce_into(ReduceOp::argmax, false, x, plan_all(x), out); }
Tensor<std::int64_t> argmax(FTensor const& x, int axis, bool keepdim) {
    return reduce<std::int64_t>(ReduceOp::argmax, false, x, plan_axis(x, axis, keepdim));
}
void argmax(FTensor const& x, int axis, bool keepdim, Tensor<std::int64_t> const& out) {
    reduce_into(ReduceOp::argmax, false, x, plan_axis(x, axis, keepdim), out);
}
Tensor<std::int64_t> argmin(FTensor const& x) { return reduce<std::int64_t>(ReduceOp::argmin, false, x, plan_all(x)); }
void argmin(FTensor const& x, Tensor<std::int64_t> const& out) { reduce_into(ReduceOp::argmin, false, x, plan_all(x), out); }
Tensor<std::int64_t> argmin(FTensor const& x, int axis, bool keepdim) {
    return reduce<std::int64_t>(ReduceOp::argmin, false, x, plan_axis(x, axis, keepdim));
}
void argmin(FTensor const& x, int axis, bool keepdim, Tensor<std::int64_t> const& out) {
    reduce_into(ReduceOp::argmin, false, x, plan_axis(x, axis, keepdim), out);
}

}  // namespace rayo
