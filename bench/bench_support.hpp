// Shared pieces of the rayo benchmarks: the device, random inputs, the timed loop and throughput
// counters, so each op family's file only says what to run and how much work it is.
#pragma once

#include <benchmark/benchmark.h>
#include <rayo/rayo.hpp>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rayo_bench {

// The device every rayo-bench benchmark runs on (RAYO_DEVICE picks another).
inline rayo::Device bench_device() {
    static rayo::Device const device = rayo::Device::best();
    return device;
}

// Element-wise sizes (4K, 256K, 16M floats: L1-resident, L2/L3, main memory) and 2-D shapes of the
// same element counts for row-wise ops and axis reductions.
inline constexpr std::int64_t vector_sizes[] = {4096, 262144, 16777216};
struct Rows {
    std::int64_t rows, cols;
};
inline constexpr Rows matrix_shapes[] = {{64, 64}, {256, 1024}, {4096, 4096}};

inline std::string shape_name(Rows s) { return std::to_string(s.rows) + "x" + std::to_string(s.cols); }

struct Range {
    float lo, hi;
};
inline constexpr Range default_range{-4.0f, 4.0f};

// Uniform values in [lo, hi). splitmix64 rather than <random>: 16M values are drawn per large
// benchmark, and the standard distributions would make setup slower than the measurement.
inline std::vector<float> random_values(std::size_t n, Range range = default_range, std::uint64_t seed = 1) {
    std::vector<float> values(n);
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ull;
    for (float& v : values) {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        float const unit = static_cast<float>(z >> 40) * 0x1.0p-24f;
        v = range.lo + (range.hi - range.lo) * unit;
    }
    return values;
}

template <rayo::FloatingElement T = float>
rayo::Tensor<T> random_tensor(rayo::Shape shape, rayo::Device device, Range range = default_range,
                              std::uint64_t seed = 1) {
    std::vector<float> const values = random_values(shape.numel(), range, seed);
    if constexpr (std::same_as<T, float>) {
        return rayo::Tensor<float>::from(std::span<float const>(values), std::move(shape), device);
    } else {
        std::vector<T> const converted(values.begin(), values.end());
        return rayo::Tensor<T>::from(std::span<T const>(converted), std::move(shape), device);
    }
}

// Outputs are written once here so the timed loop does not pay first-touch page faults.
template <rayo::Element T = float>
rayo::Tensor<T> output_tensor(rayo::Shape shape, rayo::Device device) {
    return rayo::Tensor<T>::zeros(std::move(shape), device);
}

// Seconds a case runs its op back to back before it is timed, where the GPU has been idle. NVIDIA's
// Vulkan driver lowers an idle GPU's clocks (an H200's multiprocessors: 1980 -> 345 MHz 1.5-3 s
// after its last work) and raises them only under continuous work, and Google Benchmark runs a
// case's function several times, each first preparing its inputs on the host (seconds at the larger
// sizes), so without this a Vulkan case is timed at whatever clock the idle left. A CUDA context
// holds the clocks up itself. RAYO_BENCH_WARMUP=seconds sets it for any GPU; by default 0.5 on a
// Vulkan device, 0 elsewhere.
inline double warm_up_seconds(rayo::Device device) {
    if (device.kind() == rayo::DeviceKind::cpu) return 0.0;
    static double const from_environment = [] {
        char const* text = std::getenv("RAYO_BENCH_WARMUP");
        return text && *text ? std::atof(text) : -1.0;
    }();
    if (from_environment >= 0) return from_environment;
    return device.kind() == rayo::DeviceKind::vulkan ? 0.5 : 0.0;
}

// Host time with no GPU work after which the clocks may have fallen: a third of the shortest fall
// seen (1.5 s), so that consecutive runs of a quickly prepared case skip the warm-up.
inline constexpr std::chrono::milliseconds idle_allowance{500};

// When the last timed loop or warm-up ended (the GPU then had work).
inline std::chrono::steady_clock::time_point& last_gpu_work() {
    static std::chrono::steady_clock::time_point at{};
    return at;
}

// Calls `op` for `seconds` in rounds of about 20 ms of calls (from one call's time), each round
// synchronized so that the queue never runs far ahead of the GPU.
template <class Op>
void keep_busy(rayo::Device device, Op& op, double seconds, std::chrono::duration<double> one_call) {
    using Clock = std::chrono::steady_clock;
    auto const per_round = static_cast<long>(std::max(1.0, 0.02 / std::max(one_call.count(), 1e-6)));
    auto const until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until) {
        for (long i = 0; i < per_round; ++i) op();
        device.synchronize();
    }
}

