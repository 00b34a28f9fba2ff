// layer_norm and rms_norm over the last axis.
#include <optional>
#include <string>

#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

using detail::NormOp;

namespace {

void norm_into(NormOp op, FTensor const& x, FTensor const* gamma, FTensor const* beta, float eps, FTensor const& out) {
    std::string const name = op == NormOp::layer_norm ? "layer_norm" : "rms_norm";
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
    std::size_t const rows = cols ? x.numel() / cols : 0;
    detail::dispatch(name, x.device(),
                     {detail::arg(x), gamma ? detail::arg(*gamma) : detail::no_arg(), beta ? detail::arg(*beta) : detail::no_arg()},
                     {detail::arg(out)}, [&](detail::Backend& b, auto in, auto o) {
                         b.norm(op, rows, cols, eps, in[0], in[1], in[2], o[0]);
                     });
}

FTensor norm(NormOp op, FTensor const& x, FTensor const* gamma, FTensor const* beta, float eps) {
    FTensor out = FTensor::empty(x.shape(), x.device());
    norm_into(op, x, gamma, beta, eps, out);
    return out;
}

}  // namespace

FTensor layer_norm(FTensor const& x, float eps) { return norm(NormOp::layer_norm, x, nullptr, nullptr, eps); }
void layer_norm(FTensor const& x, float eps, FTensor const& out) { norm_into(NormOp::layer_norm, x, nullptr, nullptr, eps, out); }
FTensor layer_norm(FTensor const& x, FTensor const& gamma, FTensor const& beta, float eps) {
    return norm(NormOp::layer_norm, x, &gamma, &beta, eps);
}
void layer_norm(FTensor const& x, FTensor const& gamma, FTensor const& beta, float eps, FTensor const& out) {
    norm_into(NormOp::layer_norm, x, &gamma, &beta, eps, out);
}
FTensor rms_norm(FTensor const& x, float eps) { return norm(NormOp::rms_norm, x, nullptr, nullptr, eps); }
void rms_norm(FTensor const& x, float eps, FTensor const& out) { norm_into(NormOp::rms_norm, x, nullptr, nullptr, eps, out); }
FTensor rms_norm(FTensor const& x, FTensor const& gamma, float eps) { return norm(NormOp::rms_norm, x, &gamma, nullptr, eps); }
void rms_norm(FTensor const& x, FTensor const& gamma, float eps, FTensor const& out) {
    norm_into(NormOp::rms_norm, x, &gamma, nullptr, eps, out);
}

}  // namespace rayo
