// The backends present in this process: the CPU, then those found at run time.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "dispatch/backend.hpp"

namespace rayo::detail {

class Registry {
public:
    static Registry& instance();

    // The backend for a device; throws rayo::Error when that device does not exist.
    [[nodiscard]] Backend& backend(Device device) const;
    [[nodiscard]] Backend& cpu() const { return *backends_.front(); }
    // Every backend, the CPU first, then in registration order.
    [[nodiscard]] std::vector<Backend*> backends() const;

    // Adds a backend (GPU backends at discovery; tests add fakes). Returns its index among those of its kind.
    int add(std::unique_ptr<Backend> backend);
    // Removes a backend added by add() (tests only); its tensors must be gone.
    void remove(Backend const* backend);

private:
    Registry();
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<Backend>> backends_;
};

// Makes Device values; only the registry knows which devices exist.
Device make_device(DeviceKind kind, int index);

}  // namespace rayo::detail
