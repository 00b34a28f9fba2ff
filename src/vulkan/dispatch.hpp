// Recording compute dispatches on the Vulkan backend: the general path every op's shader takes
// (VulkanBackend's private helpers, defined in vulkan_dispatch.cpp). Use, in a VulkanBackend
// member, with the device mutex held:
//
//     std::lock_guard lock(mutex_);                 // first: scratch buffers below are freed under it
//     reclaim();
//     Binding const x = bind(in, in.numel * sizeof(float), Access::read, "softmax input");
//     Binding const y = bind(out, out.numel * sizeof(float), Access::write, "softmax output");
//     ScratchBuffer tmp = scratch(bytes);          // device-local temporary, freed once this batch completes
//     MyPush push{...};                            // any trivially copyable struct of <= 128 bytes
//     dispatch(Shader::my_shader, {op, 256, tile_m, tile_n}, {x, y, tmp.bind(Access::write)}, push, {gx, gy, 1});
//     dispatch(Shader::other, {...}, {tmp.bind(Access::read), y_rw}, push2, {gx2});  // barrier is automatic
//     stream_.submit_if_large();                   // once, at the end of the op
//
// * Bindings: args[i] becomes storage buffer `layout(set = 0, binding = i)`; the shader's binding count
//   is registered next to its SPIR-V in pipeline_cache.cpp (info()) and must equal args.size(). The
//   WHOLE allocation holding the tensor is bound, so shaders index from its start: pass the view's
//   offset in elements in the push constants (Binding::element_offset(sizeof(T)); the view offset must
//   be a multiple of the element size, which bind() checks). Scratch buffers start at element 0.
// * Spec constants: SpecConstants = std::array<std::uint32_t, 8>, entry i is constant_id i; by
//   convention 0 = op code / variant, 1 = workgroup size (`layout(local_size_x_id = 1) in;`),
//   2..7 shader-specific. The pipeline cache adds constant 31 (RAYO_FUSED_FMA, float_math.glsl) from
//   the device. One pipeline per distinct (shader, constants), cached for the device's life.
// * Push constants: one range of max_push_constant_bytes (128) at offset 0 in every pipeline layout;
//   the shader's `layout(push_constant)` block mirrors the struct passed (std430-compatible layout).
// * Groups: {x, y, z}; each count must be <= max_groups() (65535 or the device's limit, checked):
//   loop in the shader (grid stride) over larger work.
// * Barriers: CommandStream::record() inserts a pipeline barrier before a command whose ranges
//   overlap a range written earlier in the batch (read/write after write) or that writes a range
//   read earlier (write after read). So bind the exact ranges a dispatch touches, and mark every
//   range the shader writes (read-modify-write included) Access::write.
// * A tensor's buffer is not freed before the last batch that used it completes (dispatch() records
//   the serial); a ScratchBuffer is freed (deferred) when the object is destroyed.
#pragma once

#include <volk.h>

#include <cstddef>
#include <cstdint>

#include "vulkan/memory_allocator.hpp"

namespace rayo::vulkan {

class VulkanBackend;

enum class Access : std::uint8_t { read, write };  // write: written, or read and written

// One storage-buffer argument of a dispatch: a whole allocation bound, and the range touched.
struct Binding {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize base = 0;   // the allocation bound (offset within buffer, size)
    VkDeviceSize size = 0;
    VkDeviceSize offset = 0;  // the range the dispatch touches, relative to base
    VkDeviceSize bytes = 0;
    Access access = Access::read;
    std::uint64_t* last_use = nullptr;  // the tensor's last-use serial; null for scratch buffers

    // The view's offset in elements of `element_bytes` (for the push constants).
    [[nodiscard]] std::uint32_t element_offset(std::size_t element_bytes) const noexcept {
        return static_cast<std::uint32_t>(offset / element_bytes);
    }
};

// A temporary device-local buffer for one op (partial results between two dispatches). Freed,
// after the batch that uses it completes, when the object goes out of scope; declare it after the
// lock on the device mutex so that this happens under the lock.
class ScratchBuffer {
public:
    ScratchBuffer(VulkanBackend& backend, Allocation allocation) noexcept : backend_(&backend), allocation_(allocation) {}
    ~ScratchBuffer();
    ScratchBuffer(ScratchBuffer&& other) noexcept : backend_(other.backend_), allocation_(other.allocation_) {
        other.backend_ = nullptr;
    }
    ScratchBuffer(ScratchBuffer const&) = delete;
    ScratchBuffer& operator=(ScratchBuffer const&) = delete;
    ScratchBuffer& operator=(ScratchBuffer&&) = delete;

    // The whole buffer (or its first `bytes`) as a dispatch argument.
    [[nodiscard]] Binding bind(Access access, VkDeviceSize bytes = VK_WHOLE_SIZE) const noexcept {
        return {allocation_.buffer, allocation_.offset, allocation_.size, 0,
                bytes == VK_WHOLE_SIZE ? allocation_.size : bytes, access, nullptr};
    }
    [[nodiscard]] VkDeviceSize size() const noexcept { return allocation_.size; }

private:
    VulkanBackend* backend_;
    Allocation allocation_;
};

struct Groups {
    std::uint32_t x = 1, y = 1, z = 1;
};

}  // namespace rayo::vulkan
