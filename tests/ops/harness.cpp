#include "ops/harness.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>

#include "ops/float_formats.hpp"
#include "support/test_support.hpp"

#if RAYO_TEST_VULKAN
#include "vulkan/diagnostics.hpp"
#endif
#include "ops/simulated_cuda.hpp"

namespace rayo::test::ops {

namespace {

// The largest tensor a case makes: on the GPUs, past the grid limits of one dispatch; on the CPU,
// enough for every thread and cache level; on the simulator, what it runs in a second or two. A
// software Vulkan device (lavapipe) spends this CPU's time on every value: it takes the CPU's budget
// with its dispatches capped at software_groups workgroups a dimension, so the paths past one
// dispatch's grid still run (a 2^22-element element-wise op needs 16384 workgroups of 256).
constexpr std::size_t device_budget = std::size_t{1} << 25;
constexpr std::size_t cpu_budget = std::size_t{1} << 22;
constexpr std::size_t simulator_budget = std::size_t{1} << 16;
constexpr std::uint32_t software_groups = 4096;
// Guard elements on either side of an output view.
constexpr std::size_t guard_elements = 67;

#if RAYO_TEST_VULKAN
// A Vulkan device's target: a hardware device with its own grid and the GPUs' budget, a software one
// with the CPU's budget and its dispatches capped (above).
Target vulkan_target(std::string const& id, Device d) {
    if (!vulkan::is_software_device(d)) return {id, d.kind(), [d] { return d; }, [] {}, device_budget};
    return {id, d.kind(),
            [d] {
                vulkan::limit_groups(d, software_groups);
                return d;
            },
            [d] { vulkan::limit_groups(d, 0); }, cpu_budget};
}

// The shared-memory builds of the reduction, row and K-quant GEMV shaders and the portable decode
// attention shader (attention_decode) on `plain`'s device, where it would otherwise take the
// subgroup ones.
Target shared_memory_target(Target const& plain, Device d) {
    Target t = plain;
    t.id += "_shared_memory";
    t.enter = [d, enter = plain.enter] {
        vulkan::use_subgroups(d, false);
        return enter();
    };
    t.leave = [d, leave = plain.leave] {
        leave();
        vulkan::use_subgroups(d, true);
    };
    t.takes = [](Op op, DType dtype) {
        OpFamily const f = family(op);
        return f == OpFamily::reduction || f == OpFamily::softmax || f == OpFamily::normalization ||
               op == Op::attention ||
               (op == Op::linear && (dtype == DType::q4_k || dtype == DType::q6_k || dtype == DType::q8_0 ||
                                     dtype == DType::q4_0 || dtype == DType::q5_k));
    };
    return t;
}
#endif

bool is_subnormal(double x) { return x != 0 && std::abs(x) < std::numeric_limits<float>::min(); }

}  // namespace

std::vector<Target> const& targets() {
    static std::vector<Target> const list = [] {
        std::vector<Target> t;
        CpuArch const initial = cpu_arch();
        for (CpuArch a : available_cpu_archs())
            t.push_back({"cpu_" + arch_id(a), DeviceKind::cpu,
                         [a] {
                             set_cpu_arch(a);
                             return Device::cpu();
                         },
                         [initial] { set_cpu_arch(initial); }, cpu_budget});
        for (Device d : Device::all()) {
            std::string const id = std::string(to_string(d.kind())) + std::to_string(d.index());
            if (d.kind() == DeviceKind::cpu) continue;
#if RAYO_TEST_VULKAN
            if (d.kind() == DeviceKind::vulkan) {
                Target const plain = vulkan_target(id, d);
                t.push_back(plain);
                if (vulkan::has_subgroup_arithmetic(d)) t.push_back(shared_memory_target(plain, d));
                continue;
            }
#endif
            t.push_back({id, d.kind(), [d] { return d; }, [] {}, device_budget});
        }
#if RAYO_TEST_SIMULATED_CUDA
        t.push_back({"cuda_sim", DeviceKind::cuda, [] { return register_simulated_cuda(); },
                     [] { unregister_simulated_cuda(); }, simulator_budget});
#endif
        return t;
    }();
    return list;
}

// ---- Guarded

template <class T>
Guarded<T>::Guarded(Shape shape, Device device, std::size_t offset)
    : offset_(offset),
      count_(shape.numel()),
      storage_(Tensor<T>::full({guard_elements + offset + count_ + guard_elements}, poison(), device)),
      view_(storage_
                .slice(static_cast<std::int64_t>(guard_elements + offset),
                       static_cast<std::int64_t>(guard_elements + offset + count_))
                .reshape(std::vector<std::int64_t>(shape.dims().begin(), shape.dims().end()))) {}

template <class T>
std::optional<std::size_t> Guarded<T>::changed_guard() const {
    std::vector<T> const all = storage_.to_vector();
    T const p = poison();
    for (std::size_t i = 0; i < all.size(); ++i) {
        bool const inside = i >= guard_elements + offset_ && i < guard_elements + offset_ + count_;
        if (!inside && std::memcmp(&all[i], &p, sizeof(T)) != 0) return i;
    }
    return std::nullopt;
}

template <class T>
T Guarded<T>::poison() noexcept {
    if constexpr (std::is_same_v<T, float>)
        return test::poison;
    else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>)
        return T::from_bits(0x5a5a);  // a finite value
    else
        return static_cast<T>(0x5a5a5a5a);
}

