// conv2d (torch.nn.functional.conv2d's cross-correlation) and convolve2d (scipy.signal.convolve2d's
// true convolution of one image), both one op::Conv2d: the operands checked and the geometry
// worked out here, before anything is written.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "dispatch/dispatch.hpp"
#include "ops/op_checks.hpp"
#include "rayo/ops.hpp"

namespace rayo {

namespace {

using detail::op::Conv2dShape;

std::string pair(std::array<int, 2> p) { return "(" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ")"; }

void check_params(Conv2dParams const& p) {
    if (p.stride[0] < 1 || p.stride[1] < 1)
        throw ShapeError("conv2d: stride must be at least 1 along each axis, got " + pair(p.stride));
    if (p.dilation[0] < 1 || p.dilation[1] < 1)
        throw ShapeError("conv2d: dilation must be at least 1 along each axis, got " + pair(p.dilation));
    if (p.padding[0] < 0 || p.padding[1] < 0)
        throw ShapeError("conv2d: padding must not be negative, got " + pair(p.padding));
    if (p.groups < 1) throw ShapeError("conv2d: groups must be at least 1, got " + std::to_string(p.groups));
}

// The output extent along one axis, or a ShapeError when the dilated kernel does not fit the
// padded input.
std::size_t output_extent(char const* axis, std::size_t in, std::size_t k, int pad, int stride, int dilation) {
    std::size_t const padded = in + 2 * static_cast<std::size_t>(pad);
    std::size_t const reach = static_cast<std::size_t>(dilation) * (k - 1) + 1;
    if (reach > padded)
        throw ShapeError(std::string("conv2d: the kernel's ") + axis + " (" + std::to_string(k) + ", dilated to " +
                         std::to_string(reach) + ") is larger than the padded input's (" + std::to_string(in) +
                         " + 2·" + std::to_string(pad) + " = " + std::to_string(padded) + ")");
    return (padded - reach) / static_cast<std::size_t>(stride) + 1;
}

// The geometry of conv2d(x, w, params), every shape rule checked.
template <class T>
Conv2dShape conv2d_shape(Tensor<T> const& x, Tensor<T> const& w, Conv2dParams const& p) {
    check_params(p);
    detail::check_same_device("conv2d", x, w);
    if (x.rank() != 3 && x.rank() != 4)
        throw ShapeError("conv2d: x must be [N, C, H, W] or [C, H, W], got shape " + x.shape().to_string());
    if (w.rank() != 4) throw ShapeError("conv2d: w must be [O, C/groups, KH, KW], got shape " + w.shape().to_string());
    std::size_t const lead = x.rank() - 3;
    auto const dim = [](auto const& t, std::size_t i) { return static_cast<std::size_t>(t.shape()[i]); };
    Conv2dShape s;
    s.n = lead ? dim(x, 0) : 1;
    s.c = dim(x, lead);
    s.h = dim(x, lead + 1);
    s.w = dim(x, lead + 2);
    s.o = dim(w, 0);
    s.kh = dim(w, 2);
    s.kw = dim(w, 3);
    s.groups = static_cast<std::size_t>(p.groups);
    if (s.c % s.groups != 0)
        throw ShapeError("conv2d: groups (" + std::to_string(s.groups) + ") does not divide the input channels C (" +
                         std::to_string(s.c) + ")");
    if (s.o % s.groups != 0)
        throw ShapeError("conv2d: groups (" + std::to_string(s.groups) + ") does not divide the output channels O (" +
                         std::to_string(s.o) + ")");
    if (dim(w, 1) != s.c / s.groups)
        throw ShapeError("conv2d: w has " + std::to_string(dim(w, 1)) + " input channels per group (shape " +
                         w.shape().to_string() + "), expected C/groups = " + std::to_string(s.c) + "/" +
                         std::to_string(s.groups) + " = " + std::to_string(s.c / s.groups));
    if (s.kh == 0 || s.kw == 0)
        throw ShapeError("conv2d: the kernel is empty (w has shape " + w.shape().to_string() + ")");
    s.stride_h = static_cast<std::size_t>(p.stride[0]);
    s.stride_w = static_cast<std::size_t>(p.stride[1]);
    s.pad_h = static_cast<std::size_t>(p.padding[0]);
    s.pad_w = static_cast<std::size_t>(p.padding[1]);
    s.dilation_h = static_cast<std::size_t>(p.dilation[0]);
    s.dilation_w = static_cast<std::size_t>(p.dilation[1]);
    s.oh = output_extent("height", s.h, s.kh, p.padding[0], p.stride[0], p.dilation[0]);
    s.ow = output_extent("width", s.w, s.kw, p.padding[1], p.stride[1], p.dilation[1]);
    return s;
}

Shape output_shape(Conv2dShape const& s, bool batched) {
    auto const i = [](std::size_t v) { return static_cast<std::int64_t>(v); };
    if (batched) return Shape{i(s.n), i(s.o), i(s.oh), i(s.ow)};
    return Shape{i(s.o), i(s.oh), i(s.ow)};
}

template <class T>
void check_bias(Tensor<T> const& x, Conv2dShape const& s, Tensor<T> const& bias) {
    detail::check_same_device("conv2d", x, bias);
    if (bias.shape() != Shape{static_cast<std::int64_t>(s.o)})
        throw ShapeError("conv2d: bias has shape " + bias.shape().to_string() + ", expected [" + std::to_string(s.o) +
                         "] (one value per output channel)");
}

// Checks out against the result and the inputs, then runs the op.
template <class T>
void run_conv2d(Conv2dShape const& s, Tensor<T> const& x, Tensor<T> const& w, Tensor<T> const* bias, Shape const& shape,
                Tensor<T> const& out) {
    detail::check_out("conv2d", out, shape, x, false);
    detail::check_out("conv2d", out, shape, w, false);
    if (bias) detail::check_out("conv2d", out, shape, *bias, false);
    if (out.numel() == 0) return;
    detail::op::Conv2d const op{Op::conv2d, s, bias != nullptr};
    if (bias)
        detail::dispatch(x.device(), op, {detail::arg(x), detail::arg(w), detail::arg(*bias)}, {detail::arg(out)});
    else
        detail::dispatch(x.device(), op, {detail::arg(x), detail::arg(w)}, {detail::arg(out)});
}

}  // namespace

template <FloatingElement T>
void conv2d_into(Tensor<T> const& x, Tensor<T> const& w, Conv2dParams const& params, Tensor<T> const& out) {
    Conv2dShape const s = conv2d_shape(x, w, params);
    run_conv2d<T>(s, x, w, nullptr, output_shape(s, x.rank() == 4), out);
}

template <FloatingElement T>
Tensor<T> conv2d(Tensor<T> const& x, Tensor<T> const& w, Conv2dParams const& params) {
    Conv2dShape const s = conv2d_shape(x, w, params);
    Tensor<T> out = Tensor<T>::empty(output_shape(s, x.rank() == 4), x.device());
    run_conv2d<T>(s, x, w, nullptr, out.shape(), out);
    return out;
}

template <FloatingElement T>
void conv2d_into(Tensor<T> const& x, Tensor<T> const& w, Tensor<T> const& bias, Conv2dParams const& params,
                 Tensor<T> const& out) {
    Conv2dShape const s = conv2d_shape(x, w, params);
    check_bias(x, s, bias);
    run_conv2d<T>(s, x, w, &bias, output_shape(s, x.rank() == 4), out);
}

template <FloatingElement T>
Tensor<T> conv2d(Tensor<T> const& x, Tensor<T> const& w, Tensor<T> const& bias, Conv2dParams const& params) {
    Conv2dShape const s = conv2d_shape(x, w, params);
    check_bias(x, s, bias);
    Tensor<T> out = Tensor<T>::empty(output_shape(s, x.rank() == 4), x.device());
    run_conv2d<T>(s, x, w, &bias, out.shape(), out);
    return out;
}

namespace {

// Where scipy.signal.convolve2d's result of `mode` starts inside the full convolution (rows
// [start, start + extent) of it) along an axis of image extent `in` and kernel extent `k`.
struct Window {
    std::size_t start = 0, extent = 0;
};
Window convolve_window(ConvolveMode mode, std::size_t in, std::size_t k) {
    switch (mode) {
        case ConvolveMode::full: return {0, in + k - 1};
        // scipy centres on the full result with the extra row, for an even kernel, at the end.
        case ConvolveMode::same: return {(k - 1) / 2, in};
        case ConvolveMode::valid: return {k - 1, in - k + 1};
    }
    return {};
}

}  // namespace

template <FloatingElement T>
Tensor<T> convolve2d(Tensor<T> const& image, Tensor<T> const& kernel, ConvolveMode mode) {
    detail::check_same_device("convolve2d", image, kernel);
    if (image.rank() != 2) throw ShapeError("convolve2d: image must be [H, W], got shape " + image.shape().to_string());
    if (kernel.rank() != 2)
        throw ShapeError("convolve2d: kernel must be [KH, KW], got shape " + kernel.shape().to_string());
    Tensor<T> in = image, k = kernel;
    auto const extent = [](Tensor<T> const& t, std::size_t i) { return static_cast<std::size_t>(t.shape()[i]); };
    if (mode == ConvolveMode::valid) {
        bool const kernel_inside = extent(k, 0) <= extent(in, 0) && extent(k, 1) <= extent(in, 1);
        bool const image_inside = extent(in, 0) <= extent(k, 0) && extent(in, 1) <= extent(k, 1);
        // As scipy: the convolution commutes, so a kernel covering the image swaps with it.
        if (!kernel_inside && image_inside)
            std::swap(in, k);
        else if (!kernel_inside)
            throw ShapeError(
                "convolve2d: in valid mode one operand must be at least as large as the other along both "
                "axes, got image " +
                image.shape().to_string() + " and kernel " + kernel.shape().to_string());
    }
    Conv2dShape s;
    s.n = s.c = s.o = 1;
    s.h = extent(in, 0);
    s.w = extent(in, 1);
    s.kh = extent(k, 0);
    s.kw = extent(k, 1);
    s.flip = true;
    if (s.h == 0 || s.w == 0 || s.kh == 0 || s.kw == 0) {
        // scipy refuses empty operands; so does rayo, naming them.
        throw ShapeError("convolve2d: the image " + image.shape().to_string() + " and the kernel " +
                         kernel.shape().to_string() + " must not be empty");
    }
    Window const rows = convolve_window(mode, s.h, s.kh), cols = convolve_window(mode, s.w, s.kw);
    // Output row y is full-result row start + y, which reads image rows start + y − (KH − 1) + i.
    s.pad_h = s.kh - 1 - rows.start;
    s.pad_w = s.kw - 1 - cols.start;
    s.oh = rows.extent;
    s.ow = cols.extent;
    Tensor<T> const out =
        Tensor<T>::empty(Shape{static_cast<std::int64_t>(s.oh), static_cast<std::int64_t>(s.ow)}, image.device());
    run_conv2d<T>(s, in, k.reshape({1, 1, static_cast<std::int64_t>(s.kh), static_cast<std::int64_t>(s.kw)}), nullptr,
                  out.shape(), out);
    return out;
}

#define RAYO_INSTANTIATE_CONV2D(T)                                                                           \
    template Tensor<T> conv2d<T>(Tensor<T> const&, Tensor<T> const&, Conv2dParams const&);                   \
    template void conv2d_into<T>(Tensor<T> const&, Tensor<T> const&, Conv2dParams const&, Tensor<T> const&); \
    template Tensor<T> conv2d<T>(Tensor<T> const&, Tensor<T> const&, Tensor<T> const&, Conv2dParams const&); \
    template void conv2d_into<T>(Tensor<T> const&, Tensor<T> const&, Tensor<T> const&, Conv2dParams const&,  \
                                 Tensor<T> const&);                                                          \
    template Tensor<T> convolve2d<T>(Tensor<T> const&, Tensor<T> const&, ConvolveMode);
RAYO_INSTANTIATE_CONV2D(float)
RAYO_INSTANTIATE_CONV2D(half)
RAYO_INSTANTIATE_CONV2D(bfloat16)
#undef RAYO_INSTANTIATE_CONV2D

}  // namespace rayo
