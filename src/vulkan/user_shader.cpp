// dispatch_vulkan_shader (rayo/vulkan_shader.hpp): a caller's SPIR-V recorded on its tensors like
// one of rayo's shaders, after the checks that keep the device's state intact.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/capture_guard.hpp"
#include "core/device_registry.hpp"
#include "rayo/error.hpp"
#include "rayo/vulkan_shader.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace rayo {

namespace vulkan {

namespace {

using Kind = KernelArgument::Kind;

// The scalars in order as a std430 push-constant block.
std::vector<std::byte> push_constants(std::span<KernelArgument const> arguments, std::string const& what) {
    std::vector<std::byte> block;
    for (KernelArgument const& a : arguments) {
        if (a.kind() == Kind::tensor) continue;
        std::size_t const bytes = a.kind() == Kind::s64 || a.kind() == Kind::u64 ? 8 : 4;
        std::size_t const at = (block.size() + bytes - 1) / bytes * bytes;
        block.resize(at + bytes);
        std::uint64_t const bits = a.bits();
        std::memcpy(block.data() + at, &bits, bytes);  // little-endian: a 4-byte value is the low bytes
    }
    if (block.size() > max_push_constant_bytes)
        throw Error(what + ": " + std::to_string(block.size()) + " bytes of scalar arguments (push constants hold " +
                    std::to_string(max_push_constant_bytes) + ")");
    return block;
}

}  // namespace

void VulkanBackend::dispatch_user_shader(std::span<std::uint32_t const> spirv, Groups groups,
                                         std::span<KernelArgument const> arguments, std::string const& what) {
    std::vector<std::byte> const push = push_constants(arguments, what);
    std::lock_guard lock(mutex_);
    refuse_while_captured("a shader of one's own");
    Pipeline const& pipeline = pipelines_.get_user(spirv);
    std::size_t const tensors = static_cast<std::size_t>(
        std::ranges::count_if(arguments, [](KernelArgument const& a) { return a.kind() == Kind::tensor; }));
    if (tensors != pipeline.bindings)
        throw Error(what + ": " + std::to_string(tensors) + " tensors for the shader's " +
                    std::to_string(pipeline.bindings) + " storage-buffer bindings");
    VkDeviceSize const alignment = device_.physical().properties.limits.minStorageBufferOffsetAlignment;
    std::vector<Binding> bindings;
    for (std::size_t i = 0; i < arguments.size(); ++i) {
        KernelArgument const& a = arguments[i];
        if (a.kind() != Kind::tensor) continue;
        std::string const which =
            what + ": argument " + std::to_string(i) + " (binding " + std::to_string(bindings.size()) + ")";
        if (a.bytes() == 0) throw Error(which + " is an empty tensor, which cannot be bound");
        Buffer& b = buffer(a.storage().handle());
        check_range(b, a.offset(), a.bytes(), "a shader's binding");
        VkDeviceSize const start = b.allocation.offset + a.offset();
        if (start % alignment != 0)
            throw Error(which + " starts at byte " + std::to_string(start) + " of its buffer, not a multiple of " +
                        std::to_string(alignment) + " (minStorageBufferOffsetAlignment): bind the whole tensor");
        bindings.push_back({b.allocation.buffer, start, a.bytes(), 0, a.bytes(), Access::write, &b.last_use});
    }
    ShaderRunner(*this).dispatch(pipeline, "user_shader", bindings, push, groups);
}

}  // namespace vulkan

void dispatch_vulkan_shader(Device device, std::span<std::uint32_t const> spirv, std::array<std::uint32_t, 3> groups,
                            std::initializer_list<KernelArgument> arguments) {
    std::string const what = "dispatch_vulkan_shader on " + device.id();
    if (device.kind() != DeviceKind::vulkan) throw Error(what + ": not a Vulkan device");
    if (detail::capturing_device()) detail::refuse_in_capture(what);  // a graph replays rayo's ops only
    char const axes[] = {'x', 'y', 'z'};
    for (int i = 0; i < 3; ++i)
        if (groups[i] == 0) throw Error(what + ": the group count's " + axes[i] + " is 0");
    for (std::size_t i = 0; i < arguments.size(); ++i) {
        KernelArgument const& a = arguments.begin()[i];
        if (a.kind() == KernelArgument::Kind::tensor && a.storage().device() != device)
            throw Error(what + ": argument " + std::to_string(i) + " is a tensor on " + a.storage().device().id());
    }
    auto& backend = dynamic_cast<vulkan::VulkanBackend&>(detail::DeviceRegistry::instance().backend(device));
    backend.dispatch_user_shader(spirv, {groups[0], groups[1], groups[2]}, {arguments.begin(), arguments.size()}, what);
}

}  // namespace rayo