template class Guarded<float>;
template class Guarded<std::int64_t>;
template class Guarded<half>;
template class Guarded<bfloat16>;
template class Guarded<std::int32_t>;

// ---- CaseContext

CaseContext::CaseContext(Target const& target, Device device, Op op, DType dtype)
    : target_(target), device_(device), seed_(fresh_seed()), tolerance_(ops::tolerance(op, dtype, target.kind)) {
    flushes_subnormals_ = false;
#if RAYO_TEST_VULKAN
    if (device.kind() == DeviceKind::vulkan) flushes_subnormals_ = !vulkan::subnormal_support(device).preserving;
#endif
}

void CaseContext::attempt(std::function<void()> const& problem) {
    try {
        problem();
        ++problems_run_;
    } catch (NotSimulated const& e) {
        if (not_simulated_++ == 0) not_simulated_reason_ = e.what();
    }
}

std::vector<Shape> CaseContext::shapes(std::vector<Shape> const& shapes) const {
    std::vector<Shape> out;
    for (Shape const& s : shapes)
        if (fits(s.numel())) out.push_back(s);
    return out;
}

std::vector<float> CaseContext::values(std::size_t n, Range range, Specials specials) {
    float const inf = std::numeric_limits<float>::infinity();
    float const den = std::numeric_limits<float>::denorm_min();
    float const fmin = std::numeric_limits<float>::min(), fmax = std::numeric_limits<float>::max();
    // The ieee ones first (a NaN with a payload among them: its bits matter to q8_k quantization).
    static float const special[] = {0.0f,
                                    -0.0f,
                                    inf,
                                    -inf,
                                    std::numeric_limits<float>::quiet_NaN(),
                                    std::bit_cast<float>(0xffc12345u),
                                    den,
                                    -den,
                                    3 * den,
                                    fmin,
                                    -fmin,
                                    fmax,
                                    -fmax,
                                    1e-30f,
                                    -1e-30f,
                                    88.72f,
                                    -87.0f,
                                    -104.0f,
                                    1e4f,
                                    -1e4f,
                                    20.0f};
    std::size_t const count = specials == Specials::all ? std::size(special) : 11;
    std::mt19937 rng(seed_++);
    std::uniform_real_distribution<float> dist(range.lo, range.hi);
    std::uniform_int_distribution<std::size_t> pick(0, count - 1);
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = specials != Specials::none && rng() % 8 == 0 ? special[pick(rng)] : dist(rng);
    return v;
}

std::vector<float> CaseContext::sweep(float lo, float hi, std::size_t wanted) const {
    wanted = std::min(wanted, target_.max_elements);
    std::uint32_t const stride =
        std::max<std::uint32_t>(1, static_cast<std::uint32_t>(0x7f800000u / (wanted / 2 + 1)) | 1);
    std::vector<float> in;
    for (std::uint64_t bits = 0; bits < 0x7f800000u; bits += stride)
        for (float v : {std::bit_cast<float>(static_cast<std::uint32_t>(bits)),
                        -std::bit_cast<float>(static_cast<std::uint32_t>(bits))})
            if (v >= lo && v <= hi) in.push_back(v);
    return in;
}

