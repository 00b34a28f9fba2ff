// rayo-bench: every op at small, medium and large sizes on rayo::Device::best().
// Our own main (not benchmark_main) so the device is chosen after static initialisation and the
// families register in a fixed order.
#include "bench_support.hpp"

#include <chrono>
#include <cstdlib>
#include <iostream>

namespace {

// A GPU left idle runs its multiprocessors at a low clock that some drivers raise only after
// seconds of sustained work (NVIDIA's Vulkan driver on an H200: 345 MHz, then 1965 MHz after 4 s
// of f16 matmuls; compute-bound cases measured 3-5x slow before). rayo-bench keeps the device
// busy with matmuls for RAYO_BENCH_WARMUP seconds (default 3 on a GPU, 0 on the CPU) first.
void warm_up(rayo::Device device) {
    char const* text = std::getenv("RAYO_BENCH_WARMUP");
    double const seconds = text ? std::atof(text) : device.kind() == rayo::DeviceKind::cpu ? 0.0 : 3.0;
    if (seconds <= 0) return;
    auto const a = rayo_bench::random_tensor<rayo::half>(rayo::Shape{4096, 4096}, device, {-1.0f, 1.0f}, 1);
    auto const out = rayo_bench::output_tensor(rayo::Shape{4096, 4096}, device);
    auto const until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
        for (int i = 0; i < 16; ++i) rayo::matmul_into(a, a, out);
        device.synchronize();
    }
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    try {
        rayo_bench::add_context(rayo_bench::bench_device());
    } catch (rayo::Error const& e) {  // RAYO_DEVICE names a device this machine does not have
        std::cerr << "rayo-bench: " << e.what() << '\n';
        return 2;
    }
    rayo_bench::register_elementwise();
    rayo_bench::register_reductions();
    rayo_bench::register_softmax_norm();
    rayo_bench::register_matmul();
    rayo_bench::register_quant();
    rayo_bench::register_convolution();
    rayo_bench::register_model_ops();
    rayo_bench::register_attention_cpu();
    rayo_bench::register_gpu();
    rayo_bench::register_attention_gpu();
    try {
        warm_up(rayo_bench::bench_device());
    } catch (rayo::Error const& e) {
        std::cerr << "rayo-bench: warm-up: " << e.what() << '\n';
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
