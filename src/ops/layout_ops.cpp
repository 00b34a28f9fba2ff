// The layout ops: permute, transpose, expand, narrow, concat and copy_into, each one or more
// strided copies (op::Copy) between views of the tensors involved.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "dispatch/broadcast.hpp"
#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

template <class T>
void check_rank(std::string_view op, Tensor<T> const& x) {
    if (x.rank() > detail::max_view_rank)
        throw ShapeError(std::string(op) + ": takes tensors of up to " + std::to_string(detail::max_view_rank) +
                         " axes, got shape " + x.shape().to_string());
}

std::string list(std::vector<int> const& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

// The elements of `from` copied into `to` (views of one shape).
void copy_view(Device device, detail::OpArg const& from, detail::OpArg const& to) {
    detail::dispatch(device, detail::op::Copy{}, {from}, {to});
}

// The view of `a` restricted to [start, start + length) along `axis`.
detail::OpArg narrowed(detail::OpArg a, std::size_t axis, std::int64_t start, std::int64_t length) {
    a.view.offset += bytes_for(a.view.dtype, static_cast<std::size_t>(start * a.view.strides[axis]));
    a.view.shape[axis] = length;
    return a;
}

}  // namespace

namespace {

// x's view with its axes in the order `dims`, checked to be a permutation.
template <class T>
detail::OpArg permuted(Tensor<T> const& x, std::vector<int> const& dims) {
    check_rank("permute", x);
    std::vector<std::size_t> axes;
    std::vector<bool> seen(x.rank(), false);
    for (int d : dims) {
        long long const a = d < 0 ? d + static_cast<long long>(x.rank()) : d;
        if (a < 0 || a >= static_cast<long long>(x.rank()) || seen[static_cast<std::size_t>(a)]) break;
        seen[static_cast<std::size_t>(a)] = true;
        axes.push_back(static_cast<std::size_t>(a));
    }
    if (dims.size() != x.rank() || axes.size() != x.rank())
        throw ShapeError("permute: " + list(dims) + " is not a permutation of the axes of shape " +
                         x.shape().to_string());
    detail::OpArg in = detail::arg(x);
    detail::TensorView const original = in.view;
    for (std::size_t i = 0; i < axes.size(); ++i) {
        in.view.shape[i] = original.shape[axes[i]];
        in.view.strides[i] = original.strides[axes[i]];
    }
    return in;
}

}  // namespace

template <CastElement T>
Tensor<T> permute(Tensor<T> const& x, std::vector<int> const& dims) {
    detail::OpArg const in = permuted(x, dims);
    Tensor<T> out =
        Tensor<T>::empty(Shape(std::vector<std::int64_t>(in.view.dims().begin(), in.view.dims().end())), x.device());
    copy_view(x.device(), in, detail::arg(out));
    return out;
}

template <CastElement T>
void permute_into(Tensor<T> const& x, std::vector<int> const& dims, Tensor<T> const& out) {
    detail::OpArg const in = permuted(x, dims);
    detail::check_out("permute", out, Shape(std::vector<std::int64_t>(in.view.dims().begin(), in.view.dims().end())), x,
                      false);
    copy_view(x.device(), in, detail::arg(out));
}

template <CastElement T>
Tensor<T> transpose(Tensor<T> const& x, int a, int b) {
    std::size_t const i = x.shape().axis(a), j = x.shape().axis(b);
    std::vector<int> dims(x.rank());
    for (std::size_t k = 0; k < dims.size(); ++k) dims[k] = static_cast<int>(k);
    std::swap(dims[i], dims[j]);
    return permute(x, dims);
}

template <CastElement T>
Tensor<T> expand(Tensor<T> const& x, Shape const& shape) {
    if (detail::broadcast_shapes("expand", x.shape(), shape) != shape)
        throw ShapeError("expand: " + x.shape().to_string() + " does not broadcast to " + shape.to_string());
    Tensor<T> out = Tensor<T>::empty(shape, x.device());
    detail::OpArg in = detail::arg(x);
    in.view = detail::broadcast_view(in.view, shape.dims());
    copy_view(x.device(), in, detail::arg(out));
    return out;
}

