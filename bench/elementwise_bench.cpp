// Element-wise ops: activations, math functions, and binary ops against a tensor or a scalar.
#include "bench_support.hpp"

#include <string_view>

namespace rayo_bench {
namespace {

using rayo::FTensor;
using In = FTensor const&;

struct ElementwiseCase {
    std::string_view name;
    int tensor_inputs;                // 1 or 2; with the output, the bytes moved per element
    Range range;                      // of the inputs: log and sqrt want positives, a divisor stays away from 0
    void (*run)(In a, In b, In out);  // unary ops ignore b
};

constexpr Range positive{0.01f, 4.0f};
constexpr Range wide = default_range;

constexpr ElementwiseCase cases[] = {
    {"relu", 1, wide, [](In x, In, In out) { rayo::relu_into(x, out); }},
    {"leaky_relu", 1, wide, [](In x, In, In out) { rayo::leaky_relu_into(x, 0.01f, out); }},
    {"elu", 1, wide, [](In x, In, In out) { rayo::elu_into(x, 1.0f, out); }},
    {"sigmoid", 1, wide, [](In x, In, In out) { rayo::sigmoid_into(x, out); }},
    {"tanh", 1, wide, [](In x, In, In out) { rayo::tanh_into(x, out); }},
    {"silu", 1, wide, [](In x, In, In out) { rayo::silu_into(x, out); }},
    {"gelu_exact", 1, wide, [](In x, In, In out) { rayo::gelu_into(x, rayo::Gelu::exact, out); }},
    {"gelu_tanh", 1, wide, [](In x, In, In out) { rayo::gelu_into(x, rayo::Gelu::tanh, out); }},
    {"clip", 1, wide, [](In x, In, In out) { rayo::clip_into(x, -1.0f, 1.0f, out); }},
    {"exp", 1, wide, [](In x, In, In out) { rayo::exp_into(x, out); }},
    {"log", 1, positive, [](In x, In, In out) { rayo::log_into(x, out); }},
    {"sqrt", 1, positive, [](In x, In, In out) { rayo::sqrt_into(x, out); }},
    {"abs", 1, wide, [](In x, In, In out) { rayo::abs_into(x, out); }},
    {"neg", 1, wide, [](In x, In, In out) { rayo::neg_into(x, out); }},
    {"add", 2, wide, [](In a, In b, In out) { rayo::add_into(a, b, out); }},
    {"sub", 2, wide, [](In a, In b, In out) { rayo::sub_into(a, b, out); }},
    {"mul", 2, wide, [](In a, In b, In out) { rayo::mul_into(a, b, out); }},
    {"div", 2, positive, [](In a, In b, In out) { rayo::div_into(a, b, out); }},
    {"add_scalar", 1, wide, [](In a, In, In out) { rayo::add_into(a, 1.5f, out); }},
    {"sub_scalar", 1, wide, [](In a, In, In out) { rayo::sub_into(a, 1.5f, out); }},
    {"mul_scalar", 1, wide, [](In a, In, In out) { rayo::mul_into(a, 1.5f, out); }},
    {"div_scalar", 1, wide, [](In a, In, In out) { rayo::div_into(a, 1.5f, out); }},
    {"scale", 1, wide, [](In x, In, In out) { rayo::scale_into(x, 0.5f, out); }},
};

void run_case(benchmark::State& state, ElementwiseCase const& c, std::int64_t n) {
    rayo::Device const device = bench_device();
    FTensor const a = random_tensor(rayo::Shape{n}, device, c.range, 1);
    FTensor const b = c.tensor_inputs == 2 ? random_tensor(rayo::Shape{n}, device, c.range, 2) : a;
    FTensor const out = output_tensor(rayo::Shape{n}, device);
    time_op(state, device, [&] { c.run(a, b, out); });
    auto const elements = static_cast<double>(n);
    report(state, {.elements = elements, .bytes = elements * sizeof(float) * (c.tensor_inputs + 1)});
}

}  // namespace

void register_elementwise() {
    for (ElementwiseCase const& c : cases)
        for (std::int64_t n : vector_sizes)
            add_benchmark(std::string(c.name) + "/" + std::to_string(n),
                          [&c, n](benchmark::State& state) { run_case(state, c, n); });
}

}  // namespace rayo_bench
