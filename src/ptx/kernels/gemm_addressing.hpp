// Predicate and address helpers the two GEMM generators (CUDA cores, tensor cores) share. Not part
// of the API.
#pragma once

#include <bit>
#include <functional>
#include <span>
#include <vector>

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

// The bias (f32) of `count` consecutive columns from `col`, 0 where a guard fails: one vector load
// under ok[0] when `vector` (the run lies wholly inside or outside n), else a load per column under
// ok[i]. Invalid guards always hold.
inline std::vector<Reg> load_bias(Kernel& k, Reg bias, Reg col, unsigned count, bool vector, std::span<Reg const> ok) {
    std::vector<Reg> values;
    for (unsigned i = 0; i < count; ++i) values.push_back(k.mov(Type::f32, 0.0f));
    Reg const at = k.element_address(bias, col, 4);
    auto guarded = [&](Reg guard, std::function<void()> const& load) {
        if (guard.valid())
            k.predicated(guard, true, load);
        else
            load();
    };
    if (vector) {
        guarded(ok.empty() ? Reg{} : ok[0], [&] { k.ld_vector(values, Space::global, Type::f32, Address(at)); });
    } else {
        for (unsigned i = 0; i < count; ++i)
            guarded(ok.empty() ? Reg{} : ok[i], [&] { k.ld(values[i], Space::global, Type::f32, Address(at, i * 4)); });
    }
    return values;
}

}  // namespace rayo::ptx::kernels::gemm_detail
