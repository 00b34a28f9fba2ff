// f16 / bf16 <-> f32 for blocks of values: how the CPU runs its f32 kernels on 16-bit tensors (a
// block widened into an f32 buffer, the f32 kernel, the results narrowed back). Narrowing rounds to
// nearest even, keeps NaN (quiet) and ±Inf, and overflows to ±Inf, as rayo::half / rayo::bfloat16.
// Templates on the xsimd arch, compiled once per ISA (src/cpu/kernel_table.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "rayo/cpu/gemm.hpp"
#include "rayo/dtype.hpp"

namespace rayo::cpu {

// out[0, n) = in[0, n) (f16 or bf16 bits) as f32, exactly.
template <class A>
void widen_kernel(DType type, void const* in, float* out, std::size_t n) {
    gemm::detail::convert_run<A>(in, type == DType::f16 ? GemmType::f16 : GemmType::bf16, 0, n, out);
}

// out[0, n) (f16 or bf16 bits) = in[0, n) rounded to nearest even.
template <class A>
void narrow_kernel(DType type, float const* in, void* out, std::size_t n) {
    auto* bits = static_cast<std::uint16_t*>(out);
    std::size_t i = 0;
    if (type == DType::bf16) {
        for (; i < n; ++i) bits[i] = rayo::detail::float_to_bfloat16_bits_as<A>(in[i]);
        return;
    }
    if constexpr (gemm::is_avx2<A> || gemm::is_avx512<A>) {  // F16C: round to nearest even, NaN kept quiet
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(bits + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; ++i) bits[i] = rayo::detail::float_to_half_bits_as<A>(in[i]);
}

}  // namespace rayo::cpu
