// The CUDA devices this process can use, found at run time (none when the build has no CUDA
// backend, or the machine has no libcuda.so.1 or no NVIDIA GPU).
#pragma once

#include <memory>
#include <vector>

#include "core/device_backend.hpp"

namespace rayo::cuda {

// One backend per usable device, numbered cuda:0, cuda:1, ... in the driver's order.
[[nodiscard]] std::vector<std::unique_ptr<detail::DeviceBackend>> discover_backends();

}  // namespace rayo::cuda
