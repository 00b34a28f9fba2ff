// The CPU backend's op families, one source file each (elementwise.cpp holds the unary and binary
// families). For each descriptor: supports() says whether the kernels take these views, run()
// splits the work over the thread pool and calls the kernels of the instruction set in use.
#pragma once

#include "cpu/kernel_runner.hpp"
#include "dispatch/backend.hpp"

namespace rayo::cpu::ops {

// supports() and run() for every op descriptor, the same list for every backend.
using OpRunner = KernelRunner;
#include "dispatch/op_entry_points.inc"

// linear(x, w) with q4_k / q6_k weights (quantization.cpp), for matmul.cpp.
void linear_kquant(KernelRunner&, op::MatmulShape shape, TensorView const& x, TensorView const& w,
                   TensorView const& out);

}  // namespace rayo::cpu::ops
