// The memory-bound ops a model is built from, beside a plain copy loop over the same bytes: a
// broadcast bias add, an f32 -> f16 cast, a transposing permute and a token-embedding gather, each
// counted as the bytes it reads and writes (CPU sizes; the GPU's are in gpu_bench.cpp).
#include "bench_support.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace rayo_bench {
namespace {

using rayo::FTensor;

// A plain single-threaded copy loop of `bytes`: the baseline the ops' bandwidth is read against.
void run_copy_loop(benchmark::State& state, std::size_t bytes) {
    std::vector<std::uint8_t> const from(bytes, 1);
    std::vector<std::uint8_t> to(bytes);
    for (auto _ : state) {
        std::copy(from.begin(), from.end(), to.begin());
        benchmark::DoNotOptimize(to.data());
        benchmark::ClobberMemory();
    }
    report(state, {.bytes = 2.0 * static_cast<double>(bytes)});
}

void run_bias_add(benchmark::State& state) {
    rayo::Device const device = bench_device();
    FTensor const a = random_tensor(rayo::Shape{2048, 4096}, device, default_range, 1);
    FTensor const bias = random_tensor(rayo::Shape{4096}, device, default_range, 2);
    FTensor const out = output_tensor(a.shape(), device);
    time_op(state, device, [&] { rayo::add_into(a, bias, out); });
    report(state, {.bytes = 2.0 * static_cast<double>(a.bytes())});
}

void run_cast(benchmark::State& state) {
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{std::int64_t{1} << 24}, device);
    auto const out = rayo::Tensor<rayo::half>::empty(x.shape(), device);
    time_op(state, device, [&] { rayo::cast_into(x, out); });
    report(state, {.bytes = 6.0 * static_cast<double>(x.numel())});
}

void run_permute(benchmark::State& state) {
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{4096, 4096}, device);
    FTensor const out = output_tensor(x.shape(), device);
    time_op(state, device, [&] { rayo::permute_into(x, {1, 0}, out); });
    report(state, {.bytes = 2.0 * static_cast<double>(x.bytes())});
}

}  // namespace

void register_model_ops() {
    add_benchmark("model/copy_loop/128MiB", [](benchmark::State& s) { run_copy_loop(s, std::size_t{128} << 20); });
    add_benchmark("model/bias_add/2048x4096", run_bias_add);
    add_benchmark("model/cast_f32_f16/2^24", run_cast);
    add_benchmark("model/permute/4096x4096", run_permute);
    add_benchmark("model/embedding/4096_of_32000x4096_f16",
                  [](benchmark::State& s) { run_embedding(s, 32000, 4096, 4096); });
}

}  // namespace rayo_bench
