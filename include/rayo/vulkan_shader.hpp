// Compute shaders of one's own on rayo tensors: SPIR-V (from glslc, slangc, ...) dispatched on a
// Vulkan device's tensors, recorded in order with rayo's ops on that device.
//
//   // layout(set = 0, binding = 0) readonly buffer X { float x[]; };   binding 1: y
//   // layout(push_constant) uniform Push { float a; uint n; };
//   rayo::dispatch_vulkan_shader(dev, spirv, {(n + 63) / 64, 1, 1}, {x, y, 0.5f, n});
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>

#include "rayo/device.hpp"
#include "rayo/export.hpp"
#include "rayo/kernel_argument.hpp"

namespace rayo {

// Records a dispatch of `groups` workgroups of the compute shader `spirv` (entry point "main") on
// the Vulkan device, after the ops recorded there before and before those recorded after. The
// tensor arguments, in order, are its storage buffers `layout(set = 0, binding = i)`, each bound
// to exactly the tensor's bytes (its offset in the buffer a multiple of the device's
// minStorageBufferOffsetAlignment); the scalar arguments, in order, are its push-constant block
// (std430: 4-byte values packed, 8-byte values 8-aligned; at most 128 bytes). Every tensor counts
// as written. The pipeline is made the first time the code is seen and kept. rayo::Error, naming
// the argument, when the device is not a Vulkan device, the words are not SPIR-V, the tensors do
// not match the shader's bindings in number, a tensor is on another device, empty or misaligned,
// a group count is 0 or exceeds maxComputeWorkGroupCount, or the scalars exceed 128 bytes;
// nothing is recorded then. Not in a rayo::capture.
RAYO_API void dispatch_vulkan_shader(Device device, std::span<std::uint32_t const> spirv,
                                     std::array<std::uint32_t, 3> groups,
                                     std::initializer_list<KernelArgument> arguments);

}  // namespace rayo
