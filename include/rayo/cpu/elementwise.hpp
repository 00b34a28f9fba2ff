// Element-wise and binary kernels over float arrays.
#pragma once

#include <cstddef>

#include "rayo/cpu/simd_loop.hpp"
#include "rayo/cpu/vector_math.hpp"
#include "rayo/detail/op_codes.hpp"

namespace rayo::cpu {

// stream: write with non-temporal stores (outputs much larger than the caches).
template <class A>
void unary_kernel(detail::UnaryOp op, detail::UnaryParams p, float const* in, float* out, std::size_t n, bool stream) {
    using B = fbatch<A>;
    using detail::UnaryOp;
    B const zero(0.0f);
    auto map = [&](auto f) { map_unary<A>(in, out, n, f, 1.0f, stream); };
    switch (op) {
        // NaN < 0 is false, so NaN passes through relu/leaky_relu/clip unchanged.
        case UnaryOp::relu: return map([&](B x) { return xsimd::select(x < zero, zero, x); });
        case UnaryOp::leaky_relu: {
            B const alpha(p.a);
            return map([&](B x) { return xsimd::select(x < zero, x * alpha, x); });
        }
        case UnaryOp::elu: return map([&](B x) { return math::elu(x, p.a); });
        case UnaryOp::sigmoid: return map([](B x) { return math::sigmoid(x); });
        case UnaryOp::tanh: return map([](B x) { return math::tanh(x); });
        case UnaryOp::silu: return map([](B x) { return math::silu(x); });
        case UnaryOp::gelu_tanh: return map([](B x) { return math::gelu_tanh(x); });
        case UnaryOp::gelu_erf: return map([](B x) { return math::gelu_erf(x); });
        case UnaryOp::clip: {
            // min(max(x, lo), hi) as torch.clamp: lo > hi gives hi everywhere.
            B const lo(p.a), hi(p.b);
            return map([&](B x) {
                B const t = xsimd::select(x < lo, lo, x);
                return xsimd::select(t > hi, hi, t);
            });
        }
        case UnaryOp::exp: return map([](B x) { return math::exp(x); });
        case UnaryOp::log: return map([](B x) { return math::log(x); });
        case UnaryOp::sqrt: return map([](B x) { return xsimd::sqrt(x); });
        case UnaryOp::abs: return map([](B x) { return xsimd::abs(x); });
        // A sign-bit flip: xsimd's AVX-512 negation is 0 - x, which turns -(+0) into +0.
        case UnaryOp::neg: return map([](B x) { return x ^ B(-0.0f); });
    }
}

template <class A>
void binary_kernel(detail::BinaryOp op, float const* a, float const* b, float* out, std::size_t n, bool stream) {
    using B = fbatch<A>;
    auto map = [&](auto f) { map_binary<A>(a, b, out, n, f, stream); };
    switch (op) {
        case detail::BinaryOp::add: return map([](B x, B y) { return x + y; });
        case detail::BinaryOp::sub: return map([](B x, B y) { return x - y; });
        case detail::BinaryOp::mul: return map([](B x, B y) { return x * y; });
        case detail::BinaryOp::div: return map([](B x, B y) { return x / y; });
    }
}

template <class A>
void binary_scalar_kernel(detail::BinaryOp op, float const* a, float s, float* out, std::size_t n, bool stream) {
    using B = fbatch<A>;
    B const v(s);
    auto map = [&](auto f) { map_unary<A>(a, out, n, f, 1.0f, stream); };
    switch (op) {
        case detail::BinaryOp::add: return map([&](B x) { return x + v; });
        case detail::BinaryOp::sub: return map([&](B x) { return x - v; });
        case detail::BinaryOp::mul: return map([&](B x) { return x * v; });
        case detail::BinaryOp::div: return map([&](B x) { return x / v; });
    }
}

}  // namespace rayo::cpu
