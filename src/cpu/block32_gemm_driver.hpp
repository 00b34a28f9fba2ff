// The driver of the integer GEMM of many rows of x with q8_0 / q4_0 weights
// (include/rayo/cpu/block32_gemm.hpp): quantizes x, then splits C over the pool in column chunks
// (and row parts where the columns are few), each thread packing its own weight panels.
#pragma once

#include <cstddef>

#include "cpu/kernel_table.hpp"
#include "cpu/thread_pool.hpp"

namespace rayo::cpu {

// Whether `k` has the integer GEMM for weights of `type`.
bool has_block32_gemm(KernelTable const& k, DType type) noexcept;

// C[m, n] = x[m, k] · w[n, k]ᵀ (x f32 rows of k values, w rows of q8_0 / q4_0 blocks, row_bytes
// apart; k a multiple of 32). C is fully overwritten. Needs has_block32_gemm(k, w_type).
void block32_gemm(ThreadPool& pool, KernelTable const& k, std::size_t m, std::size_t n, std::size_t depth,
                  float const* x, DType w_type, unsigned char const* w, std::size_t row_bytes, float* c);

}  // namespace rayo::cpu
