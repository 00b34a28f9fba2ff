// The activation side of the K-quant dot products (include/rayo/cpu/quant_dot.hpp), shared by the
// kernels and the backend that allocates it.
#pragma once

#include <array>

#include "rayo/quant.hpp"

namespace rayo::cpu {

// 256 activation values as two q8_k blocks, x ≈ main + residual, where `residual` quantizes what
// `main` leaves over (x − main). One q8_k alone is off by ~0.5% on typical data; the pair by
// ~1e-5. The sums of each 16 and each 32 values (from both blocks' bsums, in f32) give the
// weights' min / offset terms without touching the values.
struct QuantActivation {
    q8_k main;
    q8_k residual;
    std::array<float, 16> sums16;
    std::array<float, 8> sums32;
};

}  // namespace rayo::cpu
