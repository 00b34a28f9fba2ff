#include "rayo/device.hpp"

#include <charconv>
#include <string>

#include "core/environment.hpp"
#include "core/capture_guard.hpp"
#include "core/device_registry.hpp"
#include "core/printable.hpp"
#include "rayo/error.hpp"

namespace rayo {

namespace {

std::string present_devices() {
    std::string list;
    for (auto* b : detail::DeviceRegistry::instance().backends()) {
        if (!list.empty()) list += ", ";
        list += detail::make_device(b->kind(), b->index()).id();
    }
    return list;
}

[[noreturn]] void unknown_device(std::string_view text, std::string_view why) {
    throw Error("unknown device '" + detail::printable(text, 64) + "' (" + std::string(why) +
                "); valid: cpu, vulkan, cuda, vulkan:N, cuda:N; present here: " + present_devices());
}

}  // namespace

Device Device::cpu() { return Device(DeviceKind::cpu, 0); }

std::vector<Device> Device::all() {
    std::vector<Device> out;
    for (auto* b : detail::DeviceRegistry::instance().backends()) out.push_back(Device(b->kind(), b->index()));
    return out;
}

Device Device::parse(std::string_view text) {
    std::string_view kind_text = text;
    int index = -1;
    if (auto colon = text.find(':'); colon != std::string_view::npos) {
        kind_text = text.substr(0, colon);
        auto digits = text.substr(colon + 1);
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
        if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() || index < 0)
            unknown_device(text, "the index after ':' must be a non-negative integer");
    }
    DeviceKind kind;
    if (kind_text == "cpu")
        kind = DeviceKind::cpu;
    else if (kind_text == "vulkan")
        kind = DeviceKind::vulkan;
    else if (kind_text == "cuda")
        kind = DeviceKind::cuda;
    else
        unknown_device(text, "not a device kind");
    if (kind == DeviceKind::cpu) {
        if (index > 0) unknown_device(text, "there is one cpu device");
        return cpu();
    }
    auto const of_kind = detail::DeviceRegistry::instance().backends(kind);
    for (auto* b : of_kind) {
        if (index == b->index()) return Device(kind, index);
        // A bare kind names its first non-software device, else its first device.
        if (index < 0 && !b->is_software()) return Device(kind, b->index());
    }
    if (index < 0 && !of_kind.empty()) return Device(kind, of_kind.front()->index());
    unknown_device(text, "no such device in this process");
}

Device Device::best() {
    if (auto const env = detail::environment("RAYO_DEVICE")) return parse(*env);
    // CUDA, then a discrete Vulkan GPU, then any other hardware Vulkan device, then the CPU.
    // Software Vulkan devices (lavapipe) only run when named.
    Device best = cpu();
    bool best_is_discrete = false;
    for (auto* b : detail::DeviceRegistry::instance().backends()) {
        if (b->is_software()) continue;
        if (b->kind() == DeviceKind::cuda) return Device(b->kind(), b->index());
        if (b->kind() != DeviceKind::vulkan) continue;
        if (best.kind() == DeviceKind::cpu || (b->is_discrete_gpu() && !best_is_discrete)) {
            best = Device(b->kind(), b->index());
            best_is_discrete = b->is_discrete_gpu();
        }
    }
    return best;
}

std::string Device::name() const { return detail::DeviceRegistry::instance().backend(*this).name(); }

std::string Device::id() const {
    if (kind_ == DeviceKind::cpu) return "cpu";
    return std::string(to_string(kind_)) + ":" + std::to_string(index_);
}

void Device::synchronize() const {
    detail::refuse_in_capture("Device::synchronize()");
    detail::DeviceRegistry::instance().backend(*this).synchronize();
}

MemoryUsage Device::memory_usage() const { return detail::DeviceRegistry::instance().backend(*this).memory_usage(); }

void Device::reset_peak_memory() const { detail::DeviceRegistry::instance().backend(*this).reset_peak_memory(); }

}  // namespace rayo
