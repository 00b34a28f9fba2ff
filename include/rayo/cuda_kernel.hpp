// Kernels of one's own on rayo tensors: a kernel written with the PTX builder (rayo/ptx) launched
// on a CUDA device's tensors, queued on the device's stream in order with rayo's ops.
//
//   rayo::ptx::Kernel k("scale");                          // (see examples/cuda_kernel.cpp)
//   ...
//   rayo::launch_cuda_kernel(dev, k, {.grid = {blocks, 1, 1}, .block = {256, 1, 1}}, {x, 2.0f, n});
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>

#include "rayo/device.hpp"
#include "rayo/export.hpp"
#include "rayo/ptx/kernel.hpp"
#include "rayo/kernel_argument.hpp"

namespace rayo {

// The launch's grid and block (x, y, z) and its dynamic shared memory in bytes.
struct LaunchShape {
    std::array<unsigned, 3> grid{1, 1, 1};
    std::array<unsigned, 3> block{1, 1, 1};
    unsigned shared_bytes = 0;
};

// Queues `kernel` on the CUDA device's stream, after the ops queued there before and before those
// queued after; it is assembled for the device (by the driver, from the PTX rayo emits for its
// target) the first time it is launched and kept. Every tensor argument counts as written by it.
// rayo::Error, naming the kernel and the argument or dimension, when the device is not a CUDA
// device, a tensor is on another device, the arguments do not match the kernel's parameters in
// number or type, a dimension is 0, the block has more than 1024 threads, grid y or z exceeds
// 65535, or the shared memory exceeds what the device allows a block; rayo::ptx::BuildError when
// the kernel does not verify. Nothing is queued then.
RAYO_API void launch_cuda_kernel(Device device, ptx::Kernel const& kernel, LaunchShape shape,
                                 std::initializer_list<KernelArgument> arguments);

}  // namespace rayo
