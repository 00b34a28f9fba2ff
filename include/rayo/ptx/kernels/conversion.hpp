// cast: values from one element type to another (f32, f16, bf16, i32), as PTX.
//
//   Kernel k = rayo::ptx::kernels::cast({.from = DType::f32, .to = DType::f16});
//
// Rules (docs/ops.md): floats round to nearest even (cvt.rn; overflow to ±Inf, subnormals kept),
// NaN and ±Inf stay; to i32, cvt.rzi (truncation toward zero, saturating, NaN giving 0); from i32
// to f32 and f16 cvt.rn, to bf16 through a float rounded to odd (cvt.rz, its last bit set when
// inexact), so that the one rounding to bf16 is exact. Groups of 4 elements per thread and step of
// a grid-stride loop (or one element, unaligned). f32 -> bf16 needs sm_80.
#pragma once

#include "rayo/dtype.hpp"
#include "rayo/export.hpp"
#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels {

struct RAYO_API CastKernelConfig {
    DType from = DType::f32;  // f32, f16, bf16 or i32 (BuildError otherwise)
    DType to = DType::f16;    // the same choices; from == to is a copy
    // Groups of 4 elements (16- or 8-byte accesses): needs `in` and `out` at addresses that are
    // multiples of 4 elements.
    bool vectorized = true;
    unsigned block_threads = 256;  // .maxntid
};

// out[i] = cast(in[i]) for i < n. Parameters, in order: out (.u64), in (.u64), n (.u64 element
// count). Named rayo_cast_<from>_<to>[_v4].
[[nodiscard]] RAYO_API Kernel cast(CastKernelConfig const& config);

}  // namespace rayo::ptx::kernels
