// A CUDA device for the harness on machines without one: the CUDA backend's op files
// (src/cuda/ops/) with their generated kernels run on the PTX simulator (tests/support/
// ptx_simulator.hpp) as an sm_90 with 2 multiprocessors and an H100's shared memory, tensors in
// host memory. The device is registered only while a case runs on it (it is a software device, so
// Device::best() never picks it).
#pragma once

#include <rayo/device.hpp>

#include <stdexcept>

namespace rayo::test::ops {

// A kernel uses an instruction the simulator does not model (the tensor cores' mma.sync, say).
class NotSimulated : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

[[nodiscard]] Device register_simulated_cuda();
void unregister_simulated_cuda();

}  // namespace rayo::test::ops
