// layer_norm and rms_norm over the last axis.
#include <optional>
#include <string>

#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

void norm_rows(Op op, FTensor const& x, FTensor const* gamma, FTensor const* beta, float eps, FTensor const& out) {
    std::string const name(to_string(op));
    if (x.rank() == 0) throw ShapeError(name + " needs at least one axis, got a rank-0 tensor");
    auto const cols = static_cast<std::size_t>(x.shape()[x.rank() - 1]);
    if (!(eps >= 0.0f)) throw Error(name + ": eps must be >= 0, got " + std::to_string(eps));
    for (FTensor const* p : {gamma, beta}) {
        if (!p) continue;
        detail::check_same_device(name, x, *p);
        if (p->rank() != 1 || static_cast<std::size_t>(p->shape()[0]) != cols)
            throw ShapeError(name + ": " + (p == gamma ? "gamma" : "beta") + " has shape " + p->shape().to_string() +
                             ", expected [" + std::to_string(cols) + "] to match the last axis of " +
                             x.shape().to_string());
        detail::check_out(name, out, x.shape(), *p, false);
    }
    detail::check_out(name, out, x.shape(), x, true);
    detail::dispatch(x.device(), detail::op::Norm{op, eps},
                     {detail::arg(x), gamma ? detail::arg(*gamma) : detail::no_arg(), beta ? detail::arg(*beta) : detail::no_arg()},
                     {detail::arg(out)});
}

FTensor norm(Op op, FTensor const& x, FTensor const* gamma, FTensor const* beta, float eps) {
    FTensor out = FTensor::empty(x.shape(), x.device());
    norm_rows(op, x, gamma, beta, eps, out);
    return out;
}

}  // namespace

FTensor layer_norm(FTensor const& x, float eps) { return norm(Op::layer_norm, x, nullptr, nullptr, eps); }
void layer_norm_into(FTensor const& x, float eps, FTensor const& out) { norm_rows(Op::layer_norm, x, nullptr, nullptr, eps, out); }
FTensor layer_norm(FTensor const& x, FTensor const& gamma, FTensor const& beta, float eps) {
    return norm(Op::layer_norm, x, &gamma, &beta, eps);
}
void layer_norm_into(FTensor const& x, FTensor const& gamma, FTensor const& beta, float eps, FTensor const& out) {
    norm_rows(Op::layer_norm, x, &gamma, &beta, eps, out);
}
FTensor rms_norm(FTensor const& x, float eps) { return norm(Op::rms_norm, x, nullptr, nullptr, eps); }
void rms_norm_into(FTensor const& x, float eps, FTensor const& out) { norm_rows(Op::rms_norm, x, nullptr, nullptr, eps, out); }
FTensor rms_norm(FTensor const& x, FTensor const& gamma, float eps) { return norm(Op::rms_norm, x, &gamma, nullptr, eps); }
void rms_norm_into(FTensor const& x, FTensor const& gamma, float eps, FTensor const& out) {
    norm_rows(Op::rms_norm, x, &gamma, nullptr, eps, out);
}

}  // namespace rayo
