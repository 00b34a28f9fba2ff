// CUDA test fixture: runs on the first CUDA device and skips with a message when the machine has
// none (no libcuda.so.1, or no NVIDIA GPU), so the suite passes unchanged on CI machines.
#pragma once

#include "support/test_support.hpp"

#include <optional>

#include "cuda/cuda_backend.hpp"
#include "core/device_registry.hpp"

namespace rayo::test {

inline std::optional<Device> first_cuda_device() {
    for (Device d : Device::all())
        if (d.kind() == DeviceKind::cuda) return d;
    return std::nullopt;
}

class CudaTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto d = first_cuda_device();
        if (!d) GTEST_SKIP() << "no CUDA device on this machine (libcuda.so.1 not found or no GPU)";
        device = *d;
        backend = &dynamic_cast<cuda::CudaBackend&>(detail::DeviceRegistry::instance().backend(device));
    }
    void TearDown() override {
        if (!IsSkipped()) device.synchronize();
    }
    Device device = Device::cpu();
    cuda::CudaBackend* backend = nullptr;
};

// A raw device buffer of the backend, released at scope exit.
class DeviceBuffer {
public:
    DeviceBuffer(detail::Backend& backend, std::size_t bytes) : backend_(backend), handle_(backend.allocate(bytes)) {}
    ~DeviceBuffer() { backend_.release(handle_); }
    DeviceBuffer(DeviceBuffer const&) = delete;
    DeviceBuffer& operator=(DeviceBuffer const&) = delete;
    [[nodiscard]] std::uintptr_t handle() const noexcept { return handle_; }

private:
    detail::Backend& backend_;
    std::uintptr_t handle_;
};

}  // namespace rayo::test
