#include "dispatch/registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "cpu/cpu_backend.hpp"
#include "cuda/discovery.hpp"
#include "rayo/error.hpp"
#include "rayo/settings.hpp"
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
    // A bad RAYO_LOG is an error at the first use of rayo, not at the first message.
    (void)log_level();
    backends_.push_back(std::make_unique<cpu::CpuBackend>());
    cpu_ = backends_.front().get();
}

void Registry::discover(DeviceKind kind) const {
    auto const k = static_cast<std::size_t>(kind);
    std::call_once(discovery_[k], [&] {
        // The driver is loaded and its devices opened outside the lock: other kinds stay usable.
        std::vector<std::unique_ptr<Backend>> found;
        if (kind == DeviceKind::cuda)
            found = cuda::discover_backends();
        else if (kind == DeviceKind::vulkan)
            found = vulkan::discover_backends();
        // Registered after the driver's own exit handlers, so it runs before them.
        if (!found.empty()) std::atexit([] { instance().close_gpu_backends(); });
        std::lock_guard lock(mutex_);
        for (auto& b : found) backends_.push_back(std::move(b));
        discovered_[k] = true;
    });
}

bool Registry::discovered(DeviceKind kind) const {
    std::lock_guard lock(mutex_);
    return discovered_[static_cast<std::size_t>(kind)];
}

std::atomic<bool> Registry::exiting_{false};

// Never destroyed: GPU drivers loaded after it is made would be torn down before its destructor
// ran, and tensors kept until static destruction may outlive any destruction order.
Registry& Registry::instance() {
    static Registry* registry = new Registry;
    return *registry;
}

void Registry::close_gpu_backends() noexcept {
    exiting_.store(true, std::memory_order_release);
    std::vector<std::unique_ptr<Backend>> closing;
    {
        std::lock_guard lock(mutex_);
        for (auto& b : backends_)
            if (b->kind() != DeviceKind::cpu) closing.push_back(std::move(b));
        std::erase(backends_, nullptr);
    }
    closing.clear();  // waits for each device, then frees everything it holds
}

void Registry::release(Device device, std::uintptr_t handle) const {
    if (device.kind() != DeviceKind::cpu && exiting_.load(std::memory_order_acquire)) return;
    backend(device).release(handle);
}

Backend& Registry::backend(Device device) const {
    if (device.kind() == DeviceKind::cpu) return *cpu_;
    discover(device.kind());
    std::lock_guard lock(mutex_);
    for (auto const& b : backends_)
        if (b->kind() == device.kind() && b->index() == device.index()) return *b;
    throw Error("device " + device.id() + " does not exist in this process");
}

std::vector<Backend*> Registry::backends() const {
    std::vector<Backend*> out;
    for (DeviceKind kind : {DeviceKind::cpu, DeviceKind::cuda, DeviceKind::vulkan}) {
        auto of_kind = backends(kind);
        out.insert(out.end(), of_kind.begin(), of_kind.end());
    }
    return out;
}

std::vector<Backend*> Registry::backends(DeviceKind kind) const {
    if (kind != DeviceKind::cpu) discover(kind);
    std::lock_guard lock(mutex_);
    std::vector<Backend*> out;
    for (auto const& b : backends_)
        if (b->kind() == kind) out.push_back(b.get());
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
