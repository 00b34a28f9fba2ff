// rayo's PTX builder: write CUDA kernels as C++ that emits PTX text, with no GPU, nvcc or NVRTC.
#pragma once

#include "rayo/ptx/instruction.hpp"
#include "rayo/ptx/kernel.hpp"
#include "rayo/ptx/module.hpp"
#include "rayo/ptx/operand.hpp"
#include "rayo/ptx/target.hpp"
#include "rayo/ptx/type.hpp"
