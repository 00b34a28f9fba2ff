// Tensor maps for the kernels that copy tiles with the TMA: a rayo::ptx::TensorMapSpec encoded by
// the driver's cuTensorMapEncodeTiled into the 128 bytes such a kernel takes as a parameter.
#pragma once

#include "cuda/context.hpp"
#include "rayo/ptx/tensor_map.hpp"

namespace rayo::cuda {

// Throws rayo::Unsupported where the driver lacks cuTensorMapEncodeTiled, and rayo::DeviceError
// (naming every field) where it refuses the description.
[[nodiscard]] ptx::TensorMap encode_tensor_map(PrimaryContext const& context, ptx::TensorMapSpec const& spec);

}  // namespace rayo::cuda
