// The CPU backend's quantize / dequantize entries (filled in with the K-quant kernels).
#include "cpu/cpu_backend.hpp"
#include "rayo/error.hpp"

namespace rayo::cpu {

void CpuBackend::quantize(detail::TensorView const&, detail::TensorView const&) {
    throw Unsupported("cpu: quantize is not available in this build");
}

void CpuBackend::dequantize(detail::TensorView const&, detail::TensorView const&) {
    throw Unsupported("cpu: dequantize is not available in this build");
}

}  // namespace rayo::cpu
