// softmax and log_softmax along the last axis.
#include <string>

#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

void softmax_rows(Op op, FTensor const& x, int axis, FTensor const& out) {
    std::string const name(to_string(op));
    if (x.rank() == 0) throw ShapeError(name + " needs at least one axis, got a rank-0 tensor");
    if (x.shape().axis(axis) != x.rank() - 1)
        throw Unsupported(name + " runs along the last axis only; axis " + std::to_string(axis) +
                          " of shape " + x.shape().to_string() + " is not the last");
    detail::check_out(name, out, x.shape(), x, true);
    detail::dispatch(x.device(), detail::op::Softmax{op}, {detail::arg(x)}, {detail::arg(out)});
}

}  // namespace

FTensor softmax(FTensor const& x, int axis) {
    FTensor out = FTensor::empty(x.shape(), x.device());
    softmax_rows(Op::softmax, x, axis, out);
    return out;
}
void softmax_into(FTensor const& x, int axis, FTensor const& out) { softmax_rows(Op::softmax, x, axis, out); }
FTensor log_softmax(FTensor const& x, int axis) {
    FTensor out = FTensor::empty(x.shape(), x.device());
    softmax_rows(Op::log_softmax, x, axis, out);
    return out;
}
void log_softmax_into(FTensor const& x, int axis, FTensor const& out) { softmax_rows(Op::log_softmax, x, axis, out); }

}  // namespace rayo
