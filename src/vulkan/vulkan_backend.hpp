// The Vulkan backend for one physical device: tensors in suballocated device-local memory,
// uploads and downloads through staging memory, ops recorded into batched command buffers.
// One mutex per device makes it safe to use from several host threads.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <span>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dispatch/backend.hpp"
#include "vulkan/command_stream.hpp"
#include "vulkan/diagnostics.hpp"
#include "vulkan/dispatch.hpp"
#include "vulkan/logical_device.hpp"
#include "vulkan/memory_allocator.hpp"
#include "vulkan/pipeline_cache.hpp"

namespace rayo::vulkan {

class VulkanBackend final : public detail::Backend {
public:
    VulkanBackend(PhysicalDevice const& physical, int index);
    ~VulkanBackend() override;

    [[nodiscard]] DeviceKind kind() const noexcept override { return DeviceKind::vulkan; }
    [[nodiscard]] int index() const noexcept override { return index_; }
    [[nodiscard]] std::string name() const override { return device_.physical().description(); }
    [[nodiscard]] bool is_software() const noexcept override { return device_.physical().is_software(); }
    [[nodiscard]] bool is_discrete_gpu() const noexcept override { return device_.physical().is_discrete(); }

    [[nodiscard]] std::uintptr_t allocate(std::size_t bytes) override;
    void release(std::uintptr_t buffer) noexcept override;
    void upload(std::uintptr_t dst, std::size_t offset, void const* src, std::size_t bytes) override;
    void download(std::uintptr_t src, std::size_t offset, void* dst, std::size_t bytes) override;
    void copy(std::uintptr_t src, std::size_t src_offset, std::uintptr_t dst, std::size_t dst_offset,
              std::size_t bytes) override;
    void fill(std::uintptr_t dst, std::size_t offset, std::size_t bytes, void const* pattern,
              std::size_t pattern_bytes) override;
    void synchronize() override;

    void unary(detail::UnaryOp op, detail::UnaryParams params, detail::TensorView const& in,
               detail::TensorView const& out) override;
    void binary(detail::BinaryOp op, detail::TensorView const& a, detail::TensorView const& b,
                detail::TensorView const& out) override;
    void binary_scalar(detail::BinaryOp op, detail::TensorView const& a, float s, detail::TensorView const& out) override;
    // reduce, dot: vulkan_reductions.cpp; softmax, norm: vulkan_rows.cpp.
    void reduce(detail::ReduceOp op, detail::ReduceShape shape, bool mean, detail::TensorView const& in,
                detail::TensorView const& out) override;
    void dot(detail::TensorView const& a, detail::TensorView const& b, detail::TensorView const& out) override;
    void softmax(std::size_t rows, std::size_t cols, bool log, detail::TensorView const& in,
                 detail::TensorView const& out) override;
    void norm(detail::NormOp op, std::size_t rows, std::size_t cols, float eps, detail::TensorView const& in,
              detail::TensorView const& gamma, detail::TensorView const& beta, detail::TensorView const& out) override;
    // matmul: vulkan_matmul.cpp; quantize, dequantize: vulkan_quant.cpp.
    void matmul(detail::MatmulShape shape, detail::TensorView const& a, detail::TensorView const& b,
                detail::TensorView const& out) override;
    void quantize(detail::TensorView const& in, detail::TensorView const& out) override;
    void dequantize(detail::TensorView const& in, detail::TensorView const& out) override;

    [[nodiscard]] MemoryStats memory_stats() const;
    // Tests only: false makes reductions, softmax and norms take the shared-memory path even on a
    // device with subgroup arithmetic (so both paths are exercised where both exist).
    void use_subgroups(bool enabled);
    // Tests only: false makes matmul read f16 as packed words / skip the cooperative-matrix GEMM.
    void use_matmul_features(bool storage16, bool cooperative_matrix);
    void use_decoded_kquant_gemm(bool decode_first);
    [[nodiscard]] bool has_subgroup_arithmetic() const noexcept { return device_.physical().subgroup_arithmetic; }
    [[nodiscard]] bool has_integer_dot_product() const noexcept { return device_.physical().integer_dot_product; }
    [[nodiscard]] bool has_cooperative_matrix() const noexcept {
        return device_.physical().cooperative_matrix != PhysicalDevice::CooperativeMatrix::none;
    }
    // Tests only: see diagnostics.hpp's use_integer_dot_product.
    void use_integer_dot_product(std::optional<bool> enabled);
    [[nodiscard]] SubnormalSupport subnormal_support() const;
    // Tests only: false makes every shader run its default-mode build, as on a device that cannot
    // preserve subnormals; true restores the DenormPreserve builds where the device has them.
    void use_denorm_preserve(bool enabled);

private:
    friend class ScratchBuffer;
    struct Buffer {
        Allocation allocation;
        std::uint64_t last_use = 0;  // serial of the last batch that touched it
    };
    struct PendingFree {
        std::uint64_t serial;
        Allocation allocation;
        bool staging;
    };

