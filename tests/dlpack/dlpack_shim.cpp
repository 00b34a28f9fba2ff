// A C interface over rayo/dlpack.hpp for check_dlpack.py, which loads it with ctypes and hands its
// DLManagedTensors to NumPy / PyTorch and theirs to rayo.
#include <rayo/dlpack.hpp>
#include <rayo/rayo.hpp>

#include <cmath>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace {
std::string last_error;
}

extern "C" {

// A [rows, cols] f32 tensor on `device` ("cpu", "cuda:0", ...) holding 0.5 * (row * cols + col)
// - 3, as a DLManagedTensor; nullptr on failure (rayo_shim_last_error says why).
__attribute__((visibility("default"))) DLManagedTensor* rayo_shim_iota(char const* device, int rows, int cols) {
    try {
        std::vector<float> values(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
        for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.5f * static_cast<float>(i) - 3.0f;
        auto const t = rayo::FTensor::from(values, {static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)},
                                           rayo::Device::parse(device));
        return rayo::to_dlpack(t);
    } catch (std::exception const& e) {
        last_error = e.what();
        return nullptr;
    }
}

// Takes an f32 DLManagedTensor, doubles it in place with a rayo op and returns the sum of the
// result as rayo computes it; NaN on failure (rayo_shim_last_error says why).
__attribute__((visibility("default"))) double rayo_shim_double_in_place(DLManagedTensor* managed) {
    try {
        auto const t = rayo::from_dlpack<float>(managed);
        rayo::add_into(t, t, t);
        return static_cast<double>(rayo::sum(t).item());
    } catch (std::exception const& e) {
        last_error = e.what();
        return std::nan("");
    }
}

// Bytes of host memory rayo's CPU tensors hold now.
__attribute__((visibility("default"))) std::uint64_t rayo_shim_cpu_bytes_in_use() {
    return rayo::Device::cpu().memory_usage().in_use_bytes;
}

__attribute__((visibility("default"))) char const* rayo_shim_last_error() { return last_error.c_str(); }
}
