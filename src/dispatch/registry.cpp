#include "dispatch/registry.hpp"

#include <algorithm>
#include <string>

#include "cpu/cpu_backend.hpp"
#include "cuda/discovery.hpp"
#include "rayo/error.hpp"
#include "vulkan/discovery.hpp"

namespace rayo {
// The one place allowed to construct Device values.
class DeviceRegistryAccess {
public:
    static constexpr Device make(DeviceKind kind, int index) noexcept { return Device(kind, index); }
};
}  // namespace rayo

namespace rayo::detail {

Device make_device(DeviceKind kind, int index) { return DeviceRegistryAccess::make(kind, index); }

Registry::Registry() {
    backends_.push_back(std::make_unique<cpu::CpuBackend>());
    // CUDA before Vulkan: Device::all() lists the preferred GPUs first.
    for (auto& b : cuda::discover_backends()) backends_.push_back(std::move(b));
    for (auto& b : vulkan::discover_backends()) backends_.push_back(std::move(b));
}

Registry& Registry::instance() {
    static Registry registry;
    return registry;
}

Backend& Registry::backend(Device device) const {
    std::lock_guard lock(mutex_);
    for (auto const& b : backends_)
        if (b->kind() == device.kind() && b->index() == device.index()) return *b;
    throw Error("device " + device.id() + " does not exist in this process");
}

std::vector<Backend*> Registry::backends() const {
    std::lock_guard lock(mutex_);
    std::vector<Backend*> out;
    for (auto const& b : backends_) out.push_back(b.get());
    return out;
}

int Registry::add(std::unique_ptr<Backend> backend) {
    std::lock_guard lock(mutex_);
    int const index = backend->index();
    backends_.push_back(std::move(backend));
    return index;
}

void Registry::remove(Backend const* backend) {
    std::lock_guard lock(mutex_);
    std::erase_if(backends_, [&](auto const& b) { return b.get() == backend && b->kind() != DeviceKind::cpu; });
}

}  // namespace rayo::detail
