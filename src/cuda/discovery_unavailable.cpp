// Builds without the CUDA backend (RAYO_ENABLE_CUDA=OFF) find no CUDA devices.
#include "cuda/discovery.hpp"

namespace rayo::cuda {

std::vector<std::unique_ptr<detail::DeviceBackend>> discover_backends() { return {}; }

}  // namespace rayo::cuda
