// The description of one integer GEMM of many rows of x with q8_0 / q4_0 weight rows, shared by
// the kernels (rayo/cpu/block32_gemm.hpp) and the CPU backend that drives them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rayo/dtype.hpp"

namespace rayo::cpu {

// C[m, n] = x[m, k] · w[n, k]ᵀ with x as 16-bit codes and one f32 scale per 32 values, and w as
// rows of q8_0 / q4_0 blocks. k is a multiple of 32.
struct Block32GemmArgs {
    std::size_t m = 0, n = 0, k = 0;
    std::int16_t const* x_codes = nullptr;  // m rows of k codes
    float const* x_scales = nullptr;        // m rows of k / 32 scales
    DType w_type = DType::q8_0;
    unsigned char const* w = nullptr;  // n rows, w_row_bytes apart
    std::size_t w_row_bytes = 0;
    float* c = nullptr;
    std::size_t ldc = 0;
};

namespace block32 {

inline constexpr std::size_t block_values = 32;
// Rows of x per micro-kernel call.
inline constexpr std::size_t micro_rows = 6;
// Weight rows a packed panel holds (the micro-kernel's columns) and blocks of depth packed at once.
inline constexpr std::size_t panel_cols = 32;
inline constexpr std::size_t depth_blocks = 8;
// One panel's codes for one block: 16 pairs of depth x 32 columns x 2 int16; then its 32 scales.
inline constexpr std::size_t panel_block_codes = block_values * panel_cols;
inline constexpr std::size_t panel_block_bytes = panel_block_codes * 2 + panel_cols * 4;

// Bytes of packed weights for `cols` columns (rounded up to whole panels), depth_blocks deep.
constexpr std::size_t packed_bytes(std::size_t cols) noexcept {
    return (cols + panel_cols - 1) / panel_cols * depth_blocks * panel_block_bytes;
}

}  // namespace block32

}  // namespace rayo::cpu
