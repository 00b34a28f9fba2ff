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

// Calls body(f) with f(x, y) the binary op on two batches of type B.
template <class B, class Body>
void with_binary_op(Op op, Body&& body) {
    static_assert(op_count(OpFamily::binary) == 7, "a case for every binary op");
    // maximum/minimum: a NaN operand gives NaN; equal values give x & y (maximum: +0 over -0) or
    // x | y (minimum: -0 under +0), which are x for any other pair of equal values.
    auto nan_first = [](B x, B y, B r) {
        return xsimd::select(xsimd::isnan(x), x, xsimd::select(xsimd::isnan(y), y, r));
    };
    switch (op) {
        case Op::add: return body([](B x, B y) { return x + y; });
        case Op::sub: return body([](B x, B y) { return x - y; });
        case Op::mul: return body([](B x, B y) { return x * y; });
        case Op::div: return body([](B x, B y) { return x / y; });
        case Op::maximum:
            return body(
                [&](B x, B y) { return nan_first(x, y, xsimd::select(x > y, x, xsimd::select(x < y, y, x & y))); });
        case Op::minimum:
            return body(
                [&](B x, B y) { return nan_first(x, y, xsimd::select(x < y, x, xsimd::select(x > y, y, x | y))); });
        case Op::swiglu: return body([](B x, B y) { return math::silu(x) * y; });
        default: return;
    }
}

// out[i] = a[i] op b[i].
template <class A>
void binary_kernel(Op op, float const* a, float const* b, float* out, std::size_t n, bool stream) {
    with_binary_op<fbatch<A>>(op, [&](auto f) { map_binary<A>(a, b, out, n, f, stream); });
}

// out[i] = a[i] op s.
template <class A>
void binary_scalar_kernel(Op op, float const* a, float s, float* out, std::size_t n, bool stream) {
    using B = fbatch<A>;
    B const v(s);
    with_binary_op<B>(op, [&](auto f) {
        map_unary<A>(
            a, out, n, [&](B x) { return f(x, v); }, 1.0f, stream);
    });
}

// out[i] = a[i·a_step] op b[i·b_step] for steps of 0 or 1: a step of 0 repeats one element (a row
// of a broadcast operation).
template <class A>
void binary_broadcast_kernel(Op op, float const* a, std::size_t a_step, float const* b, std::size_t b_step, float* out,
                             std::size_t n, bool stream) {
    using B = fbatch<A>;
    if (a_step && b_step) return binary_kernel<A>(op, a, b, out, n, stream);
    if (a_step) return binary_scalar_kernel<A>(op, a, *b, out, n, stream);
    B const v(*a);
    with_binary_op<B>(op, [&](auto f) {
        if (b_step)
            return map_unary<A>(
                b, out, n, [&](B y) { return f(v, y); }, 1.0f, stream);
        B const r = f(v, B(*b));  // one value throughout
        map_store<A>(
            out, n, stream, [&](std::size_t) { return r; }, [&](std::size_t, std::size_t) { return r; });
    });
}

}  // namespace rayo::cpu
