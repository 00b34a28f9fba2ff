#include "rayo/detail/storage.hpp"

#include <string>

#include "core/capture_guard.hpp"
#include "core/device_registry.hpp"
#include "core/logging.hpp"

namespace rayo::detail {

namespace {

// A capture (rayo::capture) records ops only: memory is made and moved outside it.
std::uintptr_t allocate(DeviceBackend& backend, Device device, std::size_t bytes) {
    if (capturing_device())
        refuse_in_capture("making a tensor of " + std::to_string(bytes) + " bytes on " + device.id());
    return backend.allocate(bytes);
}

}  // namespace

Storage::Storage(Device device, std::size_t bytes)
    : device_(device),
      backend_(&DeviceRegistry::instance().backend(device)),
      bytes_(bytes),
      handle_(allocate(*backend_, device, bytes)) {}

Storage::Storage(Device device, DeviceBackend& backend, std::uintptr_t handle, std::size_t bytes,
                 std::function<void()> release)
    : device_(device),
      backend_(&backend),
      bytes_(bytes),
      handle_(handle),
      adopted_(true),
      release_(std::move(release)) {}

Storage::~Storage() {
    if (device_.kind() != DeviceKind::cpu && DeviceRegistry::gpu_backends_closed()) return;
    if (!adopted_) {
        backend_->release(handle_);
        return;
    }
    backend_->forget(handle_);  // waits for the work queued on it
    if (!release_) return;
    try {
        release_();
    } catch (std::exception const& e) {  // a destructor cannot pass it on
        log(LogLevel::error,
            std::string("rayo: the release callback of native memory on ") + device_.id() + " threw: " + e.what());
    } catch (...) {
        log(LogLevel::error, "rayo: the release callback of native memory on " + device_.id() + " threw");
    }
}

void Storage::upload(std::size_t offset, void const* src, std::size_t bytes) {
    refuse_in_capture("a copy from the host");
    backend_->upload(handle_, offset, src, bytes);
}

void Storage::download(std::size_t offset, void* dst, std::size_t bytes) const {
    refuse_in_capture("a read to the host");
    backend_->download(handle_, offset, dst, bytes);
}

void Storage::fill(std::size_t offset, std::size_t bytes, void const* pattern, std::size_t pattern_bytes) {
    refuse_in_capture("a fill of a tensor's bytes");
    backend_->fill(handle_, offset, bytes, pattern, pattern_bytes);
}

void Storage::copy(Storage const& src, std::size_t src_offset, Storage& dst, std::size_t dst_offset,
                   std::size_t bytes) {
    refuse_in_capture("a copy of a tensor's bytes");
    if (src.device_ == dst.device_) {
        src.backend_->copy(src.handle_, src_offset, dst.handle_, dst_offset, bytes);
    } else if (std::byte const* from = src.backend_->host_address(src.handle_)) {
        dst.upload(dst_offset, from + src_offset, bytes);
    } else if (std::byte* to = dst.backend_->host_address(dst.handle_)) {
        src.download(src_offset, to + dst_offset, bytes);
    } else {  // between two GPUs: through the host
        Storage staging(Device::cpu(), bytes);
        std::byte* const through = staging.backend_->host_address(staging.handle_);
        src.download(src_offset, through, bytes);
        dst.upload(dst_offset, through, bytes);
    }
}

}  // namespace rayo::detail
