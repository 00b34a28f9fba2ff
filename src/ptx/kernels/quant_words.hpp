// Word-level helpers the K-quant generators (dequantize, GEMV, GEMM) share. Not part of the API.
#pragma once

#include <array>
#include <span>

#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels::quant_detail {

// The two f16 halves of a 32-bit word as f32 (low half first).
inline std::array<Reg, 2> halves_as_float(Kernel& k, Reg word) {
    auto const [lo, hi] = k.split(word, Type::f16);
    return {k.cvt(Type::f32, lo), k.cvt(Type::f32, hi)};
}

// The low bytes of a, b, c, d packed into one word, a lowest.
inline Reg pack_bytes(Kernel& k, Reg a, Reg b, Reg c, Reg d) {
    return k.prmt(k.prmt(a, b, 0x0040), k.prmt(c, d, 0x0040), 0x5410);
}

// Σ (v − v): 0, or NaN where a value is NaN or ±Inf. Integer codes cannot carry such a value and
// max.f32 passes a NaN by, so a scale with this added makes every product with the block NaN, as a
// float product would be.
inline Reg non_finite_sum(Kernel& k, std::span<Reg const> v) {
    Reg sum = k.sub(v[0], v[0]);
    for (std::size_t i = 1; i < v.size(); ++i) sum = k.add(sum, k.sub(v[i], v[i]));
    return sum;
}

// The same over the values of a whole warp (a butterfly sum).
inline Reg warp_non_finite_sum(Kernel& k, std::span<Reg const> v) {
    Reg sum = non_finite_sum(k, v);
    for (int delta = 16; delta >= 1; delta /= 2) sum = k.add(sum, k.shfl(ShuffleMode::bfly, sum, delta));
    return sum;
}

}  // namespace rayo::ptx::kernels::quant_detail
