// Block-quant benchmarks: q8_k activation quantization per thread, and linear with q4_k, q6_k,
// q8_0, q4_0 and q5_k weights at the shapes of a 7B-class FFN projection (out 4096, in 14336),
// next to a plain streaming read measured in the same run.
//
// GEMV is timed two ways: "hot" multiplies the same weights every call (as test-backend-ops does,
// so part of them stays in the last-level cache), "cold" rotates over enough copies that every
// call reads its weights from memory. "read" sums a buffer far larger than the caches: the
// machine's read bandwidth for the GB/s figures of the cold GEMV to be held against.
#include "bench_support.hpp"

#include <string>
#include <vector>

namespace rayo_bench {
namespace {

using rayo::FTensor;

constexpr std::int64_t ffn_out = 4096, ffn_in = 14336;
// Bytes of weight copies the cold GEMV rotates over: several times any last-level cache.
constexpr double cold_bytes = 512.0 * (1 << 20);

template <class W>
std::string type_name() {
    return std::string(rayo::to_string(rayo::dtype_of<W>));
}

template <class W>
rayo::Tensor<W> random_weights(rayo::Device device) {
    static rayo::Tensor<W> const weights =
        rayo::quantize<W>(random_tensor(rayo::Shape{ffn_out, ffn_in}, device, {-1.0f, 1.0f}, 7));
    return weights;
}

template <class W>
void run_quantized_linear(benchmark::State& state, std::int64_t batch, bool cold,
                          rayo::KQuantActivations mode = rayo::KQuantActivations::q8_k_residual) {
    rayo::Device const device = bench_device();
    rayo::KQuantActivations const saved = rayo::kquant_activations();
    rayo::set_kquant_activations(mode);
    rayo::Tensor<W> const w = random_weights<W>(device);
    std::vector<rayo::Tensor<W>> copies{w};
    if (cold) {
        auto const count = static_cast<std::size_t>(cold_bytes / static_cast<double>(w.bytes())) + 1;
        while (copies.size() < count) copies.push_back(w.clone());
    }
    FTensor const x = random_tensor(rayo::Shape{batch, ffn_in}, device, {-1.0f, 1.0f}, 8);
    FTensor const out = output_tensor(rayo::Shape{batch, ffn_out}, device);
    std::size_t next = 0;
    time_op(state, device, [&] {
        rayo::linear_into(x, copies[next], out);
        next = (next + 1) % copies.size();
    });
    rayo::set_kquant_activations(saved);
    report(state, {.bytes = static_cast<double>(w.bytes()),
                   .flops = 2.0 * static_cast<double>(batch) * static_cast<double>(ffn_out * ffn_in)});
}

// sum() over 1 GiB of floats: every byte read once, nothing written.
void run_streaming_read(benchmark::State& state) {
    rayo::Device const device = bench_device();
    FTensor const data = random_tensor(rayo::Shape{std::int64_t{1} << 28}, device);
    FTensor const out = output_tensor(rayo::Shape{}, device);
    time_op(state, device, [&] { rayo::sum_into(data, out); });
    report(state, {.bytes = static_cast<double>(data.bytes())});
}

// q8_k quantization of 16M activations on one thread, so the figure is a per-thread rate.
void run_quantize_q8_k(benchmark::State& state) {
    rayo::Device const device = bench_device();
    FTensor const x = random_tensor(rayo::Shape{4096, 4096}, device);
    auto const q = rayo::Tensor<rayo::q8_k>::empty(rayo::Shape{4096, 4096}, device);
    std::size_t const saved = rayo::num_threads();
    rayo::set_num_threads(1);
    time_op(state, device, [&] { rayo::quantize_into(x, q); });
    rayo::set_num_threads(saved);
    report(state, {.elements = static_cast<double>(x.numel())});
}

template <class W>
void register_type() {
    std::string const shape =
        std::string("x").append(std::to_string(ffn_in)).append("x").append(std::to_string(ffn_out));
    std::string const name = "linear_" + type_name<W>() + "/";
    // GEMV with the default activations, and with ggml's single q8_k ("act:q8_k").
    for (bool cold : {false, true}) {
        std::string const gemv = name + "1" + shape + (cold ? "/cold" : "/hot");
        add_benchmark(gemv, [cold](benchmark::State& s) { run_quantized_linear<W>(s, 1, cold); });
        add_benchmark(gemv + "/act:q8_k", [cold](benchmark::State& s) {
            run_quantized_linear<W>(s, 1, cold, rayo::KQuantActivations::q8_k);
        });
    }
    for (std::int64_t batch : {4, 16, 32, 512})
        add_benchmark(name + std::to_string(batch) + shape,
                      [batch](benchmark::State& s) { run_quantized_linear<W>(s, batch, false); });
}

}  // namespace

void register_quant() {
    add_benchmark("read/1GiB", run_streaming_read);
    add_benchmark("quantize_q8_k/4096x4096/threads:1", run_quantize_q8_k);
    register_type<rayo::q4_k>();
    register_type<rayo::q6_k>();
    register_type<rayo::q8_0>();
    register_type<rayo::q4_0>();
    register_type<rayo::q5_k>();
}

}  // namespace rayo_bench
