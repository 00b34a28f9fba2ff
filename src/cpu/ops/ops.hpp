// The CPU backend's op families, one source file each (elementwise.cpp holds the unary and binary
// families). For each descriptor: supports() says whether the kernels take these views, run()
// splits the work over the thread pool and calls the kernels of the instruction set in use.
#pragma once

#include "cpu/kernel_runner.hpp"
#include "dispatch/backend.hpp"

namespace rayo::cpu::ops {

using detail::OpViews;
using detail::TensorView;
using detail::Support;
namespace op = detail::op;

Support supports(KernelRunner const&, op::Unary const&, OpViews const&);
void run(KernelRunner&, op::Unary const&, OpViews const&);
Support supports(KernelRunner const&, op::Binary const&, OpViews const&);
void run(KernelRunner&, op::Binary const&, OpViews const&);

Support supports(KernelRunner const&, op::Reduce const&, OpViews const&);
void run(KernelRunner&, op::Reduce const&, OpViews const&);
Support supports(KernelRunner const&, op::Dot const&, OpViews const&);
void run(KernelRunner&, op::Dot const&, OpViews const&);

Support supports(KernelRunner const&, op::Softmax const&, OpViews const&);
void run(KernelRunner&, op::Softmax const&, OpViews const&);

Support supports(KernelRunner const&, op::Norm const&, OpViews const&);
void run(KernelRunner&, op::Norm const&, OpViews const&);

Support supports(KernelRunner const&, op::Matmul const&, OpViews const&);
void run(KernelRunner&, op::Matmul const&, OpViews const&);

Support supports(KernelRunner const&, op::Quantize const&, OpViews const&);
void run(KernelRunner&, op::Quantize const&, OpViews const&);
Support supports(KernelRunner const&, op::Dequantize const&, OpViews const&);
void run(KernelRunner&, op::Dequantize const&, OpViews const&);

Support supports(KernelRunner const&, op::Cast const&, OpViews const&);
void run(KernelRunner&, op::Cast const&, OpViews const&);

Support supports(KernelRunner const&, op::Copy const&, OpViews const&);
void run(KernelRunner&, op::Copy const&, OpViews const&);

Support supports(KernelRunner const&, op::Gather const&, OpViews const&);
void run(KernelRunner&, op::Gather const&, OpViews const&);

Support supports(KernelRunner const&, op::Rope const&, OpViews const&);
void run(KernelRunner&, op::Rope const&, OpViews const&);
Support supports(KernelRunner const&, op::Attention const&, OpViews const&);
void run(KernelRunner&, op::Attention const&, OpViews const&);
Support supports(KernelRunner const&, op::Conv2d const&, OpViews const&);
void run(KernelRunner&, op::Conv2d const&, OpViews const&);
Support supports(KernelRunner const&, op::Pool2d const&, OpViews const&);
void run(KernelRunner&, op::Pool2d const&, OpViews const&);

// linear(x, w) with q4_k / q6_k weights (quantization.cpp), for matmul.cpp.
void linear_kquant(KernelRunner&, op::MatmulShape shape, TensorView const& x, TensorView const& w, TensorView const& out);

}  // namespace rayo::cpu::ops
