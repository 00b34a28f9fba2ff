// cast on the CPU: element by element over the thread pool, each value converted exactly as
// docs/ops.md states (the same rules the GPU kernels follow).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "cpu/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/dtype.hpp"

namespace rayo::cpu::ops {

namespace {

constexpr std::size_t cast_grain = std::size_t{1} << 16;

// v rounded to a float with the last bit set when the rounding was inexact ("round to odd"):
// rounding that float once more to a narrower type gives v rounded directly, with no double
// rounding.
float round_to_odd(std::int32_t v) {
    auto const d = static_cast<double>(v);
    float f = static_cast<float>(d);
    if (static_cast<double>(f) == d) return f;
    if (std::abs(static_cast<double>(f)) > std::abs(d)) f = std::nextafter(f, 0.0f);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    bits |= 1u;
    std::memcpy(&f, &bits, sizeof bits);
    return f;
}

std::int32_t to_i32(float f) {
    if (std::isnan(f)) return 0;
    if (f >= 2147483648.0f) return std::numeric_limits<std::int32_t>::max();
    if (f < -2147483648.0f) return std::numeric_limits<std::int32_t>::min();
    return static_cast<std::int32_t>(f);  // truncates toward zero
}

template <class To, class From>
To convert(From v) {
    if constexpr (std::is_same_v<To, From>) {
        return v;
    } else if constexpr (std::is_same_v<From, std::int32_t>) {
        if constexpr (std::is_same_v<To, float>)
            return static_cast<float>(v);  // round to nearest even
        else
            return To(round_to_odd(v));
    } else if constexpr (std::is_same_v<To, std::int32_t>) {
        return to_i32(static_cast<float>(v));
    } else {
        return To(static_cast<float>(v));  // f16 and bf16 to float are exact; one rounding after
    }
}

template <class T>
constexpr bool is_16bit_float = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

template <class To, class From>
void convert_all(KernelRunner& r, TensorView const& in, TensorView const& out) {
    auto const* x = data<From const>(in);
    auto* y = data<To>(out);
    KernelTable const& k = r.kernels();
    r.pool().parallel_for(out.numel(), cast_grain, [&](std::size_t b, std::size_t e) {
        // Between f32 and f16 / bf16: the instruction set's block conversions (F16C where there is
        // one), which round as convert() does.
        if constexpr (std::is_same_v<From, float> && is_16bit_float<To>)
            k.narrow(dtype_of<To>, x + b, y + b, e - b);
        else if constexpr (is_16bit_float<From> && std::is_same_v<To, float>)
            k.widen(dtype_of<From>, x + b, y + b, e - b);
        else
            for (std::size_t i = b; i < e; ++i) y[i] = convert<To, From>(x[i]);
    });
}

template <class From>
void convert_from(KernelRunner& r, TensorView const& in, TensorView const& out) {
    switch (out.dtype) {
        case DType::f32: return convert_all<float, From>(r, in, out);
        case DType::f16: return convert_all<half, From>(r, in, out);
        case DType::bf16: return convert_all<bfloat16, From>(r, in, out);
        case DType::i32: return convert_all<std::int32_t, From>(r, in, out);
        default: return;
    }
}

}  // namespace

Support supports(KernelRunner const&, op::Cast const&, OpViews const& v) {
    if (!detail::castable(v.in[0].dtype) || !detail::castable(v.out[0].dtype))
        return Support::no("cpu: cast takes f32, f16, bf16 and i32");
    if (!v.in[0].is_contiguous() || !v.out[0].is_contiguous()) return Support::no("cpu: cast takes contiguous tensors");
    return Support::yes();
}

void run(KernelRunner& r, op::Cast const&, OpViews const& v) {
    switch (v.in[0].dtype) {
        case DType::f32: return convert_from<float>(r, v.in[0], v.out[0]);
        case DType::f16: return convert_from<half>(r, v.in[0], v.out[0]);
        case DType::bf16: return convert_from<bfloat16>(r, v.in[0], v.out[0]);
        case DType::i32: return convert_from<std::int32_t>(r, v.in[0], v.out[0]);
        default: return;
    }
}

}  // namespace rayo::cpu::ops
