// Shared helpers for the op tests: random data, poisoned outputs, float64 references, error
// measures, and the parameter sets (CPU instruction sets x shapes).
#pragma once

#include <gtest/gtest.h>

#include <rayo/rayo.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace rayo::test {

// Fresh seed per call site and run, printed on failure through SCOPED_TRACE by the caller.
inline std::uint32_t fresh_seed() {
    static std::random_device rd;
    return rd();
}

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -4.0f, float hi = 4.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// Activations as real ones look: normal, with one channel 40x larger (index 5) and an all-zero
// block (values 256..511 of each row).
inline std::vector<float> activation_like(std::size_t rows, std::size_t k, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(rows * k);
    for (auto& v : x) v = normal(rng);
    for (std::size_t r = 0; r < rows; ++r) {
        x[r * k + 5] *= 40.0f;
        for (std::size_t p = 256; p < 512 && p < k; ++p) x[r * k + p] = 0.0f;
    }
    return x;
}

// A value no correct kernel writes: outputs start as this so untouched elements are caught.
inline constexpr float poison = -1.2345678e30f;

inline Tensor<float> poisoned(Shape shape, Device device = Device::cpu()) {
    return Tensor<float>::full(std::move(shape), poison, device);
}

// Error of `got` against the exact `want` in units in the last place of the float nearest `want`
// (2^-149 in the subnormal range). Both NaN -> 0; infinities must match exactly.
inline double ulp_error(float got, double want) {
    if (std::isnan(want)) return std::isnan(got) ? 0.0 : std::numeric_limits<double>::infinity();
    if (std::isnan(got)) return std::numeric_limits<double>::infinity();
    float const rounded = static_cast<float>(want);
    if (std::isinf(rounded))
        return got == rounded
                   ? 0.0
                   : (std::abs(got) == std::numeric_limits<float>::max() ? 1.0
                                                                         : std::numeric_limits<double>::infinity());
    if (std::isinf(got)) return std::numeric_limits<double>::infinity();
    int exponent = 0;
    std::frexp(std::max(std::abs(static_cast<double>(rounded)), static_cast<double>(std::numeric_limits<float>::min())),
               &exponent);
    double const ulp = std::ldexp(1.0, exponent - 24);
    return std::abs(static_cast<double>(got) - want) / ulp;
}

// ‖got − want‖ / ‖want‖ (want ≠ 0).
inline double relative_l2(std::vector<float> const& got, std::vector<double> const& want) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        double const d = static_cast<double>(got[i]) - want[i];
        num += d * d;
        den += want[i] * want[i];
    }
    return std::sqrt(num / std::max(den, 1e-300));
}

// Runs f, expects exception E whose message contains every fragment.
template <class E, class F>
void expect_error(F&& f, std::vector<std::string> const& fragments) {
    try {
        f();
        ADD_FAILURE() << "no exception thrown";
    } catch (E const& e) {
        std::string const what = e.what();
        for (auto const& frag : fragments)
            EXPECT_NE(what.find(frag), std::string::npos) << "'" << frag << "' not in: " << what;
    } catch (std::exception const& e) {
        ADD_FAILURE() << "wrong exception type: " << e.what();
    }
}

// Runs f, expects a rayo::Error whose message contains `text`.
template <class F>
void expect_error(F&& f, std::string const& text) {
    expect_error<Error>(std::forward<F>(f), {text});
}

// Sets a process-wide setting for one scope and restores the previous value afterwards.
template <class T, T (*Get)(), void (*Set)(T)>
class SettingScope {
public:
    explicit SettingScope(T value) : saved_(Get()) { Set(value); }
    ~SettingScope() { Set(saved_); }
    SettingScope(SettingScope const&) = delete;
    SettingScope& operator=(SettingScope const&) = delete;

private:
    T saved_;
};

// Every CPU instruction set this machine runs; tests switch to each and restore afterwards.
using ArchScope = SettingScope<CpuArch, &cpu_arch, &set_cpu_arch>;

inline std::vector<CpuArch> archs() { return available_cpu_archs(); }

// "sse4_2", "avx2", "avx512", "avx512_vnni": usable in test names (letters, digits, '_').
inline std::string arch_id(CpuArch a) {
    std::string s(to_string(a));
    for (auto& c : s)
        if (c == '.' || c == '-') c = '_';
    return s;
}
struct ArchParamName {
    std::string operator()(::testing::TestParamInfo<CpuArch> const& info) const { return arch_id(info.param); }
};

// The shapes every op runs on: the sizes the tests name plus 2-D and 3-D cases.
inline std::vector<Shape> op_shapes() {
    return {Shape{1},    Shape{7},      Shape{64},        Shape{1000},      Shape{4097},
            Shape{3, 5}, Shape{17, 33}, Shape{4, 9, 130}, Shape{2, 3, 1031}};
}

inline std::string shape_name(Shape const& s) {
    std::string n;
    for (auto d : s.dims()) n += (n.empty() ? "" : "x") + std::to_string(d);
    return n.empty() ? "scalar" : n;
}

}  // namespace rayo::test
