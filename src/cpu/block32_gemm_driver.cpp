#include "cpu/block32_gemm_driver.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "cpu/scratch_buffer.hpp"
#include "rayo/cpu/block32_gemm_args.hpp"

namespace rayo::cpu {

namespace {

// Columns a thread takes at a time: its C chunk (m x 128 floats) and x's codes for one depth step
// stay in L2 while the chunk's packed panels pass through L1.
constexpr std::size_t chunk_cols = 128;
// Values of x a quantizing task takes at least.
constexpr std::size_t quantize_grain = 1 << 14;

thread_local ScratchBuffer packed_buffer;
thread_local ScratchBuffer x_buffer;  // the caller's: x's codes and scales

std::size_t ceil_div(std::size_t value, std::size_t divisor) { return (value + divisor - 1) / divisor; }

}  // namespace

bool has_block32_gemm(KernelTable const& k, DType type) noexcept {
    return k.block32_gemm_region != nullptr && (type == DType::q8_0 || type == DType::q4_0);
}

void block32_gemm(ThreadPool& pool, KernelTable const& k, std::size_t m, std::size_t n, std::size_t depth,
                  float const* x, DType w_type, unsigned char const* w, std::size_t row_bytes, float* c) {
    if (m == 0 || n == 0) return;
    if (depth == 0) {
        std::memset(c, 0, m * n * sizeof(float));
        return;
    }
    std::size_t const blocks = depth / block32::block_values;
    // x's codes (m·k int16, an even count) then its scales, in the calling thread's scratch.
    float* const scratch = x_buffer.get(m * depth / 2 + m * blocks);
    auto* const codes = reinterpret_cast<std::int16_t*>(scratch);
    float* const scales = scratch + m * depth / 2;
    pool.parallel_for(m, std::max<std::size_t>(1, quantize_grain / depth), [&](std::size_t b, std::size_t e) {
        k.block32_quantize_x(x + b * depth, (e - b) * depth, codes + b * depth, scales + b * blocks);
    });

    Block32GemmArgs const args{.m = m,
                               .n = n,
                               .k = depth,
                               .x_codes = codes,
                               .x_scales = scales,
                               .w_type = w_type,
                               .w = w,
                               .w_row_bytes = row_bytes,
                               .c = c,
                               .ldc = n};
    // Few column chunks for the threads: split the rows too (in whole micro-tiles).
    std::size_t const col_parts = ceil_div(n, chunk_cols);
    std::size_t const row_tiles = ceil_div(m, block32::micro_rows);
    std::size_t const row_parts = std::min(row_tiles, ceil_div(2 * pool.size(), col_parts));
    std::size_t const parts = col_parts * row_parts;
    std::atomic<std::size_t> next{0};
    // Parts are claimed, not assigned, as in the f32 GEMM's driver (cpu/gemm_driver.cpp).
    auto const work = [&](std::size_t, std::size_t) {
        auto* packed =
            reinterpret_cast<unsigned char*>(packed_buffer.get(block32::packed_bytes(chunk_cols) / sizeof(float)));
        for (std::size_t part = next.fetch_add(1); part < parts; part = next.fetch_add(1)) {
            std::size_t const row_part = part / col_parts, col_part = part % col_parts;
            std::size_t const i0 = std::min(m, row_tiles * row_part / row_parts * block32::micro_rows);
            std::size_t const i1 = std::min(m, row_tiles * (row_part + 1) / row_parts * block32::micro_rows);
            std::size_t const j0 = col_part * chunk_cols, j1 = std::min(n, j0 + chunk_cols);
            if (i0 < i1) k.block32_gemm_region(args, i0, i1, j0, j1, packed);
        }
    };
    pool.run_parts(std::min(pool.size(), parts), work);
}

}  // namespace rayo::cpu
