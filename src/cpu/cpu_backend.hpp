// The CPU backend: host memory, kernels of the selected ISA, work split over the thread pool.
#pragma once

#include "dispatch/backend.hpp"

namespace rayo::cpu {

class CpuBackend final : public detail::Backend {
public:
    [[nodiscard]] DeviceKind kind() const noexcept override { return DeviceKind::cpu; }
    [[nodiscard]] int index() const noexcept override { return 0; }
    [[nodiscard]] std::string name() const override;

    [[nodiscard]] std::uintptr_t allocate(std::size_t bytes) override;
    void release(std::uintptr_t buffer) noexcept override;
    void upload(std::uintptr_t dst, std::size_t offset, void const* src, std::size_t bytes) override;
    void download(std::uintptr_t src, std::size_t offset, void* dst, std::size_t bytes) override;
    void copy(std::uintptr_t src, std::size_t src_offset, std::uintptr_t dst, std::size_t dst_offset,
              std::size_t bytes) override;
    void fill(std::uintptr_t dst, std::size_t offset, std::size_t bytes, void const* pattern,
              std::size_t pattern_bytes) override;
    void synchronize() override {}

    void unary(detail::UnaryOp op, detail::UnaryParams params, detail::TensorView const& in,
               detail::TensorView const& out) override;
    void binary(detail::BinaryOp op, detail::TensorView const& a, detail::TensorView const& b,
                detail::TensorView const& out) override;
    void binary_scalar(detail::BinaryOp op, detail::TensorView const& a, float s, detail::TensorView const& out) override;
    void reduce(detail::ReduceOp op, detail::ReduceShape shape, bool mean, detail::TensorView const& in,
                detail::TensorView const& out) override;
    void dot(detail::TensorView const& a, detail::TensorView const& b, detail::TensorView const& out) override;
    void softmax(std::size_t rows, std::size_t cols, bool log, detail::TensorView const& in,
                 detail::TensorView const& out) override;
    void norm(detail::NormOp op, std::size_t rows, std::size_t cols, float eps, detail::TensorView const& in,
              detail::TensorView const& gamma, detail::TensorView const& beta, detail::TensorView const& out) override;
    void matmul(detail::MatmulShape shape, detail::TensorView const& a, detail::TensorView const& b,
                detail::TensorView const& out) override;
    void quantize(detail::TensorView const& in, detail::TensorView const& out) override;
    void dequantize(detail::TensorView const& in, detail::TensorView const& out) override;

private:
    void linear_quantized(detail::MatmulShape shape, detail::TensorView const& x, detail::TensorView const& w,
                          detail::TensorView const& out);
};

}  // namespace rayo::cpu