template <class T>
Tensor<T> CaseContext::input(std::vector<T> const& values, Shape shape, std::size_t offset) const {
    std::vector<T> host(offset + values.size());
    std::copy(values.begin(), values.end(), host.begin() + static_cast<std::ptrdiff_t>(offset));
    auto const begin = static_cast<std::int64_t>(offset);
    std::vector<std::int64_t> dims(shape.dims().begin(), shape.dims().end());
    return Tensor<T>::from(host, {host.size()}, device_)
        .slice(begin, begin + static_cast<std::int64_t>(values.size()))
        .reshape(dims);
}

template Tensor<float> CaseContext::input(std::vector<float> const&, Shape, std::size_t) const;
template Tensor<half> CaseContext::input(std::vector<half> const&, Shape, std::size_t) const;
template Tensor<bfloat16> CaseContext::input(std::vector<bfloat16> const&, Shape, std::size_t) const;
template Tensor<std::int32_t> CaseContext::input(std::vector<std::int32_t> const&, Shape, std::size_t) const;

std::vector<float> CaseContext::sweep_all_of(DType type, float lo, float hi) const {
    std::vector<float> in;
    for (std::uint32_t bits = 0; bits <= 0xffffu; ++bits) {
        auto const b = static_cast<std::uint16_t>(bits);
        float const v =
            type == DType::f16 ? static_cast<float>(half::from_bits(b)) : static_cast<float>(bfloat16::from_bits(b));
        if (v >= lo && v <= hi) in.push_back(v);
    }
    if (in.size() > target_.max_elements) {  // every k-th, to fit the target's budget
        std::size_t const k = (in.size() + target_.max_elements - 1) / target_.max_elements;
        std::vector<float> thinned;
        for (std::size_t i = 0; i < in.size(); i += k) thinned.push_back(in[i]);
        in = std::move(thinned);
    }
    return in;
}

namespace {

// The first few failures of a comparison, and how many there were.
class Failures {
public:
    void add(std::size_t i, std::string text) {
        if (count_++ < 5) text_ += "\n  [" + std::to_string(i) + "] " + text;
    }
    void report(std::string_view what, Target const& target, std::uint32_t seed) const {
        if (count_ == 0) return;
        ADD_FAILURE() << what << " on " << target.id << " (seed " << seed << "): " << count_
                      << " elements outside the tolerance" << text_;
    }

private:
    std::size_t count_ = 0;
    std::string text_;
};

// got (a value of T) against want; for f16 and bf16, want rounded to T first.
template <class T>
bool within(Tolerance const& t, float got, double want, double scale, double magnitude) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isnan(got)) return false;
    // The correctly rounded result always passes, also where the reference lies below T's
    // smallest subnormal and no tolerance scaled by the inputs reaches it.
    if constexpr (std::is_same_v<T, float>) {
        if (got == static_cast<float>(want)) return true;
        if (t.ulp >= 0) return ulp_error(got, want) <= t.ulp;
    } else {
        if (t.ulp >= 0) return ulp_error_in(format_of<T>(), got, want) <= t.ulp;
        want = round_to(want, format_of<T>());
    }
    if (std::isinf(want) || std::isinf(got)) return static_cast<double>(got) == want;
    return std::abs(static_cast<double>(got) - want) <= t.rel * scale + t.rounding * magnitude + t.abs;
}

}  // namespace

