// Builds without the CUDA backend (RAYO_ENABLE_CUDA=OFF) find no CUDA devices, and launch no kernels.
#include "cuda/discovery.hpp"
#include "rayo/cuda_kernel.hpp"
#include "rayo/error.hpp"

namespace rayo::cuda {

std::vector<std::unique_ptr<detail::DeviceBackend>> discover_backends() { return {}; }

}  // namespace rayo::cuda

namespace rayo {

void launch_cuda_kernel(Device device, ptx::Kernel const& kernel, LaunchShape, std::initializer_list<KernelArgument>) {
    throw Error("launch_cuda_kernel: kernel " + kernel.name() + " on " + device.id() +
                ": not a CUDA device (this rayo was built without the CUDA backend)");
}

}  // namespace rayo
