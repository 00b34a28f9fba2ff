// The activation side of the K-quant dot products (include/rayo/cpu/quant_dot.hpp), shared by the
// kernels and the backend that allocates it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "rayo/quant.hpp"

namespace rayo::cpu {

// 256 activation values as two q8_k blocks, x ≈ main + residual, where `residual` quantizes what
// `main` leaves over (x − main). One q8_k alone is off by ~0.5% on typical data; the pair by
// ~1e-5. The sums of each 16 and each 32 values (from both blocks' bsums, in f32) give the
// weights' min / offset terms without touching the values.
//
// Both blocks' quants start on a 64-byte boundary: on some cores (Zen 4 among them) a 32-byte
// load that crosses a 32-byte boundary takes two load slots, which halves the AVX2 kernels'
// multiply-adds a cycle (docs/backends/cpu.md), and the dot products load each 32 values of x
// once per weight row.
struct alignas(64) QuantActivation {
    std::array<std::uint8_t, 64 - offsetof(q8_k, qs)> lead;
    q8_k main;
    std::array<std::uint8_t, (64 - sizeof(q8_k) % 64) % 64> gap;
    q8_k residual;
    std::array<float, 16> sums16;
    std::array<float, 8> sums32;
};

static_assert(offsetof(QuantActivation, main) % 64 + offsetof(q8_k, qs) == 64);
static_assert((offsetof(QuantActivation, residual) + offsetof(q8_k, qs)) % 64 == 0);

}  // namespace rayo::cpu