template <class T>
void CaseContext::expect_close(Guarded<T> const& out, Expected const& e) {
    std::vector<T> const stored = out.values();
    std::vector<float> const got(stored.begin(), stored.end());
    Tolerance tolerance = tolerance_;
    tolerance.rounding += e.operand_rounding;
    Failures failures;
    for (std::size_t i = 0; i < got.size(); ++i) {
        double const w = e.want(i);
        double const scale = e.scale ? e.scale(i) : std::abs(w);
        double const magnitude = e.magnitude ? e.magnitude(i) : scale;
        if (within<T>(tolerance, got[i], w, scale, magnitude)) continue;
        if (flushes_subnormals_) {
            // A device that flushes: a zero or subnormal where the reference is zero or subnormal,
            // or the result of the inputs with their subnormals read as zero.
            double const f = e.want_flushed ? e.want_flushed(i) : w;
            bool const tiny =
                (got[i] == 0 || is_subnormal(got[i])) && (w == 0 || is_subnormal(w) || f == 0 || is_subnormal(f));
            if (tiny || within<T>(tolerance, got[i], f, e.scale ? scale : std::abs(f), magnitude)) {
                ++flushed_;
                continue;
            }
        }
        std::ostringstream text;
        text.precision(9);
        text << e.describe(i) << ": got " << got[i] << ", want " << w;
        failures.add(i, text.str());
    }
    failures.report("values", target_, seed_);
    expect_guards(out);
}

template void CaseContext::expect_close(Guarded<float> const&, Expected const&);
template void CaseContext::expect_close(Guarded<half> const&, Expected const&);
template void CaseContext::expect_close(Guarded<bfloat16> const&, Expected const&);

template <class T>
void CaseContext::expect_equal(Guarded<T> const& out, std::vector<T> const& want,
                               std::function<std::string(std::size_t)> const& describe) {
    std::vector<T> const got = out.values();
    ASSERT_EQ(got.size(), want.size());
    Failures failures;
    for (std::size_t i = 0; i < got.size(); ++i) {
        bool equal = std::memcmp(&got[i], &want[i], sizeof(T)) == 0;
        if constexpr (std::is_floating_point_v<T>) {
            equal = equal || (std::isnan(got[i]) && std::isnan(want[i]));
            if (!equal && flushes_subnormals_ && got[i] == 0 && is_subnormal(want[i])) {
                ++flushed_;
                continue;
            }
        }
        if (!equal) {
            std::ostringstream text;
            text.precision(9);
            text << describe(i) << ": got " << got[i] << ", want " << want[i];
            failures.add(i, text.str());
        }
    }
    failures.report("values", target_, seed_);
    expect_guards(out);
}

template <class T>
void CaseContext::expect_guards(Guarded<T> const& out) {
    if (auto const at = out.changed_guard())
        ADD_FAILURE() << "an element outside the output view was written (storage element " << *at << ") on "
                      << target_.id;
}

template void CaseContext::expect_equal(Guarded<float> const&, std::vector<float> const&,
                                        std::function<std::string(std::size_t)> const&);
template void CaseContext::expect_equal(Guarded<std::int64_t> const&, std::vector<std::int64_t> const&,
                                        std::function<std::string(std::size_t)> const&);
template void CaseContext::expect_guards(Guarded<float> const&);
template void CaseContext::expect_guards(Guarded<std::int64_t> const&);
template void CaseContext::expect_guards(Guarded<half> const&);
template void CaseContext::expect_guards(Guarded<bfloat16> const&);
template void CaseContext::expect_guards(Guarded<std::int32_t> const&);

// ---- the table of cases

std::vector<OpCase>& op_cases() {
    static std::vector<OpCase> cases;
    return cases;
}

CaseRegistration::CaseRegistration(std::vector<OpCase> cases) {
    for (auto& c : cases) op_cases().push_back(std::move(c));
}

std::vector<Shape> elementwise_shapes() {
    return {Shape{0},
            Shape{1},
            Shape{7},
            Shape{64},
            Shape{1000},
            Shape{4097},
            Shape{3, 5},
            Shape{17, 33},
            Shape{4, 9, 130},
            Shape{2, 3, 1031},
            Shape{0, 5},
            Shape{200003},
            Shape{65535 * 256 + 77}};
}

std::string show(float v) {
    char bits[16];
    std::snprintf(bits, sizeof bits, "%08x", std::bit_cast<std::uint32_t>(v));
    std::ostringstream s;
    s.precision(9);
    s << v << " (0x" << bits << ")";
    return s.str();
}

}  // namespace rayo::test::ops
