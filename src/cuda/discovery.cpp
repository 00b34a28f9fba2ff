#include "cuda/discovery.hpp"

#include <exception>
#include <string>

#include "core/logging.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/driver_api.hpp"

namespace rayo::cuda {

std::vector<std::unique_ptr<detail::DeviceBackend>> discover_backends() {
    std::vector<std::unique_ptr<detail::DeviceBackend>> out;
    Driver const* driver = nullptr;
    try {
        driver = &Driver::get();
    } catch (std::exception const& e) {  // the usual case on a machine without an NVIDIA GPU
        detail::log(LogLevel::debug, std::string("rayo: no CUDA devices: ") + e.what());
        return out;
    }
    int count = 0;
    if (CUresult const result = driver->cuDeviceGetCount(&count); result != CUresult::success) {
        detail::log(LogLevel::debug, "rayo: no CUDA devices: cuDeviceGetCount failed: " + describe(result));
        return out;
    }
    if (count == 0) detail::log(LogLevel::debug, "rayo: no CUDA devices: the driver reports none");
    for (int ordinal = 0; ordinal < count; ++ordinal) {
        try {
            CUdevice device = 0;
            check(driver->cuDeviceGet(&device, ordinal), "cuda: cuDeviceGet(" + std::to_string(ordinal) + ")");
            out.push_back(std::make_unique<CudaBackend>(*driver, device, static_cast<int>(out.size())));
        } catch (std::exception const& e) {
            detail::log(LogLevel::warn, "rayo: skipping CUDA device " + std::to_string(ordinal) + ": " + e.what());
        }
    }
    return out;
}

}  // namespace rayo::cuda
