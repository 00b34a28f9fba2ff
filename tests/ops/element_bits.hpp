// Elements compared as bits, for the ops that move elements without arithmetic (the layout ops,
// the gathers): random bit patterns of any element type (NaNs and subnormals included), and a
// check that every element of an output is the one expected, bit for bit.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/harness.hpp"

namespace rayo::test::ops {

template <class T>
std::vector<T> random_elements(std::size_t n, std::mt19937& rng) {
    std::uniform_int_distribution<std::uint32_t> bits;
    std::vector<T> v(n);
    for (auto& x : v) {
        std::uint32_t const b = bits(rng);
        if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>)
            x = T::from_bits(static_cast<std::uint16_t>(b));
        else
            std::memcpy(&x, &b, sizeof(T));
    }
    return v;
}

template <class T>
bool same_bits(T a, T b) {
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>)
        return a.bits == b.bits;
    else
        return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <class T>
void expect_elements(CaseContext& ctx, std::vector<T> const& got, std::size_t count,
                     std::function<T(std::size_t)> const& want, std::string const& what) {
    ASSERT_EQ(got.size(), count) << what;
    for (std::size_t e = 0; e < count; ++e)
        ASSERT_TRUE(same_bits(got[e], want(e))) << what << ": element " << e << " differs on " << ctx.target().id;
}

}  // namespace rayo::test::ops