// Runs `op` twice untimed (first touch, thread-pool start, lazy kernel selection; the second call
// after a host wait, as every timed call runs, loads the kernels a GPU picks once nothing it reads is
// still being written), then back to back for warm_up_seconds() where the GPU has been idle, then in
// the timed loop. The device is synchronized inside the timed region at the end of each batch, so
// queued GPU work is counted without serialising every call. An op that throws skips the benchmark
// with its message instead of aborting the whole run.
template <class Op>
void time_op(benchmark::State& state, rayo::Device device, Op&& op) {
    using Clock = std::chrono::steady_clock;
    bool const idle = Clock::now() - last_gpu_work() > idle_allowance;
    try {
        op();
        device.synchronize();
        auto const start = Clock::now();
        op();
        device.synchronize();
        if (double const seconds = warm_up_seconds(device); idle && seconds > 0)
            keep_busy(device, op, seconds, Clock::now() - start);
    } catch (std::exception const& e) {
        state.SkipWithError(e.what());
        return;
    }
    benchmark::IterationCount done = 0;
    for (auto _ : state) {
        op();
        if (++done == state.max_iterations) device.synchronize();
    }
    last_gpu_work() = Clock::now();
}

// Work done by one call; each non-zero field becomes a rate counter named by its unit, scaled so
// the reported number reads in that unit per second ("GB=22.5/s", JSON "GB": 22.5).
struct Work {
    double elements = 0;
    double bytes = 0;
    double flops = 0;
};

inline void report(benchmark::State& state, Work work) {
    auto rate = [](double per_call) {
        return benchmark::Counter(per_call, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
    };
    if (work.elements > 0) state.counters["Gelem"] = rate(work.elements * 1e-9);
    if (work.bytes > 0) state.counters["GB"] = rate(work.bytes * 1e-9);
    if (work.flops > 0) state.counters["GFLOP"] = rate(work.flops * 1e-9);
}

// Wall-clock time throughout: rayo's worker threads (and a GPU) do work that the calling
// thread's CPU time does not see, and the rate counters divide by the time used here.
template <class Fn>
benchmark::internal::Benchmark* add_benchmark(std::string const& name, Fn&& fn) {
    return benchmark::RegisterBenchmark(name.c_str(), std::forward<Fn>(fn))
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
}

// The machine facts a result needs to be read: device, CPU instruction set, thread count.
inline void add_context(rayo::Device device) {
    benchmark::AddCustomContext("rayo_version", rayo::version_string);
    benchmark::AddCustomContext("device", device.id() + " (" + device.name() + ")");
    benchmark::AddCustomContext("cpu_arch", std::string(rayo::to_string(rayo::cpu_arch())));
    benchmark::AddCustomContext("rayo_threads", std::to_string(rayo::num_threads()));
    // Google Benchmark's "Library was built as DEBUG" speaks of the benchmark library itself
    // (Debian's package is built without NDEBUG); this says how rayo-bench and rayo were built.
#ifdef NDEBUG
    benchmark::AddCustomContext("rayo_build", "optimized (NDEBUG)");
#else
    benchmark::AddCustomContext("rayo_build", "debug: assertions on, figures not representative");
#endif
}

// One registration function per op family, called by main in this order.
void register_elementwise();
void register_reductions();
void register_softmax_norm();
void register_matmul();
void register_quant();
void register_convolution();
// Attention prefill and decode on a GPU (nothing when the benchmark device is the CPU).
void register_attention_gpu();
// A prompt's token embeddings: `count` rows of an f16 table [rows, dim] on bench_device(), into a
// preallocated output (a model's activation buffer); bytes as read plus written.
inline void run_embedding(benchmark::State& state, std::int64_t rows, std::int64_t dim, std::int64_t count) {
    rayo::Device const device = bench_device();
    auto const table = random_tensor<rayo::half>(rayo::Shape{rows, dim}, device);
    std::vector<std::int32_t> ids(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < ids.size(); ++i)
        ids[i] = static_cast<std::int32_t>(i * 7919 % static_cast<std::size_t>(rows));
    auto const id_tensor = rayo::Tensor<std::int32_t>::from(ids, rayo::Shape{count}, device);
    auto const out = rayo::Tensor<rayo::half>::empty(rayo::Shape{count, dim}, device);
    time_op(state, device, [&] { rayo::embedding_into(table, id_tensor, out); });
    report(state, {.bytes = 2.0 * static_cast<double>(count * dim) * sizeof(rayo::half)});
}

void register_gpu();
void register_model_ops();
// Attention against a matmul-softmax-matmul baseline (CPU only).
void register_attention_cpu();

}  // namespace rayo_bench
