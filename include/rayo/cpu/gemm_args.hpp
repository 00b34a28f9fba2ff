// The description of one GEMM that the CPU packers, micro-kernels and driver share.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rayo::cpu {

// Element types a GEMM operand may have in memory; packing converts them to f32. The block types
// are for B only, stored as weight rows (B(p, j) = value p of row j, b_col = bytes per row) and
// decoded up to 256 values (whole blocks) at a time, so depth blocks start and end on 256-value
// boundaries.
enum class GemmType : std::uint8_t { f32, f16, bf16, q4_k, q6_k, q8_0, q4_0, q5_k };

constexpr bool is_quantized(GemmType t) noexcept {
    return t == GemmType::q4_k || t == GemmType::q6_k || t == GemmType::q8_0 || t == GemmType::q4_0 ||
           t == GemmType::q5_k;
}

// C[m, n] = A[m, k] · B[k, n] with A(i, p) = a[i·a_row + p·a_col] (likewise for B), so transposed
// operands are strides, never copies. C is row-major with row stride ldc.
struct GemmArgs {
    std::size_t m = 0, n = 0, k = 0;
    void const* a = nullptr;
    GemmType a_type = GemmType::f32;
    std::size_t a_row = 0, a_col = 1;
    void const* b = nullptr;
    GemmType b_type = GemmType::f32;
    std::size_t b_row = 0, b_col = 1;
    float* c = nullptr;
    std::size_t ldc = 0;
};

}  // namespace rayo::cpu
