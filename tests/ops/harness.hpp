// The cross-backend op harness. Every op of rayo::op_table has cases here (tests/ops/*_cases.cpp,
// one file per family); each case runs on every target this machine has — the CPU at every
// instruction set, every Vulkan device (and its shared-memory path where it has subgroup
// arithmetic), every CUDA device, and the CUDA backend's kernels on the PTX simulator — against a
// float64 reference, under the tolerance tolerances.cpp states for its op and element type.
// Inputs are fresh random data with special values mixed in, on views at element offsets;
// outputs are views inside poisoned guard regions that must be intact afterwards.
//
// A case is a name, the op and element type it covers, and a body that uses a CaseContext:
//
//     OpCase{"relu", Op::relu, DType::f32, [](CaseContext& ctx) {
//         for (Shape const& shape : ctx.shapes(elementwise_shapes())) {
//             std::vector<float> const in = ctx.values(shape.numel(), {-4, 4});
//             Guarded<float> out = ctx.output<float>(shape);
//             relu(ctx.input(in, shape), out.tensor());
//             ctx.expect_close(out, [&](std::size_t i) { return in[i] < 0 ? 0.0 : in[i]; },
//                              [&](std::size_t i) { return "x = " + show(in[i]); });
//         }
//     }};
#pragma once

#include <gtest/gtest.h>

#include <rayo/rayo.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ops/tolerances.hpp"

namespace rayo::test::ops {

// Where a case runs: a device, and the setting that selects one of its paths.
struct Target {
    std::string id;                     // "cpu_avx2", "vulkan0", "vulkan0_shared_memory", "cuda0", "cuda_sim"
    DeviceKind kind = DeviceKind::cpu;  // the backend, whose column of the tolerance table applies
    std::function<Device()> enter;      // selects the path (an instruction set, a shader variant); the device
    std::function<void()> leave;        // restores the default
    std::size_t max_elements = 0;       // the largest tensor a case makes here (the simulator is slow)
    // Which cases run here (a path that only some ops take); every case where not given.
    std::function<bool(Op, DType)> takes = {};
};

// Every target of this machine, in a fixed order. The simulated CUDA device exists only while a
// case runs on it (simulated_cuda.hpp).
[[nodiscard]] std::vector<Target> const& targets();

// Inputs are uniform in [lo, hi].
struct Range {
    float lo = -4.0f, hi = 4.0f;
};

// Which special values are mixed into random inputs, about one in eight.
enum class Specials {
    none,
    ieee,  // ±0, ±Inf, NaN, subnormals and the smallest normal
    all,   // those, the float range's edges (±FLT_MAX) and values where functions saturate or underflow
};

// A tensor view inside a larger allocation whose elements around it are poisoned: what an op
// writes outside the view is caught by guards_intact().
template <class T>
class Guarded {
public:
    Guarded(Shape shape, Device device, std::size_t offset);
    [[nodiscard]] Tensor<T> const& tensor() const noexcept { return view_; }
    [[nodiscard]] std::vector<T> values() const { return view_.to_vector(); }
    // The first element (in storage order) outside the view that changed, if any.
    [[nodiscard]] std::optional<std::size_t> changed_guard() const;
    [[nodiscard]] static T poison() noexcept;

private:
    std::size_t offset_, count_;
    Tensor<T> storage_;
    Tensor<T> view_;
};

class CaseContext {
public:
    CaseContext(Target const& target, Device device, Op op, DType dtype);

    [[nodiscard]] Target const& target() const noexcept { return target_; }
    [[nodiscard]] Device device() const noexcept { return device_; }
    [[nodiscard]] std::uint32_t seed() const noexcept { return seed_; }
    [[nodiscard]] Tolerance const& tolerance() const noexcept { return tolerance_; }

    // The shapes of `shapes` this target takes (the simulator's budget drops the largest).
    [[nodiscard]] std::vector<Shape> shapes(std::vector<Shape> const& shapes) const;
    [[nodiscard]] bool fits(std::size_t elements) const noexcept { return elements <= target_.max_elements; }

    // `n` fresh random values in `range`, about one in eight of them a special value of `specials`.
    [[nodiscard]] std::vector<float> values(std::size_t n, Range range, Specials specials = Specials::all);
    // Every `stride`-th float bit pattern of either sign in [lo, hi], the stride chosen so that about
    // `wanted` values (or the target's budget) come out: a dense sweep of a function's range.
    [[nodiscard]] std::vector<float> sweep(float lo, float hi, std::size_t wanted) const;
    // Every value of the 16-bit type (f16 or bf16) in [lo, hi], thinned to the target's budget.
    [[nodiscard]] std::vector<float> sweep_all_of(DType type, float lo, float hi) const;

    // A tensor of `shape` holding `values`, `offset` elements into its allocation.
    template <class T>
    [[nodiscard]] Tensor<T> input(std::vector<T> const& values, Shape shape, std::size_t offset = 1) const;
    template <class T>
    [[nodiscard]] Guarded<T> output(Shape shape, std::size_t offset = 3) const {
        return Guarded<T>(std::move(shape), device(), offset);
    }

