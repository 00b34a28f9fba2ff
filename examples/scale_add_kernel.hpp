// The kernel of examples/cuda_kernel.cpp, written with rayo's PTX builder: y[i] = a * x[i] + y[i]
// for i < n, one thread an element (parameters x, y: device addresses; a: f32; n: u32).
#pragma once

#include <rayo/ptx/ptx.hpp>

inline rayo::ptx::Kernel scale_add_kernel() {
    using namespace rayo::ptx;
    Kernel k("scale_add");
    Reg const x = k.param(Type::u64, "x"), y = k.param(Type::u64, "y");
    Reg const a = k.param(Type::f32, "a"), n = k.param(Type::u32, "n");
    Reg const i = k.global_thread_index();
    k.if_then(k.setp(Cmp::lt, i, n), [&] {
        Reg const xi = k.element_address(k.cvta_to_global(x), i, 4);
        Reg const yi = k.element_address(k.cvta_to_global(y), i, 4);
        k.st(Space::global, Type::f32, yi,
             k.fma(k.ld(Space::global, Type::f32, xi), a, k.ld(Space::global, Type::f32, yi)));
    });
    return k;
}
