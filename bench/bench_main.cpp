// rayo-bench: every op at small, medium and large sizes on rayo::Device::best().
// Our own main (not benchmark_main) so the device is chosen after static initialisation and the
// families register in a fixed order.
#include "bench_support.hpp"

#include <iostream>

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
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
