// Native handles (rayo/native.hpp): the checks every backend shares, and the backends' defaults.
#include "rayo/native.hpp"

#include <string>

#include "core/capture_guard.hpp"
#include "core/device_backend.hpp"
#include "core/device_registry.hpp"
#include "rayo/error.hpp"

namespace rayo {

namespace {

std::string hex(std::uint64_t value) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string text;
    do {
        text.insert(text.begin(), digits[value % 16]);
        value /= 16;
    } while (value);
    return "0x" + text;
}

template <class Handles>
Handles handles_of(Device device, DeviceKind kind, char const* what) {
    if (device.kind() != kind)
        throw Error(std::string(what) + ": " + device.id() + " is not a " + std::string(to_string(kind)) + " device");
    auto const handles = detail::DeviceRegistry::instance().backend(device).native_handles();
    return std::get<Handles>(handles);
}

// A buffer's address must suit its elements: the block types start with an f16 scale.
std::size_t element_alignment(DType dtype) { return block_elements(dtype) > 1 ? 2 : size_of(dtype); }

void check_native(Device device, NativeMemory const& memory, DType dtype, Shape const& shape) {
    std::string const what = "from_native_memory: " + std::string(to_string(dtype)) + " tensor of shape " +
                             shape.to_string() + " on " + device.id();
    if (memory.kind != device.kind())
        throw Error(what + ": the memory is " + std::string(to_string(memory.kind)) + " memory");
    std::size_t const values = block_elements(dtype);
    if (values > 1 && (shape.rank() == 0 || shape[shape.rank() - 1] % static_cast<std::int64_t>(values) != 0))
        throw ShapeError(what + ": the last dimension must be a multiple of " + std::to_string(values));
    std::size_t const needed = bytes_for(dtype, shape.numel());
    if (needed > memory.bytes)
        throw ShapeError(what + ": needs " + std::to_string(needed) + " bytes, the memory holds " +
                         std::to_string(memory.bytes));
    if (memory.handle == 0 && memory.bytes != 0) throw Error(what + ": the memory's handle is null");
    std::size_t const alignment = element_alignment(dtype);
    // A Vulkan handle is a VkBuffer, whose offsets the backend checks against the device's limit.
    std::uint64_t const address = memory.kind == DeviceKind::vulkan ? memory.offset : memory.handle + memory.offset;
    if (address % alignment != 0)
        throw Error(what + ": address " + hex(memory.handle) + " + offset " + std::to_string(memory.offset) +
                    " is not aligned to the " + std::to_string(alignment) + "-byte elements");
}

}  // namespace

CudaHandles cuda_handles(Device device) { return handles_of<CudaHandles>(device, DeviceKind::cuda, "cuda_handles"); }

VulkanHandles vulkan_handles(Device device) {
    return handles_of<VulkanHandles>(device, DeviceKind::vulkan, "vulkan_handles");
}

namespace detail {

NativeMemory DeviceBackend::native_memory(std::uintptr_t buffer) const {
    std::byte const* const address = host_address(buffer);
    if (!address) throw Unsupported(std::string(to_string(kind())) + ": no native memory handle");
    return {kind(), reinterpret_cast<std::uintptr_t>(address), 0, 0};
}

std::uintptr_t DeviceBackend::adopt(NativeMemory const&) {
    throw Unsupported(std::string(to_string(kind())) + ": this backend does not adopt native memory");
}

NativeMemory native_memory(Storage const& storage, std::size_t offset, std::size_t bytes) {
    NativeMemory memory = storage.backend().native_memory(storage.handle());
    memory.kind = storage.device().kind();
    if (memory.kind == DeviceKind::vulkan)  // a buffer and an offset in it
        memory.offset += offset;
    else
        memory.handle += offset;
    memory.bytes = bytes;
    return memory;
}

std::shared_ptr<Storage> adopt_native_memory(Device device, NativeMemory const& memory, DType dtype, Shape const& shape,
                                             std::function<void()> release) {
    check_native(device, memory, dtype, shape);
    if (capturing_device())
        refuse_in_capture("from_native_memory of " + std::to_string(memory.bytes) + " bytes on " + device.id());
    DeviceBackend& backend = DeviceRegistry::instance().backend(device);
    std::uintptr_t const handle = backend.adopt(memory);
    try {
        return std::make_shared<Storage>(device, backend, handle, static_cast<std::size_t>(memory.bytes),
                                         std::move(release));
    } catch (...) {
        backend.forget(handle);
        throw;
    }
}

}  // namespace detail

}  // namespace rayo