    // What element i of an output should be, for expect_close.
    struct Expected {
        std::function<double(std::size_t)> want;               // the float64 reference
        std::function<std::string(std::size_t)> describe;      // the inputs, for the message
        std::function<double(std::size_t)> scale = {};         // of the tolerance (Tolerance); default |want|
        std::function<double(std::size_t)> magnitude = {};     // of a product (Tolerance::rounding)
        std::function<double(std::size_t)> want_flushed = {};  // the reference with subnormal inputs read as 0
        // Of the magnitude, on top of the op's rounding: what operands the caller allowed to be
        // rounded on their way into a product add (TF32: 2^-9, 2^-10 for each operand).
        double operand_rounding = 0;
    };
    // Each element against the reference under the op's tolerance. NaN must give NaN, infinities
    // the same infinity. On a device that flushes float32 subnormals (a Vulkan device without
    // DenormPreserve), want_flushed(i) is accepted too, and such results are counted. Also checks
    // the guards. For f16 and bf16 outputs (T half or bfloat16) the reference is rounded to T first
    // and ulp tolerances count T's units in the last place.
    template <class T>
    void expect_close(Guarded<T> const& out, Expected const& e);
    // Every element equal (bitwise for floats, NaN equal to NaN), and the guards intact.
    template <class T>
    void expect_equal(Guarded<T> const& out, std::vector<T> const& want,
                      std::function<std::string(std::size_t)> const& describe);
    template <class T>
    void expect_guards(Guarded<T> const& out);

    // Runs one problem of a case; on the PTX simulator, one whose kernels use an instruction it does
    // not model (the tensor cores') is counted instead (the case is skipped if none ran).
    void attempt(std::function<void()> const& problem);
    [[nodiscard]] std::size_t not_simulated() const noexcept { return not_simulated_; }
    [[nodiscard]] std::size_t problems_run() const noexcept { return problems_run_; }
    [[nodiscard]] std::string const& not_simulated_reason() const noexcept { return not_simulated_reason_; }

    // Whether the device flushes float32 subnormals (results and inputs) in its shaders.
    [[nodiscard]] bool flushes_subnormals() const noexcept { return flushes_subnormals_; }
    [[nodiscard]] std::size_t flushed_results() const noexcept { return flushed_; }

private:
    Target const& target_;
    Device device_;
    std::uint32_t seed_;
    Tolerance tolerance_;
    bool flushes_subnormals_;
    std::size_t flushed_ = 0;
    std::size_t not_simulated_ = 0, problems_run_ = 0;
    std::string not_simulated_reason_;
};

// A test case of the harness: one op (a row of rayo::op_table) at one element type, in one form.
struct OpCase {
    std::string name;  // unique: "relu", "add_scalar", "sum_axis", "linear_q4_k", ...
    Op op;
    DType dtype;
    std::function<void(CaseContext&)> check;
    // The GPU backends document that they run this case on the CPU (rayo::stats() counts it).
    bool gpu_falls_back = false;
};

// f.template operator()<T>(name) for each element type cast and the layout ops take, named as
// cases name them ("f32", "f16", "bf16", "i32").
template <class F>
void for_each_castable_type(F&& f) {
    f.template operator()<float>("f32");
    f.template operator()<half>("f16");
    f.template operator()<bfloat16>("bf16");
    f.template operator()<std::int32_t>("i32");
}

// The cases add.template operator()<T>(cases) gives for T = f32, f16 and bf16, in that order: the
// cases of a family of floating ops.
template <class Add>
[[nodiscard]] std::vector<OpCase> floating_cases(Add&& add) {
    std::vector<OpCase> cases;
    add.template operator()<float>(cases);
    add.template operator()<half>(cases);
    add.template operator()<bfloat16>(cases);
    return cases;
}

// The cases of every family; each *_cases.cpp adds its own through a CaseRegistration.
[[nodiscard]] std::vector<OpCase>& op_cases();
struct CaseRegistration {
    explicit CaseRegistration(std::vector<OpCase> cases);
};

// The shapes of the element-wise, softmax and norm cases: 0-sized, one element, odd and prime
// sizes, sizes around vector widths and tiles, 2-D and 3-D.
[[nodiscard]] std::vector<Shape> elementwise_shapes();
// "x = 1.5 (0x3fc00000)": a float with its bits, for messages.
[[nodiscard]] std::string show(float v);

// The floating element types the element-wise, softmax, norm and reduction cases run at, with the
// suffix of their cases' names ("" for f32: relu, relu_f16, relu_bf16).
template <class T>
[[nodiscard]] std::string dtype_suffix() {
    std::string suffix;
    if constexpr (!std::is_same_v<T, float>) suffix.append("_").append(to_string(dtype_of<T>));
    return suffix;
}
// `values` rounded to T (round to nearest even).
template <class T>
[[nodiscard]] std::vector<T> rounded_to(std::vector<float> const& values) {
    return std::vector<T>(values.begin(), values.end());
}
// Whether two values are the same bits, or both NaN.
template <class T>
[[nodiscard]] bool same_or_both_nan(T a, T b) {
    float const fa = static_cast<float>(a), fb = static_cast<float>(b);
    return std::memcmp(&a, &b, sizeof(T)) == 0 || (std::isnan(fa) && std::isnan(fb));
}

}  // namespace rayo::test::ops
