// The parameters the conv2d kernels share (rayo/ptx/kernels/convolution.hpp): four tensor
// addresses, then the problem's sizes as .u32. Not part of the API.
#pragma once

#include <iterator>

#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels::conv_detail {

struct Conv2dParams {
    Reg out, x, w, bias;
    Reg count;  // the direct kernel's outputs (total); the implicit GEMM's images (n)
    Reg c, h, w_in, o, kh, kw, oh, ow, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, cg, og;
};

inline Conv2dParams declare_params(Kernel& k, char const* count_name) {
    Conv2dParams p;
    p.out = k.cvta_to_global(k.param(Type::u64, "out"));
    p.x = k.cvta_to_global(k.param(Type::u64, "x"));
    p.w = k.cvta_to_global(k.param(Type::u64, "w"));
    p.bias = k.cvta_to_global(k.param(Type::u64, "bias"));
    Reg* const sizes[] = {&p.count, &p.c,          &p.h,          &p.w_in,     &p.o,        &p.kh,
                          &p.kw,    &p.oh,         &p.ow,         &p.stride_h, &p.stride_w, &p.pad_h,
                          &p.pad_w, &p.dilation_h, &p.dilation_w, &p.cg,       &p.og};
    char const* const names[] = {count_name, "c",        "h",     "w_in",  "o",          "kh",         "kw", "oh", "ow",
                                 "stride_h", "stride_w", "pad_h", "pad_w", "dilation_h", "dilation_w", "cg", "og"};
    for (std::size_t i = 0; i < std::size(sizes); ++i) *sizes[i] = k.param(Type::u32, names[i]);
    return p;
}

}  // namespace rayo::ptx::kernels::conv_detail
