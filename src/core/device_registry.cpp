#include "core/device_registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "rayo/error.hpp"
#include "rayo/settings.hpp"

namespace rayo {
// The one place allowed to construct Device values.
class DeviceRegistryAccess {
public:
    static constexpr Device make(DeviceKind kind, int index) noexcept { return Device(kind, index); }
};
}  // namespace rayo

namespace rayo::detail {

Device make_device(DeviceKind kind, int index) { return DeviceRegistryAccess::make(kind, index); }

namespace {

BackendFactory const* factory_of(DeviceKind kind) {
    for (BackendFactory const& f : backend_factories())
        if (f.kind == kind) return &f;
    return nullptr;
}

}  // namespace

DeviceRegistry::DeviceRegistry() {
    // A bad RAYO_LOG is an error at the first use of rayo, not at the first message.
    (void)log_level();
    BackendFactory const* cpu = factory_of(DeviceKind::cpu);
    if (cpu) backends_ = cpu->discover();
    if (backends_.size() != 1 || backends_.front()->kind() != DeviceKind::cpu)
        throw Error("rayo: the library was built without its CPU backend");
    cpu_ = backends_.front().get();
}

void DeviceRegistry::discover(DeviceKind kind) const {
    auto const k = static_cast<std::size_t>(kind);
    std::call_once(discovery_[k], [&] {
        // The driver is loaded and its devices opened outside the lock: other kinds stay usable.
        std::vector<std::unique_ptr<DeviceBackend>> found;
        if (BackendFactory const* factory = factory_of(kind)) found = factory->discover();
        // Registered after the driver's own exit handlers, so it runs before them.
        if (!found.empty()) std::atexit([] { instance().close_gpu_backends(); });
        std::lock_guard lock(mutex_);
        for (auto& b : found) backends_.push_back(std::move(b));
        discovered_[k] = true;
    });
}

bool DeviceRegistry::discovered(DeviceKind kind) const {
    std::lock_guard lock(mutex_);
    return discovered_[static_cast<std::size_t>(kind)];
}

std::atomic<bool> DeviceRegistry::exiting_{false};

// Never destroyed: GPU drivers loaded after it is made would be torn down before its destructor
// ran, and tensors kept until static destruction may outlive any destruction order.
DeviceRegistry& DeviceRegistry::instance() {
    static DeviceRegistry* registry = new DeviceRegistry;
    return *registry;
}

void DeviceRegistry::close_gpu_backends() noexcept {
    exiting_.store(true, std::memory_order_release);
    std::vector<std::unique_ptr<DeviceBackend>> closing;
    {
        std::lock_guard lock(mutex_);
        for (auto& b : backends_)
            if (b->kind() != DeviceKind::cpu) closing.push_back(std::move(b));
        std::erase(backends_, nullptr);
    }
    closing.clear();  // waits for each device, then frees everything it holds
}

DeviceBackend& DeviceRegistry::backend(Device device) const {
    if (device.kind() == DeviceKind::cpu) return *cpu_;
    discover(device.kind());
    std::lock_guard lock(mutex_);
    for (auto const& b : backends_)
        if (b->kind() == device.kind() && b->index() == device.index()) return *b;
    throw Error("device " + device.id() + " does not exist in this process");
}

std::vector<DeviceBackend*> DeviceRegistry::backends() const {
    std::vector<DeviceBackend*> out;
    for (DeviceKind kind : {DeviceKind::cpu, DeviceKind::cuda, DeviceKind::vulkan}) {
        auto of_kind = backends(kind);
        out.insert(out.end(), of_kind.begin(), of_kind.end());
    }
    return out;
}

std::vector<DeviceBackend*> DeviceRegistry::backends(DeviceKind kind) const {
    if (kind != DeviceKind::cpu) discover(kind);
    std::lock_guard lock(mutex_);
    std::vector<DeviceBackend*> out;
    for (auto const& b : backends_)
        if (b->kind() == kind) out.push_back(b.get());
    return out;
}

int DeviceRegistry::add(std::unique_ptr<DeviceBackend> backend) {
    std::lock_guard lock(mutex_);
    int const index = backend->index();
    backends_.push_back(std::move(backend));
    return index;
}

void DeviceRegistry::remove(DeviceBackend const* backend) {
    std::lock_guard lock(mutex_);
    std::erase_if(backends_, [&](auto const& b) { return b.get() == backend && b->kind() != DeviceKind::cpu; });
}

}  // namespace rayo::detail
