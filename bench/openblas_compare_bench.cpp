// rayo's f32 matmul/linear side by side with OpenBLAS's cblas_sgemm on the same data, both with
// the same number of threads. Debian's OpenBLAS 0.3.21 does not recognise recent CPUs and falls
// back to old kernels unless OPENBLAS_CORETYPE names one; it reads that variable when it loads,
// so unless it is set this program re-executes itself with OpenBLAS's best kernels for the
// machine: SkylakeX where AVX-512 runs (it faults without it), else Zen on AMD, Haswell on Intel.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <rayo/rayo.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

using rayo_bench::add_benchmark;
using rayo_bench::random_tensor;
using rayo_bench::report;
using rayo_bench::time_op;
using rayo_bench::Work;

struct Case {
    std::string name;
    std::size_t m, n, k;
    bool b_transposed;  // linear: x[m, k] · w[n, k]ᵀ
};

std::vector<Case> cases() {
    std::vector<Case> out;
    for (std::size_t n : {64, 128, 256, 512, 1024, 2048, 4096})
        out.push_back({"square/" + std::to_string(n), n, n, n, false});
    out.push_back({"tall_skinny/4096x32x4096", 4096, 32, 4096, false});
    // The linear layers of a 7B model: x[rows, 4096] · w[11008, 4096]ᵀ.
    for (std::size_t rows : {1, 16, 128, 512})
        out.push_back({"linear_7b/" + std::to_string(rows) + "x11008x4096", rows, 11008, 4096, true});
    return out;
}

void register_all() {
    rayo::Device const cpu = rayo::Device::cpu();
    for (Case const& c : cases()) {
        Work const work{0, 0, 2.0 * static_cast<double>(c.m) * static_cast<double>(c.n) * static_cast<double>(c.k)};
        add_benchmark(c.name + "/rayo", [c, cpu, work](benchmark::State& state) {
            auto a = random_tensor({c.m, c.k}, cpu, {-1, 1}, 1);
            auto b = c.b_transposed ? random_tensor({c.n, c.k}, cpu, {-1, 1}, 2)
                                    : random_tensor({c.k, c.n}, cpu, {-1, 1}, 2);
            auto out = rayo::Tensor<float>::zeros({c.m, c.n}, cpu);
            if (c.b_transposed)
                time_op(state, cpu, [&] { rayo::linear_into(a, b, out); });
            else
                time_op(state, cpu, [&] { rayo::matmul_into(a, b, out); });
            report(state, work);
        });
        add_benchmark(c.name + "/openblas", [c, work](benchmark::State& state) {
            auto const a = rayo_bench::random_values(c.m * c.k, {-1, 1}, 1);
            auto const b = rayo_bench::random_values(c.n * c.k, {-1, 1}, 2);
            std::vector<float> out(c.m * c.n);
            auto const m = static_cast<blasint>(c.m), n = static_cast<blasint>(c.n), k = static_cast<blasint>(c.k);
            for (auto _ : state)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, c.b_transposed ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
                            a.data(), k, b.data(), c.b_transposed ? k : n, 0.0f, out.data(), n);
            benchmark::DoNotOptimize(out.data());
            report(state, work);
        });
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (!std::getenv("OPENBLAS_CORETYPE")) {
        auto const archs = rayo::available_cpu_archs();
        bool const avx512 = !archs.empty() && archs.back() >= rayo::CpuArch::avx512;
        bool const amd = rayo::Device::cpu().name().find("AMD") != std::string::npos;
        ::setenv("OPENBLAS_CORETYPE", avx512 ? "SkylakeX" : amd ? "Zen" : "Haswell", 1);
        ::execv("/proc/self/exe", argv);
        std::perror("rayo-bench-openblas: re-executing with OPENBLAS_CORETYPE set failed");
        return 1;
    }
    // Same thread count for both libraries.
    openblas_set_num_threads(static_cast<int>(rayo::num_threads()));
    benchmark::AddCustomContext("rayo_threads", std::to_string(rayo::num_threads()));
    benchmark::AddCustomContext("rayo_cpu_arch", std::string(to_string(rayo::cpu_arch())));
    benchmark::AddCustomContext("openblas", openblas_get_config());
    benchmark::AddCustomContext("openblas_threads", std::to_string(openblas_get_num_threads()));
    benchmark::AddCustomContext("OPENBLAS_CORETYPE", std::getenv("OPENBLAS_CORETYPE"));
    register_all();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
