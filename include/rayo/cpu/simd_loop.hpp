// Loop skeletons shared by the CPU kernels: a vector map with a padded tail (and streaming
// stores for large outputs), and a blocked sum that adds short float runs into a double so long
// reductions keep float accuracy.
//
// These headers are compiled once per ISA (see src/cpu/kernel_table.hpp): templates on the
// xsimd arch only, raw pointers, no out-of-line standard-library code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include <immintrin.h>

#include <xsimd/xsimd.hpp>

namespace rayo::cpu {

template <class A>
using fbatch = xsimd::batch<float, A>;

// A compile-time index; templated on A (not std::integral_constant) so that even an unoptimised
// build's out-of-line conversion operator is a distinct symbol per ISA.
template <class A, std::size_t I>
struct Index {
    [[gnu::always_inline]] constexpr operator std::size_t() const noexcept { return I; }  // NOLINT: implicit
};

// Calls f(Index<I>) for I in [0, N): a guaranteed unroll, so accumulators stay named registers
// instead of an array the compiler might leave in memory.
template <class A, class F, std::size_t... I>
[[gnu::always_inline]] inline void unrolled_over(F& f, std::index_sequence<I...>) {
    (f(Index<A, I>{}), ...);
}
template <class A, std::size_t N, class F>
[[gnu::always_inline]] inline void unrolled(F&& f) {
    unrolled_over<A>(f, std::make_index_sequence<N>{});
}

// Loads the first `count` (< B::size) floats at p, the other lanes set to `pad`.
template <class A>
inline fbatch<A> load_partial(float const* p, std::size_t count, float pad) {
    alignas(64) float tmp[fbatch<A>::size];
    for (auto& v : tmp) v = pad;
    std::memcpy(tmp, p, count * sizeof(float));
    return fbatch<A>::load_aligned(tmp);
}

// A store that bypasses the caches (p aligned to the vector size): outputs far larger than the
// caches are then written without first being read, a third less memory traffic.
template <class A>
inline void store_stream(float* p, fbatch<A> v) {
    if constexpr (std::is_base_of_v<xsimd::avx512f, A>)
        _mm512_stream_ps(p, v);
    else if constexpr (std::is_base_of_v<xsimd::avx, A>)
        _mm256_stream_ps(p, v);
    else
        _mm_stream_ps(p, v);
}

// out[i..i+w) = full(i) for every whole vector, and the rest through partial(i, count), which
// computes a padded vector: every element goes through the same vector code, so results do not
// depend on position. With `stream`, aligned whole vectors use store_stream.
// flatten: GCC would otherwise call a large lambda (a whole tanh, say) once per vector.
template <class A, class Full, class Partial>
[[gnu::flatten]] inline void map_store(float* out, std::size_t n, bool stream, Full&& full, Partial&& partial) {
    using B = fbatch<A>;
    constexpr std::size_t w = B::size;
    auto store_part = [&](std::size_t i, std::size_t count) {
        alignas(64) float tmp[w];
        partial(i, count).store_aligned(tmp);
        std::memcpy(out + i, tmp, count * sizeof(float));
    };
    std::size_t i = 0;
    if (stream && reinterpret_cast<std::uintptr_t>(out) % sizeof(float) == 0) {
        std::size_t const misalign = reinterpret_cast<std::uintptr_t>(out) / sizeof(float) % w;
        if (misalign) {
            i = w - misalign < n ? w - misalign : n;
            store_part(0, i);
        }
        for (; i + 2 * w <= n; i += 2 * w) {
            store_stream<A>(out + i, full(i));
            store_stream<A>(out + i + w, full(i + w));
        }
        for (; i + w <= n; i += w) store_stream<A>(out + i, full(i));
        _mm_sfence();
    }
    for (; i + 4 * w <= n; i += 4 * w) {
        B const y0 = full(i), y1 = full(i + w), y2 = full(i + 2 * w), y3 = full(i + 3 * w);
        y0.store_unaligned(out + i);
        y1.store_unaligned(out + i + w);
        y2.store_unaligned(out + i + 2 * w);
        y3.store_unaligned(out + i + 3 * w);
    }
    for (; i + w <= n; i += w) full(i).store_unaligned(out + i);
    if (i < n) store_part(i, n - i);
}

// out[i] = f(in[i]) for i < n; `pad` fills the unused lanes of the last, partial vector.
template <class A, class F>
inline void map_unary(float const* in, float* out, std::size_t n, F&& f, float pad = 1.0f, bool stream = false) {
    using B = fbatch<A>;
    map_store<A>(
        out, n, stream, [&](std::size_t i) { return f(B::load_unaligned(in + i)); },
        [&](std::size_t i, std::size_t c) { return f(load_partial<A>(in + i, c, pad)); });
}

// out[i] = f(a[i], b[i]).
template <class A, class F>
inline void map_binary(float const* a, float const* b, float* out, std::size_t n, F&& f, bool stream = false) {
    using B = fbatch<A>;
    map_store<A>(
        out, n, stream, [&](std::size_t i) { return f(B::load_unaligned(a + i), B::load_unaligned(b + i)); },
        [&](std::size_t i, std::size_t c) {
            return f(load_partial<A>(a + i, c, 0.0f), load_partial<A>(b + i, c, 1.0f));
        });
}

// Largest / smallest lane (xsimd 8.1 has no horizontal max); no NaN lanes expected.
template <class A>
inline float horizontal_max(fbatch<A> v) {
    alignas(64) float t[fbatch<A>::size];
    v.store_aligned(t);
    float m = t[0];
    for (float x : t) m = x > m ? x : m;
    return m;
}
template <class A>
inline float horizontal_min(fbatch<A> v) {
    alignas(64) float t[fbatch<A>::size];
    v.store_aligned(t);
    float m = t[0];
    for (float x : t) m = x < m ? x : m;
    return m;
}

// Sum over i < n of term(i) where term(i) gives the batch for elements [i, i + w) (the last one
// through term_tail(i, count)). Runs of `block` elements are summed in four float accumulators,
// then added into a double: the error stays near (block / 4w)·ε instead of growing with n.
template <class A, class Term, class TermTail>
inline double blocked_sum(std::size_t n, Term&& term, TermTail&& term_tail) {
    using B = fbatch<A>;
    constexpr std::size_t w = B::size;
    constexpr std::size_t block = 1024;
    double total = 0.0;
    std::size_t i = 0;
    while (i + 4 * w <= n) {
        B s0(0.0f), s1(0.0f), s2(0.0f), s3(0.0f);
        std::size_t const end = (n - i) >= block ? i + block : i + ((n - i) / (4 * w)) * 4 * w;
        for (; i < end; i += 4 * w) {
            s0 += term(i);
            s1 += term(i + w);
            s2 += term(i + 2 * w);
            s3 += term(i + 3 * w);
        }
        total += static_cast<double>(xsimd::hadd((s0 + s1) + (s2 + s3)));
    }
    B s(0.0f);
    for (; i + w <= n; i += w) s += term(i);
    if (i < n) s += term_tail(i, n - i);
    return total + static_cast<double>(xsimd::hadd(s));
}

}  // namespace rayo::cpu