template <CastElement T>
Tensor<T> narrow(Tensor<T> const& x, int axis, std::int64_t start, std::int64_t length) {
    std::size_t const a = x.shape().axis(axis);
    std::int64_t const extent = x.shape()[a];
    if (start < 0 || length < 0 || start > extent || length > extent - start)
        throw ShapeError("narrow: [" + std::to_string(start) + ", " + std::to_string(start) + " + " +
                         std::to_string(length) + ") is out of range for axis " + std::to_string(axis) + " of shape " +
                         x.shape().to_string());
    if (a == 0) return x.slice(start, start + length);
    check_rank("narrow", x);
    std::vector<std::int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
    dims[a] = length;
    Tensor<T> out = Tensor<T>::empty(Shape(std::move(dims)), x.device());
    copy_view(x.device(), narrowed(detail::arg(x), a, start, length), detail::arg(out));
    return out;
}

template <CastElement T>
Tensor<T> concat(std::vector<Tensor<T>> const& tensors, int axis) {
    if (tensors.empty()) throw Error("concat: no tensors to join");
    Tensor<T> const& first = tensors.front();
    check_rank("concat", first);
    std::size_t const a = first.shape().axis(axis);
    std::vector<std::int64_t> dims(first.shape().dims().begin(), first.shape().dims().end());
    dims[a] = 0;
    for (std::size_t t = 0; t < tensors.size(); ++t) {
        Tensor<T> const& x = tensors[t];
        detail::check_same_device("concat", first, x);
        bool match = x.rank() == first.rank();
        for (std::size_t i = 0; match && i < x.rank(); ++i) match = i == a || x.shape()[i] == first.shape()[i];
        if (!match)
            throw ShapeError("concat along axis " + std::to_string(axis) + ": tensor " + std::to_string(t) +
                             " has shape " + x.shape().to_string() + ", tensor 0 " + first.shape().to_string() +
                             " (every other axis must match)");
        dims[a] += x.shape()[a];
    }
    Tensor<T> out = Tensor<T>::empty(Shape(std::move(dims)), first.device());
    std::int64_t at = 0;
    for (Tensor<T> const& x : tensors) {
        std::int64_t const length = x.shape()[a];
        if (length > 0 && x.numel() > 0)
            copy_view(first.device(), detail::arg(x), narrowed(detail::arg(out), a, at, length));
        at += length;
    }
    return out;
}

template <CastElement T>
void copy_into(Tensor<T> const& src, Tensor<T> const& dst) {
    detail::check_same_device("copy", src, dst);
    detail::check_same_shape("copy", src, dst);
    if (detail::overlaps(src, dst)) throw Error("copy: dst overlaps src");
    copy_view(src.device(), detail::arg(src), detail::arg(dst));
}

#define RAYO_INSTANTIATE_LAYOUT(T)                                                              \
    template Tensor<T> permute<T>(Tensor<T> const&, std::vector<int> const&);                   \
    template void permute_into<T>(Tensor<T> const&, std::vector<int> const&, Tensor<T> const&); \
    template Tensor<T> transpose<T>(Tensor<T> const&, int, int);                                \
    template Tensor<T> expand<T>(Tensor<T> const&, Shape const&);                               \
    template Tensor<T> narrow<T>(Tensor<T> const&, int, std::int64_t, std::int64_t);            \
    template Tensor<T> concat<T>(std::vector<Tensor<T>> const&, int);                           \
    template void copy_into<T>(Tensor<T> const&, Tensor<T> const&);
RAYO_INSTANTIATE_LAYOUT(float)
RAYO_INSTANTIATE_LAYOUT(half)
RAYO_INSTANTIATE_LAYOUT(bfloat16)
RAYO_INSTANTIATE_LAYOUT(std::int32_t)
#undef RAYO_INSTANTIATE_LAYOUT

}  // namespace rayo
