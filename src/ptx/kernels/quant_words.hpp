// Word-level helpers the K-quant generators (dequantize, GEMV, GEMM) share. Not part of the API.
#pragma once

#include <array>

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

}  // namespace rayo::ptx::kernels::quant_detail
