// softmax and log_softmax along the last axis.
#include <string>

#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

void softmax_into(bool log, FTensor const& x, int axis, FTensor const& out) {
    char const* name = log ? "log_softmax" : "softmax";
    if (x.rank() == 0) throw ShapeError(std::string(name) + " needs at least one axis, got a rank-0 tensor");
    if (x.shape().axis(axis) != x.rank() - 1)
        throw Unsupported(std::string(name) + " runs along the last axis only; axis " + std::to_string(axis) +
                          " of shape " + x.shape().to_string() + " is not the last");
    detail::check_out(name, out, x.shape(), x, true);
    std::size_t const cols = static_cast<std::size_t>(x.shape()[x.rank() - 1]);
    std::size_t const rows = cols ? x.numel() / cols : 0;
    detail::dispatch(name, x.device(), {detail::arg(x)}, {detail::arg(out)},
                     [&](detail::Backend& b, auto in, auto o) { b.softmax(rows, cols, log, in[0], o[0]); });
}

}  // namespace

FTensor softmax(FTensor const& x, int axis) {
    FTensor out = FTensor::empty(x.shape(), x.device());
    softmax_into(false, x, axis, out);
    return out;
}
void softmax(FTensor const& x, int axis, FTensor const& out) { softmax_into(false, x, axis, out); }
FTensor log_softmax(FTensor const& x, int axis) {
    FTensor out = FTensor::empty(x.shape(), x.device());
    softmax_into(true, x, axis, out);
    return out;
}
void log_softmax(FTensor const& x, int axis, FTensor const& out) { softmax_into(true, x, axis, out); }

}  // namespace rayo
