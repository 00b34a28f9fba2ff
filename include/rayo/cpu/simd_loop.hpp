// Loop skeletons shared by the CPU kernels: a vector map with a padded tail, and a blocked sum
// that adds short float runs into a double so long reductions keep float accuracy.
//
// These headers are compiled once per ISA (see src/cpu/kernel_table.hpp): templates on the
// xsimd arch only, raw pointers, no out-of-line standard-library code.
#pragma once

#include <cstddef>
#include <cstring>

#include <xsimd/xsimd.hpp>

namespace rayo::cpu {

template <class A>
using fbatch = xsimd::batch<float, A>;

// out[i] = f(in[i]) for i < n. The tail goes through a padded vector so every element is computed
// by the same vector code (results do not depend on position). `pad` fills the unused lanes.
template <class A, class F>
inline void map_unary(float const* in, float* out, std::size_t n, F&& f, float pad = 1.0f) {
    using B = fbatch<A>;
    constexpr std::size_t w = B::size;
    std::size_t i = 0;
    for (; i + 4 * w <= n; i += 4 * w) {
        B const x0 = B::load_unaligned(in + i), x1 = B::load_unaligned(in + i + w);
        B const x2 = B::load_unaligned(in + i + 2 * w), x3 = B::load_unaligned(in + i + 3 * w);
        f(x0).store_unaligned(out + i);
        f(x1).store_unaligned(out + i + w);
        f(x2).store_unaligned(out + i + 2 * w);
        f(x3).store_unaligned(out + i + 3 * w);
    }
    for (; i + w <= n; i += w) f(B::load_unaligned(in + i)).store_unaligned(out + i);
    if (i < n) {
        alignas(64) float tmp[w];
        for (auto& v : tmp) v = pad;
        std::memcpy(tmp, in + i, (n - i) * sizeof(float));
        f(B::load_aligned(tmp)).store_aligned(tmp);
        std::memcpy(out + i, tmp, (n - i) * sizeof(float));
    }
}

// out[i] = f(a[i], b[i]).
template <class A, class F>
inline void map_binary(float const* a, float const* b, float* out, std::size_t n, F&& f) {
    using B = fbatch<A>;
    constexpr std::size_t w = B::size;
    std::size_t i = 0;
    for (; i + 2 * w <= n; i += 2 * w) {
        f(B::load_unaligned(a + i), B::load_unaligned(b + i)).store_unaligned(out + i);
        f(B::load_unaligned(a + i + w), B::load_unaligned(b + i + w)).store_unaligned(out + i + w);
    }
    for (; i + w <= n; i += w) f(B::load_unaligned(a + i), B::load_unaligned(b + i)).store_unaligned(out + i);
    if (i < n) {
        alignas(64) float ta[w] = {}, tb[w];
        for (auto& v : tb) v = 1.0f;
        std::memcpy(ta, a + i, (n - i) * sizeof(float));
        std::memcpy(tb, b + i, (n - i) * sizeof(float));
        f(B::load_aligned(ta), B::load_aligned(tb)).store_aligned(ta);
        std::memcpy(out + i, ta, (n - i) * sizeof(float));
    }
}

// Loads the first `count` (< B::size) floats at p, the other lanes set to `pad`.
template <class A>
inline fbatch<A> load_partial(float const* p, std::size_t count, float pad) {
    alignas(64) float tmp[fbatch<A>::size];
    for (auto& v : tmp) v = pad;
    std::memcpy(tmp, p, count * sizeof(float));
    return fbatch<A>::load_aligned(tmp);
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
