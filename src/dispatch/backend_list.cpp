// The backends this library is built with, the one place that names them all: the core finds
// devices through these factories (core/device_registry.hpp). A build without the CUDA or Vulkan
// backend links their discovery_unavailable.cpp, which finds no device.
#include <memory>
#include <span>
#include <vector>

#include "core/device_registry.hpp"
#include "cpu/cpu_backend.hpp"
#include "cuda/discovery.hpp"
#include "vulkan/discovery.hpp"

namespace rayo::detail {

namespace {

std::vector<std::unique_ptr<DeviceBackend>> the_cpu() {
    std::vector<std::unique_ptr<DeviceBackend>> out;
    out.push_back(std::make_unique<cpu::CpuBackend>());
    return out;
}

constexpr BackendFactory factories[] = {
    {DeviceKind::cpu, &the_cpu},
    {DeviceKind::cuda, &cuda::discover_backends},
    {DeviceKind::vulkan, &vulkan::discover_backends},
};

}  // namespace

std::span<BackendFactory const> backend_factories() { return factories; }

}  // namespace rayo::detail
