// matmul for each input type, and linear: x[batch, in] · w[out, in]ᵀ with f32 activations and
// f32/f16/bf16 weights, from one-token decoding (weight-bandwidth bound) to a full batch.
#include "bench_support.hpp"

#include <string>

namespace rayo_bench {
namespace {

using rayo::FTensor;

template <rayo::FloatingElement T>
std::string type_name() {
    return std::string(rayo::to_string(rayo::dtype_of<T>));
}

constexpr std::int64_t matmul_sizes[] = {64, 256, 1024};

struct LinearShape {
    std::int64_t batch, in, out;
};
constexpr LinearShape linear_shapes[] = {{1, 4096, 4096}, {64, 1024, 1024}, {512, 1024, 4096}};

// Inputs in [-1, 1) keep f16 products and sums far from overflow.
constexpr Range unit{-1.0f, 1.0f};

template <rayo::FloatingElement T>
void run_matmul(benchmark::State& state, std::int64_t n) {
    rayo::Device const device = bench_device();
    auto const a = random_tensor<T>(rayo::Shape{n, n}, device, unit, 1);
    auto const b = random_tensor<T>(rayo::Shape{n, n}, device, unit, 2);
    FTensor const out = output_tensor(rayo::Shape{n, n}, device);
    time_op(state, device, [&] { rayo::matmul_into(a, b, out); });
    auto const nd = static_cast<double>(n);
    report(state, {.flops = 2 * nd * nd * nd});
}

template <rayo::FloatingElement W>
void run_linear(benchmark::State& state, LinearShape s) {
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{s.batch, s.in}, device, unit, 1);
    auto const w = random_tensor<W>(rayo::Shape{s.out, s.in}, device, unit, 2);
    FTensor const out = output_tensor(rayo::Shape{s.batch, s.out}, device);
    time_op(state, device, [&] { rayo::linear_into(x, w, out); });
    double const weights = static_cast<double>(s.out * s.in);
    double const activations = static_cast<double>(s.batch * (s.in + s.out));
    report(state, {.bytes = weights * sizeof(W) + activations * sizeof(float),
                   .flops = 2 * static_cast<double>(s.batch) * weights});
}

template <rayo::FloatingElement T>
void register_type() {
    for (std::int64_t n : matmul_sizes)
        add_benchmark("matmul_" + type_name<T>() + "/" + std::to_string(n),
                      [n](benchmark::State& state) { run_matmul<T>(state, n); });
    for (LinearShape s : linear_shapes)
        add_benchmark("linear_" + type_name<T>() + "/" + std::to_string(s.batch) + "x" + std::to_string(s.in) + "x" +
                          std::to_string(s.out),
                      [s](benchmark::State& state) { run_linear<T>(state, s); });
}

}  // namespace

void register_matmul() {
    register_type<float>();
    register_type<rayo::half>();
    register_type<rayo::bfloat16>();
}

}  // namespace rayo_bench
