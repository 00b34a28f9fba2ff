// rope: rotary position embedding of [..., seq, heads, head_dim] tensors by i32 token positions,
// one op::Rope per call (src/dispatch/op_descriptor.hpp states the operands).
#include <cmath>
#include <cstdint>
#include <string>

#include "dispatch/dispatch.hpp"
#include "ops/floating_instantiations.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

constexpr char const* name = "rope";

// x's geometry and the parameters as the descriptor holds them; every check of the call's
// operands and parameters, before anything runs.
template <class T>
detail::op::Rope describe(Tensor<T> const& x, Tensor<std::int32_t> const& positions, RopeParams const& p) {
    if (x.rank() < 3)
        throw ShapeError(std::string(name) + ": x must be [..., seq, heads, head_dim] (rank 3 or more), got shape " +
                         x.shape().to_string());
    detail::check_same_device(name, x, positions);
    std::size_t const r = x.rank();
    detail::op::Rope d;
    d.head_dim = static_cast<std::size_t>(x.shape()[r - 1]);
    d.heads = static_cast<std::size_t>(x.shape()[r - 2]);
    auto const seq = static_cast<std::size_t>(x.shape()[r - 3]);
    d.tokens = 1;
    for (std::size_t i = 0; i + 2 < r; ++i) d.tokens *= static_cast<std::size_t>(x.shape()[i]);
    if (p.n_dims < 0 || p.n_dims % 2 != 0 || static_cast<std::size_t>(p.n_dims) > d.head_dim)
        throw ShapeError(std::string(name) + ": n_dims must be even and at most head_dim = " +
                         std::to_string(d.head_dim) + " (0: the whole head), got " + std::to_string(p.n_dims));
    d.n_dims = p.n_dims == 0 ? d.head_dim : static_cast<std::size_t>(p.n_dims);
    if (d.n_dims % 2 != 0)
        throw ShapeError(std::string(name) + ": n_dims = 0 rotates the whole head, which needs an even head_dim, got " +
                         std::to_string(d.head_dim));
    d.positions = positions.numel();
    if (d.positions != seq && d.positions != d.tokens)
        throw ShapeError(std::string(name) + ": positions has " + std::to_string(d.positions) +
                         " entries; x of shape " + x.shape().to_string() + " needs seq = " + std::to_string(seq) +
                         " (shared by the leading axes) or one per token, " + std::to_string(d.tokens));
    if (!(p.freq_base > 0.0f) || !std::isfinite(p.freq_base))
        throw Error(std::string(name) + ": freq_base must be a finite number > 0, got " + std::to_string(p.freq_base));
    if (!std::isfinite(p.freq_scale))
        throw Error(std::string(name) + ": freq_scale must be finite, got " + std::to_string(p.freq_scale));
    d.halves = p.style == RopeStyle::halves;
    d.freq_base = p.freq_base;
    d.freq_scale = p.freq_scale;
    if (p.freq_factors) {
        FTensor const& f = *p.freq_factors;
        detail::check_same_device(name, x, f);
        if (f.numel() != d.n_dims / 2 || f.rank() != 1)
            throw ShapeError(std::string(name) + ": freq_factors has shape " + f.shape().to_string() + ", expected [" +
                             std::to_string(d.n_dims / 2) + "] (n_dims / 2 with n_dims = " + std::to_string(d.n_dims) +
                             ")");
        d.has_factors = true;
    }
    return d;
}

// An i32 tensor as the contiguous 1-D operand the backends read.
detail::OpArg flat(Tensor<std::int32_t> const& t) {
    detail::OpArg a = detail::arg(t);
    auto const n = static_cast<std::int64_t>(t.numel());
    a.view = detail::contiguous_view(a.view.buffer, a.view.offset, a.view.dtype, {&n, 1});
    return a;
}

}  // namespace

template <FloatingElement T>
void rope_into(Tensor<T> const& x, Tensor<std::int32_t> const& positions, RopeParams const& params,
               Tensor<T> const& out) {
    detail::op::Rope const d = describe(x, positions, params);
    detail::check_out(name, out, x.shape(), x, true);
    detail::check_out(name, out, x.shape(), positions, false);
    if (params.freq_factors) detail::check_out(name, out, x.shape(), *params.freq_factors, false);
    if (x.numel() == 0) return;
    detail::OpArg const factors = params.freq_factors ? detail::arg(*params.freq_factors) : detail::no_arg();
    detail::dispatch(x.device(), d, {detail::arg(x), flat(positions), factors}, {detail::arg(out)});
}

template <FloatingElement T>
Tensor<T> rope(Tensor<T> const& x, Tensor<std::int32_t> const& positions, RopeParams const& params) {
    Tensor<T> out = Tensor<T>::empty(x.shape(), x.device());
    rope_into(x, positions, params, out);
    return out;
}

#define RAYO_INSTANTIATE_ROPE(T)                                                                  \
    template Tensor<T> rope<T>(Tensor<T> const&, Tensor<std::int32_t> const&, RopeParams const&); \
    template void rope_into<T>(Tensor<T> const&, Tensor<std::int32_t> const&, RopeParams const&, Tensor<T> const&);
RAYO_EACH_FLOATING(RAYO_INSTANTIATE_ROPE)
#undef RAYO_INSTANTIATE_ROPE

}  // namespace rayo
