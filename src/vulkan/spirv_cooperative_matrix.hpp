// The cooperative-matrix GEMM's SPIR-V for VK_KHR_cooperative_matrix, with a toolchain that knows
// only the NV extension: Debian's glslc compiles GL_NV_cooperative_matrix only, so
// shaders/matmul_coopmat.comp is written for it and its SPIR-V is rewritten for the KHR extension
// when the pipeline is made. The KHR types say which operand a matrix is (A, B or accumulator); with
// the NV types, which do not, NVIDIA's compiler transposes every B fragment again before each
// product (the figures: docs/backends/vulkan.md).
// Free of Vulkan headers: pure SPIR-V, tested on the host.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace rayo::vulkan::spirv {

// SPIR-V's MatrixUse operand of OpTypeCooperativeMatrixKHR.
enum class MatrixUse : std::uint32_t { a = 0, b = 1, accumulator = 2 };

// Which use an NV matrix type (float component width, rows, columns) takes.
struct MatrixType {
    std::uint32_t component_bits, rows, columns;
    MatrixUse use;
};

// matmul_coopmat.comp's fragments: a 16x16, b 16x8 (f16), the accumulator 16x8 (f32); one product
// is one HMMA.16816.
inline constexpr MatrixType gemm_matrix_types[] = {
    {16, 16, 16, MatrixUse::a}, {16, 16, 8, MatrixUse::b}, {32, 16, 8, MatrixUse::accumulator}};

// The module with SPV_NV_cooperative_matrix's capability, extension, type and instructions replaced
// by SPV_KHR_cooperative_matrix's: each matrix type takes its use from `types`, loads and stores
// their layout (row- or column-major) from the NV instruction's constant flag. Throws rayo::Error
// for a module it cannot rewrite (malformed, a matrix type not in `types`, a layout flag that is not
// a constant).
[[nodiscard]] std::vector<std::uint32_t> cooperative_matrix_nv_to_khr(std::span<std::uint32_t const> spirv,
                                                                      std::span<MatrixType const> types);

}  // namespace rayo::vulkan::spirv