    Buffer& buffer(std::uintptr_t handle);
    void reclaim();  // frees what the GPU has finished with
    void free_after(std::uint64_t serial, Allocation const& a, bool staging);
    void check_range(Buffer const& b, std::size_t offset, std::size_t bytes, char const* what) const;
    void elementwise(Shader shader, SpecConstants constants, detail::TensorView const& a,
                     detail::TensorView const* b, detail::TensorView const& out, float pa, float pb);
    [[noreturn]] void not_yet(char const* op) const;

    // ---- The general dispatch path (see vulkan/dispatch.hpp); all need the device mutex held ----
    // A tensor's range [view.offset, view.offset + bytes) as a dispatch argument; checks range and alignment.
    [[nodiscard]] Binding bind(detail::TensorView const& view, std::size_t bytes, Access access, char const* what);
    [[nodiscard]] ScratchBuffer scratch(std::size_t bytes);
    // Records one dispatch; `push` is at most max_push_constant_bytes.
    void dispatch(Shader shader, SpecConstants const& constants, std::span<Binding const> args,
                  std::span<std::byte const> push, Groups groups);
    template <class Push>
    void dispatch(Shader shader, SpecConstants const& constants, std::initializer_list<Binding> args,
                  Push const& push, Groups groups) {
        static_assert(std::is_trivially_copyable_v<Push> && sizeof(Push) <= max_push_constant_bytes);
        dispatch(shader, constants, std::span<Binding const>(args.begin(), args.size()),
                 std::as_bytes(std::span<Push const, 1>(&push, 1)), groups);
    }
    // The largest group count of one dimension a dispatch may use.
    [[nodiscard]] std::uint32_t max_groups() const noexcept;
    // Subgroup arithmetic in compute shaders, and not turned off by use_subgroups(false).
    [[nodiscard]] bool subgroups() const noexcept { return use_subgroups_ && device_.physical().subgroup_arithmetic; }
    // The DenormPreserve builds wherever the device can run them, unless use_denorm_preserve(false).
    [[nodiscard]] DenormMode denorm_mode() const noexcept {
        return use_denorm_preserve_ && device_.physical().preserves_f32_subnormals() ? DenormMode::preserve
                                                                                       : DenormMode::device_default;
    }
    // linear(x, w) with q4_k / q6_k weights (vulkan_quant.cpp): f32 GEMV for few rows of x.
    void linear_quantized_gemv(detail::MatmulShape shape, detail::TensorView const& x, detail::TensorView const& w,
                               detail::TensorView const& out);
    // Records the decoding of `count` values of q4_k / q6_k / q8_k blocks at `in` into f32 at `out`
    // (quant_dequantize.comp; vulkan_quant.cpp). The caller holds mutex_.
    void record_dequantize(Binding const& in, DType type, std::size_t count, Binding const& out);
    void reduce_to(detail::ReduceOp op, detail::ReduceShape shape, bool mean, detail::TensorView const& in,
                   detail::TensorView const* other, detail::TensorView const& out);
    void row_op(std::uint32_t op, std::size_t rows, std::size_t cols, float eps, detail::TensorView const& in,
                detail::TensorView const* gamma, detail::TensorView const* beta, detail::TensorView const& out);

    int index_;
    // Destroyed in reverse: pipelines, the stream (waits for the GPU), memory, then the device.
    LogicalDevice device_;
    MemoryAllocator device_memory_;
    MemoryAllocator staging_memory_;
    CommandStream stream_;
    PipelineCache pipelines_;
    mutable std::mutex mutex_;
    std::unordered_map<std::uintptr_t, Buffer> buffers_;
    std::uintptr_t next_handle_ = 1;
    std::vector<PendingFree> pending_;
    // linear's f32 copy of K-quant weights (vulkan_matmul.cpp), kept for the next call (a new
    // allocation of that size costs milliseconds) until a larger one is needed or the backend goes.
    std::optional<ScratchBuffer> kquant_decoded_;
    std::uint32_t workgroup_size_ = 256;
    bool use_subgroups_ = true;
    bool use_storage16_ = true;
    bool use_cooperative_matrix_ = true;
    bool use_decoded_kquant_gemm_ = true;
    std::optional<bool> use_integer_dot_product_;  // nullopt: where accelerated
    bool use_denorm_preserve_ = true;
};

// The Vulkan backend behind `device` (the diagnostics and test switches of diagnostics.hpp);
// throws rayo::Error when `device` is not a Vulkan device of this process.
[[nodiscard]] VulkanBackend& backend_of(Device device);

}  // namespace rayo::vulkan
