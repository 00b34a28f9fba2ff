// What the Vulkan backend's op files (src/vulkan/ops/) record dispatches with: a ShaderRunner,
// made by the backend for one op with the device mutex held. In an op's run():
//
//     Binding const x = r.bind(in, in.bytes(), Access::read, "softmax input");
//     Binding const y = r.bind(out, out.bytes(), Access::write, "softmax output");
//     ScratchBuffer tmp = r.scratch(bytes);          // device-local, freed once this batch completes
//     MyPush push{...};                              // any trivially copyable struct of <= 128 bytes
//     r.dispatch(Shader::my_shader, {op, 256, tile_m, tile_n}, {x, y, tmp.bind(Access::write)}, push, {gx, gy, 1});
//     r.dispatch(Shader::other, {...}, {tmp.bind(Access::read), y_rw}, push2, {gx2});  // barrier is automatic
//
// * Bindings: args[i] becomes storage buffer `layout(set = 0, binding = i)`, and a dispatch must
//   pass as many as the shader declares (read from its SPIR-V). The WHOLE allocation holding the
//   tensor is bound, so shaders index from its start: pass the view's offset in elements in the
//   push constants (Binding::element_offset(sizeof(T)); the view offset must be a multiple of the
//   element size, which bind() checks). Scratch buffers start at element 0.
// * Spec constants: SpecConstants = std::array<std::uint32_t, 8>, entry i is constant_id i; by
//   convention 0 = op code (a rayo::Op, as op_codes.glsl names them) or variant, 1 = workgroup size
//   (`layout(local_size_x_id = 1) in;`), 2..7 shader-specific (the _element16 builds take their
//   element type as 7, vulkan/ops/element_type.hpp). The pipeline cache adds constant 31
//   (RAYO_FUSED_FMA, float_math.glsl) from the device. One pipeline per (shader, constants).
// * Push constants: one range of max_push_constant_bytes (128) at offset 0 in every pipeline layout;
//   the shader's `layout(push_constant)` block mirrors the struct passed (std430-compatible layout).
// * Groups: {x, y, z}; each count must be <= max_groups() (65535, the device's limit or a test's cap, checked):
//   loop in the shader (grid stride) over larger work.
// * Barriers: the command stream inserts a pipeline barrier before a command whose ranges overlap
//   a range written earlier in the batch (read/write after write) or that writes a range read
//   earlier (write after read). So bind the exact ranges a dispatch touches, and mark every range
//   the shader writes (read-modify-write included) Access::write.
// * A tensor's buffer is not freed before the last batch that used it completes (dispatch() records
//   the serial); a ScratchBuffer is freed (deferred) when the object is destroyed.
#pragma once

#include <volk.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <type_traits>

#include "dispatch/tensor_view.hpp"
#include "vulkan/memory_allocator.hpp"
#include "vulkan/physical_device.hpp"
#include "vulkan/pipeline_cache.hpp"

namespace rayo::vulkan {

class VulkanBackend;

enum class Access : std::uint8_t { read, write };  // write: written, or read and written

// One storage-buffer argument of a dispatch: a whole allocation bound, and the range touched.
struct Binding {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize base = 0;  // the allocation bound (offset within buffer, size)
    VkDeviceSize size = 0;
    VkDeviceSize offset = 0;  // the range the dispatch touches, relative to base
    VkDeviceSize bytes = 0;
    Access access = Access::read;
    std::uint64_t* last_use = nullptr;  // the tensor's last-use serial; null for scratch buffers

    // The view's offset in elements of `element_bytes` (for the push constants).
    [[nodiscard]] std::uint32_t element_offset(std::size_t element_bytes) const noexcept {
        return static_cast<std::uint32_t>(offset / element_bytes);
    }
    // The same allocation, touching nothing: a binding the shader declares but this dispatch does
    // not read (an absent optional operand).
    [[nodiscard]] Binding untouched() const noexcept { return {buffer, base, size, 0, 0, Access::read, nullptr}; }
};

// A temporary device-local buffer for one op (partial results between two dispatches). Freed,
// after the batch that uses it completes, when the object goes out of scope.
class ScratchBuffer {
public:
    ScratchBuffer(VulkanBackend& backend, Allocation allocation) noexcept
        : backend_(&backend), allocation_(allocation) {}
    ~ScratchBuffer();
    ScratchBuffer(ScratchBuffer&& other) noexcept : backend_(other.backend_), allocation_(other.allocation_) {
        other.backend_ = nullptr;
    }
    ScratchBuffer(ScratchBuffer const&) = delete;
    ScratchBuffer& operator=(ScratchBuffer const&) = delete;
    ScratchBuffer& operator=(ScratchBuffer&&) = delete;

