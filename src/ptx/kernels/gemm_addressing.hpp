// Predicate and address helpers the two GEMM generators (CUDA cores, tensor cores) share. Not part
// of the API.
#pragma once

#include <bit>

#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels::gemm_detail {

// Optional predicates: an invalid Reg stands for "always true".
inline Reg both(Kernel& k, Reg p, Reg q) {
    if (!p.valid()) return q;
    if (!q.valid()) return p;
    return k.and_pred(p, q);
}

// base + (row·stride + col)·element_bytes, with the row product in 64 bits.
inline Reg address_2d(Kernel& k, Reg base, Reg row, Reg stride, Reg col, unsigned element_bytes) {
    Reg const index = k.add(k.mul_wide(row, stride), k.cvt(Type::u64, col));
    return k.add(base, k.shl(index, std::countr_zero(element_bytes)));
}

}  // namespace rayo::ptx::kernels::gemm_detail
