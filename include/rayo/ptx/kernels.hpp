// rayo's kernel generators: every op's CUDA kernel as a ptx::Kernel, parametrised by dtype, shape
// and tile, emitted for any target with no GPU present:
//
//   std::string text = rayo::ptx::kernels::gemm({.tile = {128, 128, 32}}).emit(rayo::ptx::Target::sm_90);
//
// It includes every header of rayo/ptx/kernels/ (the test headers.ptx_kernels_umbrella checks it).
#pragma once

#include "rayo/ptx/kernels/attention.hpp"
#include "rayo/ptx/kernels/conversion.hpp"
#include "rayo/ptx/kernels/convolution.hpp"
#include "rayo/ptx/kernels/elementwise.hpp"
#include "rayo/ptx/kernels/gather.hpp"
#include "rayo/ptx/kernels/gemm.hpp"
#include "rayo/ptx/kernels/layout.hpp"
#include "rayo/ptx/kernels/normalization.hpp"
#include "rayo/ptx/kernels/pooling.hpp"
#include "rayo/ptx/kernels/quant.hpp"
#include "rayo/ptx/kernels/reduction.hpp"
#include "rayo/ptx/kernels/rotary.hpp"
#include "rayo/ptx/kernels/row_layout.hpp"
#include "rayo/ptx/kernels/softmax.hpp"
