// The interface every backend implements. Ops see tensors as TensorViews: a buffer handle, a byte
// offset and an element count, all contiguous. A backend that cannot run an op on its device
// throws rayo::Unsupported; the dispatcher then runs the op on the CPU through host copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "rayo/device.hpp"
#include "rayo/detail/op_codes.hpp"
#include "rayo/dtype.hpp"

namespace rayo::detail {

struct TensorView {
    std::uintptr_t buffer = 0;  // the backend's handle
    std::size_t offset = 0;     // bytes
    std::size_t numel = 0;
    DType dtype = DType::f32;
};

// out[m, n] = a[m, k] · op(b), where op(b) = b[k, n], or b[n, k]ᵀ when b_transposed.
struct MatmulShape {
    std::size_t m = 0, n = 0, k = 0;
    bool b_transposed = false;
};

// A tensor viewed as [outer, extent, inner] around the reduced axis.
struct ReduceShape {
    std::size_t outer = 1, extent = 1, inner = 1;
};

class Backend {
public:
    virtual ~Backend() = default;

    [[nodiscard]] virtual DeviceKind kind() const noexcept = 0;
    [[nodiscard]] virtual int index() const noexcept = 0;
    [[nodiscard]] virtual std::string name() const = 0;
    // Software devices (lavapipe) are never picked by Device::best().
    [[nodiscard]] virtual bool is_software() const noexcept { return false; }
    // Device::best() prefers a discrete GPU over integrated and virtual ones.
    [[nodiscard]] virtual bool is_discrete_gpu() const noexcept { return false; }

    // Memory. allocate(0) returns a valid handle; release never throws.
    [[nodiscard]] virtual std::uintptr_t allocate(std::size_t bytes) = 0;
    virtual void release(std::uintptr_t buffer) noexcept = 0;
    virtual void upload(std::uintptr_t dst, std::size_t offset, void const* src, std::size_t bytes) = 0;
    virtual void download(std::uintptr_t src, std::size_t offset, void* dst, std::size_t bytes) = 0;
    virtual void copy(std::uintptr_t src, std::size_t src_offset, std::uintptr_t dst, std::size_t dst_offset,
                      std::size_t bytes) = 0;
    // Fills `bytes` with a repeated pattern of `pattern_bytes` (1, 2, 4 or 8).
    virtual void fill(std::uintptr_t dst, std::size_t offset, std::size_t bytes, void const* pattern,
                      std::size_t pattern_bytes) = 0;
    virtual void synchronize() = 0;

    // Ops (f32 unless stated). Shapes are validated by the caller.
    virtual void unary(UnaryOp op, UnaryParams params, TensorView const& in, TensorView const& out) = 0;
    virtual void binary(BinaryOp op, TensorView const& a, TensorView const& b, TensorView const& out) = 0;
    virtual void binary_scalar(BinaryOp op, TensorView const& a, float s, TensorView const& out) = 0;
    // Writes shape.outer * shape.inner results: f32 for sum/max/min, i64 for argmax/argmin.
    // `mean` divides sums by the extent.
    virtual void reduce(ReduceOp op, ReduceShape shape, bool mean, TensorView const& in, TensorView const& out) = 0;
    virtual void dot(TensorView const& a, TensorView const& b, TensorView const& out) = 0;
    virtual void softmax(std::size_t rows, std::size_t cols, bool log, TensorView const& in,
                         TensorView const& out) = 0;
    // gamma/beta have numel 0 when absent (beta is ignored for rms_norm).
    virtual void norm(NormOp op, std::size_t rows, std::size_t cols, float eps, TensorView const& in,
                      TensorView const& gamma, TensorView const& beta, TensorView const& out) = 0;
    // a and b are f32, f16 or bf16 (the same type or f32 activations with a narrower b); out f32.
    virtual void matmul(MatmulShape shape, TensorView const& a, TensorView const& b, TensorView const& out) = 0;
    // f32 values -> blocks of out.dtype (q4_k, q6_k, q8_k), and back. Blocks are independent, so
    // only the value count (in.numel / out.numel) matters.
    virtual void quantize(TensorView const& in, TensorView const& out) = 0;
    virtual void dequantize(TensorView const& in, TensorView const& out) = 0;
};

}  // namespace rayo::detail
