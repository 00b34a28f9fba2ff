// The element types of the element-wise, row and reduction shaders: f32 tensors through a shader's
// plain build, f16 and bf16 ones through its _element16 build (shaders/element16.glsl), which reads
// and writes them through 16-bit storage and takes the type as specialization constant 7.
#pragma once

#include <string>

#include "vulkan/ops/ops.hpp"

namespace rayo::vulkan::ops {

// The specialization constant of the element type.
inline constexpr std::size_t element_type_constant = 7;

// yes for f32; for f16 and bf16, yes where the device has 16-bit storage (otherwise the op runs on
// the CPU, logged once and counted in rayo::stats(), as every op a device cannot run; the tests'
// switch PathSwitches::element16 does the same on any device).
[[nodiscard]] inline Support element_type_supported(ShaderRunner const& r, Op op, DType type) {
    if (type == DType::f32) return Support::yes();
    std::string const what =
        "vulkan: " + std::string(to_string(op)) + " of " + std::string(to_string(type)) + " tensors";
    if (!r.physical().storage_buffer_16bit)
        return Support::no(what + " needs 16-bit storage (storageBuffer16BitAccess), which this device lacks");
    if (!r.switches().element16) return Support::no(what + ": the 16-bit builds are switched off");
    return Support::yes();
}

// The build of a shader for tensors of `type`: `f32_build`, or `element16_build` with the type set
// in `constants`.
[[nodiscard]] inline Shader element_build(Shader f32_build, Shader element16_build, DType type,
                                          SpecConstants& constants) {
    if (type == DType::f32) return f32_build;
    constants[element_type_constant] = static_cast<std::uint32_t>(type);
    return element16_build;
}

}  // namespace rayo::vulkan::ops
