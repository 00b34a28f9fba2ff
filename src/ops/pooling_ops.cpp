// max_pool2d and avg_pool2d over [N, C, H, W] images (rank 3: [C, H, W]), one op::Pool2d per call.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dispatch/dispatch.hpp"
#include "ops/floating_instantiations.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

std::string pair_text(std::array<int, 2> v) {
    std::string text(1, '(');
    text.append(std::to_string(v[0])).append(", ").append(std::to_string(v[1])).push_back(')');
    return text;
}

// The pool's geometry: every check of x's shape and the parameters, before anything runs.
template <class T>
detail::op::Pool2d describe(Op op, Tensor<T> const& x, Pool2dParams const& p) {
    std::string const name(to_string(op));
    if (x.rank() != 3 && x.rank() != 4)
        throw ShapeError(name + ": x must be [N, C, H, W] or [C, H, W], got shape " + x.shape().to_string());
    std::array<int, 2> const stride = p.stride.value_or(p.kernel);
    if (p.kernel[0] <= 0 || p.kernel[1] <= 0)
        throw ShapeError(name + ": the kernel must be positive, got " + pair_text(p.kernel));
    if (stride[0] <= 0 || stride[1] <= 0)
        throw ShapeError(name + ": the stride must be positive, got " + pair_text(stride));
    for (int i = 0; i < 2; ++i)
        if (p.padding[i] < 0 || p.padding[i] > p.kernel[i] / 2)
            throw ShapeError(name + ": the padding must be between 0 and half the kernel, got padding " +
                             pair_text(p.padding) + " for kernel " + pair_text(p.kernel));
    std::size_t const r = x.rank();
    detail::op::Pool2d d{op};
    d.h = static_cast<std::size_t>(x.shape()[r - 2]);
    d.w = static_cast<std::size_t>(x.shape()[r - 1]);
    d.planes = static_cast<std::size_t>(x.shape()[r - 3]) * (r == 4 ? static_cast<std::size_t>(x.shape()[0]) : 1);
    if (d.h == 0 || d.w == 0)
        throw ShapeError(name + ": the images of x " + x.shape().to_string() +
                         " are empty (H or W is 0); only N and C may be 0");
    std::array<std::int64_t, 2> const padded{static_cast<std::int64_t>(d.h) + 2 * p.padding[0],
                                             static_cast<std::int64_t>(d.w) + 2 * p.padding[1]};
    if (padded[0] < p.kernel[0] || padded[1] < p.kernel[1])
        throw ShapeError(name + ": kernel " + pair_text(p.kernel) + " is larger than the padded input (" +
                         std::to_string(padded[0]) + ", " + std::to_string(padded[1]) + ") of x " +
                         x.shape().to_string() + " with padding " + pair_text(p.padding) +
                         ": the output would be empty");
    d.kh = static_cast<std::size_t>(p.kernel[0]);
    d.kw = static_cast<std::size_t>(p.kernel[1]);
    d.stride_h = static_cast<std::size_t>(stride[0]);
    d.stride_w = static_cast<std::size_t>(stride[1]);
    d.pad_h = static_cast<std::size_t>(p.padding[0]);
    d.pad_w = static_cast<std::size_t>(p.padding[1]);
    d.oh = static_cast<std::size_t>(padded[0] - p.kernel[0]) / d.stride_h + 1;
    d.ow = static_cast<std::size_t>(padded[1] - p.kernel[1]) / d.stride_w + 1;
    d.count_include_pad = p.count_include_pad;
    return d;
}

template <class T>
Shape result_shape(Tensor<T> const& x, detail::op::Pool2d const& d) {
    std::vector<std::int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
    dims[dims.size() - 2] = static_cast<std::int64_t>(d.oh);
    dims[dims.size() - 1] = static_cast<std::int64_t>(d.ow);
    return Shape(std::move(dims));
}

template <class T>
void pool_into(Op op, Tensor<T> const& x, Pool2dParams const& params, Tensor<T> const& out) {
    detail::op::Pool2d const d = describe(op, x, params);
    detail::check_out(to_string(op), out, result_shape(x, d), x, false);
    if (out.numel() == 0) return;
    detail::dispatch(x.device(), d, {detail::arg(x)}, {detail::arg(out)});
}

template <class T>
Tensor<T> pool(Op op, Tensor<T> const& x, Pool2dParams const& params) {
    Tensor<T> out = Tensor<T>::empty(result_shape(x, describe(op, x, params)), x.device());
    pool_into(op, x, params, out);
    return out;
}

}  // namespace

template <FloatingElement T>
Tensor<T> max_pool2d(Tensor<T> const& x, Pool2dParams const& params) {
    return pool(Op::max_pool2d, x, params);
}
template <FloatingElement T>
void max_pool2d_into(Tensor<T> const& x, Pool2dParams const& params, Tensor<T> const& out) {
    pool_into(Op::max_pool2d, x, params, out);
}
template <FloatingElement T>
Tensor<T> avg_pool2d(Tensor<T> const& x, Pool2dParams const& params) {
    return pool(Op::avg_pool2d, x, params);
}
template <FloatingElement T>
void avg_pool2d_into(Tensor<T> const& x, Pool2dParams const& params, Tensor<T> const& out) {
    pool_into(Op::avg_pool2d, x, params, out);
}

#define RAYO_INSTANTIATE_POOL(T)                                                               \
    template Tensor<T> max_pool2d<T>(Tensor<T> const&, Pool2dParams const&);                   \
    template void max_pool2d_into<T>(Tensor<T> const&, Pool2dParams const&, Tensor<T> const&); \
    template Tensor<T> avg_pool2d<T>(Tensor<T> const&, Pool2dParams const&);                   \
    template void avg_pool2d_into<T>(Tensor<T> const&, Pool2dParams const&, Tensor<T> const&);
RAYO_EACH_FLOATING(RAYO_INSTANTIATE_POOL)
#undef RAYO_INSTANTIATE_POOL

}  // namespace rayo