    // The whole buffer (or its first `bytes`) as a dispatch argument.
    [[nodiscard]] Binding bind(Access access, VkDeviceSize bytes = VK_WHOLE_SIZE) const noexcept {
        return {allocation_.buffer,
                allocation_.offset,
                allocation_.size,
                0,
                bytes == VK_WHOLE_SIZE ? allocation_.size : bytes,
                access,
                nullptr};
    }
    [[nodiscard]] VkDeviceSize size() const noexcept { return allocation_.size; }

private:
    VulkanBackend* backend_;
    Allocation allocation_;
};

// A buffer of the backend's for the length of one op, seen through a handle as tensors are
// (TensorView::buffer): an intermediate that the op passes between the backend's own ops. Freed
// once the work recorded on it has run.
class ScratchTensor {
public:
    ScratchTensor(VulkanBackend& backend, std::size_t bytes);
    ~ScratchTensor();
    ScratchTensor(ScratchTensor const&) = delete;
    ScratchTensor& operator=(ScratchTensor const&) = delete;
    [[nodiscard]] std::uintptr_t handle() const noexcept { return handle_; }

private:
    VulkanBackend* backend_;
    std::uintptr_t handle_;
};

struct Groups {
    std::uint32_t x = 1, y = 1, z = 1;
};

// The paths the tests switch between (diagnostics.hpp); the defaults are what users run.
struct PathSwitches {
    bool subgroups = true;            // subgroup arithmetic in reductions, softmax and norms
    bool storage16 = true;            // matmul reads f16 through 16-bit storage
    bool element16 = true;            // f16 / bf16 element-wise, row and reduction ops on the device
    bool cooperative_matrix = true;   // matmul's cooperative-matrix GEMM
    bool decoded_kquant_gemm = true;  // K-quant linear decodes the weights before the f32 GEMM
    std::optional<bool> integer_dot;  // the one-row q4_k GEMV's build; nullopt: where accelerated
    bool denorm_preserve = true;      // the DenormPreserve builds wherever the device has them
    std::uint32_t group_limit = 0;    // tests: at most this many workgroups a dimension (0: the device's)
};

class ShaderRunner {
public:
    explicit ShaderRunner(VulkanBackend& backend) noexcept : backend_(backend) {}

    [[nodiscard]] PhysicalDevice const& physical() const noexcept;
    [[nodiscard]] VkPhysicalDeviceLimits const& limits() const noexcept { return physical().properties.limits; }
    [[nodiscard]] PathSwitches const& switches() const noexcept;
    // The 1-D workgroup size of the element-wise shaders: 256, or the device's limit.
    [[nodiscard]] std::uint32_t workgroup_size() const noexcept;
    // The largest group count of one dimension a dispatch may use.
    [[nodiscard]] std::uint32_t max_groups() const noexcept;
    // Whether one invocation may run `iterations` loop iterations in all (PhysicalDevice::
    // loop_iteration_limit); an op that would need more throws Unsupported naming `what`, and
    // runs on the CPU, before anything is recorded.
    void check_loop_budget(std::uint64_t iterations, std::string const& what) const;
    // Subgroup arithmetic in compute shaders, and not turned off by the tests.
    [[nodiscard]] bool subgroups() const noexcept { return switches().subgroups && physical().subgroup_arithmetic; }

    // A tensor's range [view.offset, view.offset + bytes) as a dispatch argument; checks range and alignment.
    [[nodiscard]] Binding bind(detail::TensorView const& view, std::size_t bytes, Access access, char const* what);
    [[nodiscard]] ScratchBuffer scratch(std::size_t bytes);
    [[nodiscard]] ScratchTensor scratch_tensor(std::size_t bytes) { return {backend_, bytes}; }
    // A scratch buffer of at least `bytes` kept by the backend for the next op that asks (a new
    // allocation of that size costs milliseconds): linear's decoded K-quant weights.
    [[nodiscard]] ScratchBuffer const& kept_scratch(std::size_t bytes);
    // Records one dispatch; `push` is at most max_push_constant_bytes.
    void dispatch(Shader shader, SpecConstants const& constants, std::span<Binding const> args,
                  std::span<std::byte const> push, Groups groups);
    template <class Push>
    void dispatch(Shader shader, SpecConstants const& constants, std::initializer_list<Binding> args, Push const& push,
                  Groups groups) {
        static_assert(std::is_trivially_copyable_v<Push> && sizeof(Push) <= max_push_constant_bytes);
        dispatch(shader, constants, std::span<Binding const>(args.begin(), args.size()),
                 std::as_bytes(std::span<Push const, 1>(&push, 1)), groups);
    }
    // Records one dispatch of a pipeline made by the cache (a caller's shader: `name` for the
    // stream's labels); `args` must match its bindings.
    void dispatch(Pipeline const& pipeline, std::string_view name, std::span<Binding const> args,
                  std::span<std::byte const> push, Groups groups);
    // The device's fault record (dispatch/device_fault.hpp) as a dispatch argument, for a shader
    // that notes an index out of range; the device raises it at its next host read or synchronize().
    [[nodiscard]] Binding fault_record();
    // Records filling `bytes` of a binding with a repeated 4-byte word.
    void fill(Binding const& target, std::uint32_t word);

private:
    // Throws for too many push-constant bytes or workgroups; false for an empty dispatch.
    [[nodiscard]] bool dispatchable(std::span<std::byte const> push, Groups groups) const;

    VulkanBackend& backend_;
};

}  // namespace rayo::vulkan
