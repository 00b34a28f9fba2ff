#include "rayo/detail/storage.hpp"

#include <string>

#include "dispatch/capture.hpp"
#include "dispatch/registry.hpp"

namespace rayo::detail {

namespace {

// A capture (rayo::capture) records ops only: memory is made and moved outside it.
std::uintptr_t allocate(Device device, std::size_t bytes) {
    if (active_capture()) refuse_in_capture("making a tensor of " + std::to_string(bytes) + " bytes on " + device.id());
    return Registry::instance().backend(device).allocate(bytes);
}

}  // namespace

Storage::Storage(Device device, std::size_t bytes) : device_(device), bytes_(bytes), handle_(allocate(device, bytes)) {}

Storage::~Storage() { Registry::instance().release(device_, handle_); }

void Storage::upload(std::size_t offset, void const* src, std::size_t bytes) {
    refuse_in_capture("a copy from the host");
    Registry::instance().backend(device_).upload(handle_, offset, src, bytes);
}

void Storage::download(std::size_t offset, void* dst, std::size_t bytes) const {
    refuse_in_capture("a read to the host");
    Registry::instance().backend(device_).download(handle_, offset, dst, bytes);
}

void Storage::fill(std::size_t offset, std::size_t bytes, void const* pattern, std::size_t pattern_bytes) {
    refuse_in_capture("a fill of a tensor's bytes");
    Registry::instance().backend(device_).fill(handle_, offset, bytes, pattern, pattern_bytes);
}

void Storage::copy(Storage const& src, std::size_t src_offset, Storage& dst, std::size_t dst_offset,
                   std::size_t bytes) {
    refuse_in_capture("a copy of a tensor's bytes");
    auto& registry = Registry::instance();
    if (src.device_ == dst.device_) {
        registry.backend(src.device_).copy(src.handle_, src_offset, dst.handle_, dst_offset, bytes);
    } else if (src.device_.kind() == DeviceKind::cpu) {
        dst.upload(dst_offset, reinterpret_cast<void const*>(src.handle_ + src_offset), bytes);
    } else if (dst.device_.kind() == DeviceKind::cpu) {
        src.download(src_offset, reinterpret_cast<void*>(dst.handle_ + dst_offset), bytes);
    } else {  // between two GPUs: through the host
        Storage host(Device::cpu(), bytes);
        src.download(src_offset, reinterpret_cast<void*>(host.handle_), bytes);
        dst.upload(dst_offset, reinterpret_cast<void const*>(host.handle_), bytes);
    }
}

}  // namespace rayo::detail
