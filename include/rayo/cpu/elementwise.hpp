// Element-wise and binary kernels over float arrays.
#pragma once

#include <cstddef>

#include "rayo/cpu/simd_loop.hpp"
#include "rayo/cpu/vector_math.hpp"
#include "rayo/op_table.hpp"

namespace rayo::cpu {

// stream: write with non-temporal stores (outputs much larger than the caches).
// The unary ops of rayo::op_table; a and b are the op's parameters (alpha; lo and hi).
template <class A>
void unary_kernel(Op op, float a, float b, float const* in, float* out, std::size_t n, bool stream) {
    using B = fbatch<A>;
    B const zero(0.0f);
    auto map = [&](auto f) { map_unary<A>(in, out, n, f, 1.0f, stream); };
    static_assert(op_count(OpFamily::unary) == 14, "a case for every unary op");
    switch (op) {
        // NaN < 0 is false, so NaN passes through relu/leaky_relu/clip unchanged.
        case Op::relu: return map([&](B x) { return xsimd::select(x < zero, zero, x); });
        case Op::leaky_relu: {
            B const alpha(a);
            return map([&](B x) { return xsimd::select(x < zero, x * alpha, x); });
        }
        case Op::elu: return map([&](B x) { return math::elu(x, a); });
        case Op::sigmoid: return map([](B x) { return math::sigmoid(x); });
        case Op::tanh: return map([](B x) { return math::tanh(x); });
        case Op::silu: return map([](B x) { return math::silu(x); });
        case Op::gelu_tanh: return map([](B x) { return math::gelu_tanh(x); });
        case Op::gelu: return map([](B x) { return math::gelu_erf(x); });
        case Op::clip: {
            // min(max(x, lo), hi) as torch.clamp: lo > hi gives hi everywhere.
            B const lo(a), hi(b);
            return map([&](B x) {
                B const t = xsimd::select(x < lo, lo, x);
                return xsimd::select(t > hi, hi, t);
            });
        }
        case Op::exp: return map([](B x) { return math::exp(x); });
        case Op::log: return map([](B x) { return math::log(x); });
        case Op::sqrt: return map([](B x) { return xsimd::sqrt(x); });
        case Op::abs: return map([](B x) { return xsimd::abs(x); });
        // A sign-bit flip: xsimd's AVX-512 negation is 0 - x, which turns -(+0) into +0.
        case Op::neg: return map([](B x) { return x ^ B(-0.0f); });
        default: return;
    }
}

template <class A>
void binary_kernel(Op op, float const* a, float const* b, float* out, std::size_t n, bool stream) {
    using B = fbatch<A>;
    auto map = [&](auto f) { map_binary<A>(a, b, out, n, f, stream); };
    static_assert(op_count(OpFamily::binary) == 4, "a case for every binary op");
    switch (op) {
        case Op::add: return map([](B x, B y) { return x + y; });
        case Op::sub: return map([](B x, B y) { return x - y; });
        case Op::mul: return map([](B x, B y) { return x * y; });
        case Op::div: return map([](B x, B y) { return x / y; });
        default: return;
    }
}

template <class A>
void binary_scalar_kernel(Op op, float const* a, float s, float* out, std::size_t n, bool stream) {
    using B = fbatch<A>;
    B const v(s);
    auto map = [&](auto f) { map_unary<A>(a, out, n, f, 1.0f, stream); };
    switch (op) {
        case Op::add: return map([&](B x) { return x + v; });
        case Op::sub: return map([&](B x) { return x - v; });
        case Op::mul: return map([&](B x) { return x * v; });
        case Op::div: return map([&](B x) { return x / v; });
        default: return;
    }
}

}  // namespace rayo::cpu
