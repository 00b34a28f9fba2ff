// Reductions over the whole tensor and along each axis of a matrix (axis 1 is contiguous, axis 0
// strides across rows), plus dot.
#include "bench_support.hpp"

#include <string_view>

namespace rayo_bench {
namespace {

using rayo::FTensor;
using In = FTensor const&;
using Indices = rayo::Tensor<std::int64_t>;

// Both result kinds are allocated; each op writes the one it produces.
struct Outputs {
    FTensor values;
    Indices indices;
};
using Out = Outputs const&;

struct ReductionCase {
    std::string_view name;
    bool writes_indices;  // argmax/argmin: 8-byte results
    void (*whole)(In x, Out out);
    void (*along)(In x, int axis, Out out);
};

constexpr ReductionCase cases[] = {
    {"sum", false, [](In x, Out o) { rayo::sum_into(x, o.values); },
     [](In x, int a, Out o) { rayo::sum_into(x, a, false, o.values); }},
    {"mean", false, [](In x, Out o) { rayo::mean_into(x, o.values); },
     [](In x, int a, Out o) { rayo::mean_into(x, a, false, o.values); }},
    {"max", false, [](In x, Out o) { rayo::max_into(x, o.values); },
     [](In x, int a, Out o) { rayo::max_into(x, a, false, o.values); }},
    {"min", false, [](In x, Out o) { rayo::min_into(x, o.values); },
     [](In x, int a, Out o) { rayo::min_into(x, a, false, o.values); }},
    {"argmax", true, [](In x, Out o) { rayo::argmax_into(x, o.indices); },
     [](In x, int a, Out o) { rayo::argmax_into(x, a, false, o.indices); }},
    {"argmin", true, [](In x, Out o) { rayo::argmin_into(x, o.indices); },
     [](In x, int a, Out o) { rayo::argmin_into(x, a, false, o.indices); }},
};

Outputs make_outputs(rayo::Shape const& shape, rayo::Device device) {
    return {output_tensor<float>(shape, device), output_tensor<std::int64_t>(shape, device)};
}

Work reduction_work(ReductionCase const& c, double elements, double results) {
    double const result_bytes = results * (c.writes_indices ? sizeof(std::int64_t) : sizeof(float));
    return {.elements = elements, .bytes = elements * sizeof(float) + result_bytes};
}

void run_whole(benchmark::State& state, ReductionCase const& c, std::int64_t n) {
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{n}, device);
    Outputs const out = make_outputs(rayo::Shape{}, device);
    time_op(state, device, [&] { c.whole(x, out); });
    report(state, reduction_work(c, static_cast<double>(n), 1));
}

void run_along(benchmark::State& state, ReductionCase const& c, Rows shape, int axis) {
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{shape.rows, shape.cols}, device);
    std::int64_t const results = axis == 0 ? shape.cols : shape.rows;
    Outputs const out = make_outputs(rayo::Shape{results}, device);
    time_op(state, device, [&] { c.along(x, axis, out); });
    report(state, reduction_work(c, static_cast<double>(shape.rows * shape.cols), static_cast<double>(results)));
}

void run_dot(benchmark::State& state, std::int64_t n) {
    rayo::Device const device = bench_device();
    FTensor const a = random_tensor(rayo::Shape{n}, device, default_range, 1);
    FTensor const b = random_tensor(rayo::Shape{n}, device, default_range, 2);
    FTensor const out = output_tensor(rayo::Shape{}, device);
    time_op(state, device, [&] { rayo::dot_into(a, b, out); });
    auto const elements = static_cast<double>(n);
    report(state, {.elements = elements, .bytes = 2 * elements * sizeof(float), .flops = 2 * elements});
}

}  // namespace

void register_reductions() {
    for (ReductionCase const& c : cases) {
        std::string const name(c.name);
        for (std::int64_t n : vector_sizes)
            add_benchmark(name + "/" + std::to_string(n), [&c, n](benchmark::State& state) { run_whole(state, c, n); });
        for (int axis : {0, 1})
            for (Rows shape : matrix_shapes)
                add_benchmark(name + "_axis" + std::to_string(axis) + "/" + shape_name(shape),
                              [&c, shape, axis](benchmark::State& state) { run_along(state, c, shape, axis); });
    }
    for (std::int64_t n : vector_sizes)
        add_benchmark("dot/" + std::to_string(n), [n](benchmark::State& state) { run_dot(state, n); });
}

}  // namespace rayo_bench
