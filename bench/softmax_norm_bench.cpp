// Row-wise ops over the last axis of a matrix: softmax, log_softmax, layer_norm and rms_norm
// (plain and with learned gamma/beta).
#include "bench_support.hpp"

#include <string_view>

namespace rayo_bench {
namespace {

using rayo::FTensor;
using In = FTensor const&;

struct RowwiseCase {
    std::string_view name;
    void (*run)(In x, In gamma, In beta, In out);  // gamma and beta are [cols]; most ops ignore them
};

constexpr RowwiseCase cases[] = {
    {"softmax", [](In x, In, In, In out) { rayo::softmax_into(x, -1, out); }},
    {"log_softmax", [](In x, In, In, In out) { rayo::log_softmax_into(x, -1, out); }},
    {"layer_norm", [](In x, In, In, In out) { rayo::layer_norm_into(x, 1e-5f, out); }},
    {"layer_norm_affine", [](In x, In g, In b, In out) { rayo::layer_norm_into(x, g, b, 1e-5f, out); }},
    {"rms_norm", [](In x, In, In, In out) { rayo::rms_norm_into(x, 1e-6f, out); }},
    {"rms_norm_affine", [](In x, In g, In, In out) { rayo::rms_norm_into(x, g, 1e-6f, out); }},
};

void run_case(benchmark::State& state, RowwiseCase const& c, Rows shape) {
    rayo::Device const device = bench_device();
    rayo::Shape const matrix{shape.rows, shape.cols};
    FTensor const x = random_tensor(matrix, device);
    FTensor const gamma = random_tensor(rayo::Shape{shape.cols}, device, {0.5f, 1.5f}, 2);
    FTensor const beta = random_tensor(rayo::Shape{shape.cols}, device, {-0.5f, 0.5f}, 3);
    FTensor const out = output_tensor(matrix, device);
    time_op(state, device, [&] { c.run(x, gamma, beta, out); });
    auto const elements = static_cast<double>(matrix.numel());
    // One read of x and one write of out; gamma/beta are a row and stay in cache.
    report(state, {.elements = elements, .bytes = 2 * elements * sizeof(float)});
}

}  // namespace

void register_softmax_norm() {
    for (RowwiseCase const& c : cases)
        for (Rows shape : matrix_shapes)
            add_benchmark(std::string(c.name) + "/" + shape_name(shape),
                          [&c, shape](benchmark::State& state) { run_case(state, c, shape); });
}

}  // namespace rayo_bench
