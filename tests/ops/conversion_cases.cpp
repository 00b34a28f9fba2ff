// cast between f32, f16, bf16 and i32, every pair, against a float64 reference that rounds to the
// target format directly: random values of every magnitude, the specials (NaN, ±Inf, ±0,
// subnormals of each format, the overflow edges), every f16 / bf16 bit pattern at random, and
// integers across the whole i32 range.
#include "ops/float_formats.hpp"
#include "ops/harness.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>

namespace rayo::test::ops {
namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

double half_value(std::uint16_t h) {
    int const e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double const sign = h & 0x8000 ? -1.0 : 1.0;
    if (e == 0x1f) return m ? nan : sign * std::numeric_limits<double>::infinity();
    return sign * (e ? std::ldexp(1024 + m, e - 25) : std::ldexp(m, -24));
}
double bf16_value(std::uint16_t b) {
    std::uint32_t const bits = std::uint32_t{b} << 16;
    float f = 0;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

template <class T>
double value_of(T v) {
    if constexpr (std::is_same_v<T, half>)
        return half_value(v.bits);
    else if constexpr (std::is_same_v<T, bfloat16>)
        return bf16_value(v.bits);
    else
        return static_cast<double>(v);
}

// The reference: the source's exact value converted to To.
template <class To>
double reference(double v) {
    if constexpr (std::is_same_v<To, std::int32_t>) {
        if (std::isnan(v)) return 0;
        if (v >= 0x1p31) return std::numeric_limits<std::int32_t>::max();
        if (v < -0x1p31) return std::numeric_limits<std::int32_t>::min();
        return std::trunc(v) + 0.0;  // an integer has no -0
    } else if constexpr (std::is_same_v<To, half>) {
        return round_to(v, f16_format);
    } else if constexpr (std::is_same_v<To, bfloat16>) {
        return round_to(v, bf16_format);
    } else {
        return round_to(v, f32_format);
    }
}

template <class T>
std::vector<T> sources(CaseContext& ctx, std::size_t n, std::mt19937& rng) {
    std::vector<T> out(n);
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
        std::uniform_int_distribution<int> bits(0, 0xffff);
        for (auto& v : out) v = T::from_bits(static_cast<std::uint16_t>(bits(rng)));
    } else if constexpr (std::is_same_v<T, std::int32_t>) {
        std::uniform_int_distribution<std::int32_t> any(std::numeric_limits<std::int32_t>::min(),
                                                        std::numeric_limits<std::int32_t>::max());
        std::uniform_int_distribution<std::int32_t> small(-70000, 70000);
        constexpr std::int32_t edges[] = {0,        1,        -1,        65504,      65519,           65520,
                                          -65520,   16777217, -16777219, 2147483647, -2147483647 - 1, 2139095039,
                                          33554435, 412090355};  // rounds to nearest f32 on a bf16 midpoint
        for (std::size_t i = 0; i < n; ++i)
            out[i] = i % 7 == 0 ? edges[i / 7 % std::size(edges)] : i % 2 ? any(rng) : small(rng);
    } else {
        std::vector<float> const base = ctx.values(n, {-70000.0f, 70000.0f});
        std::uniform_int_distribution<int> exponent(-150, 130);
        std::uniform_real_distribution<float> unit(-2.0f, 2.0f);
        for (std::size_t i = 0; i < n; ++i) out[i] = i % 3 == 0 ? std::ldexp(unit(rng), exponent(rng)) : base[i];
        constexpr float edges[] = {65519.998f,    65520.0f,      5.9604645e-8f,  2.9802322e-8f, 2.9802326e-8f,
                                   2147483520.0f, 2147483648.0f, -2147483904.0f, 3.3895314e38f, 3.3961776e38f};
        for (std::size_t i = 0; i < n && i < std::size(edges); ++i) out[i * 5 % n] = edges[i];
    }
    return out;
}

template <class From, class To>
void check_cast(CaseContext& ctx) {
    std::mt19937 rng(ctx.seed());
    std::vector<Shape> shapes = ctx.shapes(elementwise_shapes());
    if (ctx.fits(std::size_t{1} << 17)) shapes.push_back(Shape{std::size_t{1} << 17});
    for (std::size_t s = 0; s < shapes.size(); ++s) {
        Shape const& shape = shapes[s];
        SCOPED_TRACE("shape " + shape.to_string());
        std::vector<From> const in = sources<From>(ctx, shape.numel(), rng);
        Guarded<To> out = ctx.output<To>(shape, s % 3);
        cast_into(ctx.input(in, shape, (s + 1) % 2), out.tensor());
        std::vector<To> const got = out.values();
        int reported = 0;
        for (std::size_t i = 0; i < got.size() && reported < 5; ++i) {
            double const want = reference<To>(value_of(in[i])), g = value_of(got[i]);
            bool const same =
                (std::isnan(want) && std::isnan(g)) || (want == g && std::signbit(want) == std::signbit(g));
            if (!same) {
                ++reported;
                ADD_FAILURE() << "cast of " << value_of(in[i]) << " [" << i << "] on " << ctx.target().id << ": got "
                              << g << ", want " << want;
            }
        }
        ctx.expect_guards(out);
    }
    // The returning form.
    std::vector<From> const in = sources<From>(ctx, 1001, rng);
    Tensor<From> const x = ctx.input(in, Shape{7, 143});
    Tensor<To> const y = cast<To>(x);
    EXPECT_EQ(y.shape(), x.shape());
    std::vector<To> const got = y.to_vector();
    for (std::size_t i = 0; i < got.size(); ++i) {
        double const want = reference<To>(value_of(in[i])), g = value_of(got[i]);
        ASSERT_TRUE((std::isnan(want) && std::isnan(g)) || want == g) << "returned form at " << i;
    }
}

template <class From>
void add_cases(std::vector<OpCase>& c, std::string const& from) {
    c.push_back({"cast_" + from + "_f32", Op::cast, dtype_of<From>, check_cast<From, float>});
    c.push_back({"cast_" + from + "_f16", Op::cast, dtype_of<From>, check_cast<From, half>});
    c.push_back({"cast_" + from + "_bf16", Op::cast, dtype_of<From>, check_cast<From, bfloat16>});
    c.push_back({"cast_" + from + "_i32", Op::cast, dtype_of<From>, check_cast<From, std::int32_t>});
}

std::vector<OpCase> cases() {
    std::vector<OpCase> c;
    for_each_castable_type([&]<class T>(std::string const& type) { add_cases<T>(c, type); });
    return c;
}

CaseRegistration const registration(cases());

}  // namespace
}  // namespace rayo::test::ops
