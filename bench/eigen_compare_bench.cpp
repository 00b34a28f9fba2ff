// rayo against Eigen 3.4 on the same inputs and sizes, both writing into preallocated outputs.
// Eigen runs on one thread (no OpenMP here); rayo runs on the CPU device with 1 and with 2 threads,
// so the single-thread rows compare kernels and the 2-thread rows show what the pool adds.
// Names: <op>/<size>/eigen and <op>/<size>/rayo/threads:<n>.
#include "bench_support.hpp"

#include <Eigen/Core>

#include <string_view>

namespace rayo_bench {
namespace {

using rayo::FTensor;
using In = FTensor const&;
using Vector = Eigen::ArrayXf;
// Row-major so each softmax row is contiguous, as it is in rayo.
using Matrix = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr std::int64_t compare_sizes[] = {262144, 16777216};
constexpr Rows softmax_shapes[] = {{16, 16384}, {1024, 16384}};
constexpr std::size_t rayo_thread_counts[] = {1, 2};

Vector eigen_vector(std::int64_t n) {
    std::vector<float> const values = random_values(static_cast<std::size_t>(n));
    return Eigen::Map<Vector const>(values.data(), n);
}

Matrix eigen_matrix(Rows s) {
    std::vector<float> const values = random_values(static_cast<std::size_t>(s.rows * s.cols));
    return Eigen::Map<Matrix const>(values.data(), s.rows, s.cols);
}

void eigen_softmax(Matrix const& x, Matrix& out) {
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        auto row = out.row(r);
        row = (x.row(r) - x.row(r).maxCoeff()).exp();  // max subtracted: exp cannot overflow
        row *= 1.0f / row.sum();
    }
}

// Ops that map an array to one of the same size.
struct UnaryCase {
    std::string_view name;
    void (*eigen)(Vector const& x, Vector& out);
    void (*rayo)(In x, In out);
};

constexpr UnaryCase unary_cases[] = {
    {"tanh", [](Vector const& x, Vector& out) { out = x.tanh(); }, [](In x, In out) { rayo::tanh_into(x, out); }},
    {"exp", [](Vector const& x, Vector& out) { out = x.exp(); }, [](In x, In out) { rayo::exp_into(x, out); }},
    {"sigmoid", [](Vector const& x, Vector& out) { out = x.logistic(); },
     [](In x, In out) { rayo::sigmoid_into(x, out); }},
    {"relu", [](Vector const& x, Vector& out) { out = x.max(0.0f); }, [](In x, In out) { rayo::relu_into(x, out); }},
};

// The Eigen side of every comparison: run `op` over the preallocated output, which is then
// published to the optimiser so the work cannot be dropped.
template <class Op, class Result>
void time_eigen(benchmark::State& state, Result& result, Op&& op, double elements) {
    for (auto _ : state) {
        op();
        benchmark::DoNotOptimize(result);
        benchmark::ClobberMemory();
    }
    report(state, {.elements = elements});
}

void time_rayo(benchmark::State& state, std::size_t threads, FTensor const& x, FTensor const& out, void (*op)(In, In)) {
    rayo::set_num_threads(threads);
    time_op(state, x.device(), [&] { op(x, out); });
    report(state, {.elements = static_cast<double>(x.numel())});
}

// Registers <name>/eigen and <name>/rayo/threads:N for each thread count.
template <class EigenRun, class RayoRun>
void add_comparison(std::string const& name, EigenRun eigen_run, RayoRun rayo_run) {
    add_benchmark(name + "/eigen", eigen_run);
    for (std::size_t threads : rayo_thread_counts)
        add_benchmark(name + "/rayo/threads:" + std::to_string(threads),
                      [rayo_run, threads](benchmark::State& state) { rayo_run(state, threads); });
}

void register_comparisons() {
    rayo::Device const cpu = rayo::Device::cpu();
    for (UnaryCase const& c : unary_cases)
        for (std::int64_t n : compare_sizes)
            add_comparison(
                std::string(c.name) + "/" + std::to_string(n),
                [&c, n](benchmark::State& state) {
                    Vector const x = eigen_vector(n);
                    Vector out = Vector::Zero(n);
                    time_eigen(
                        state, out, [&] { c.eigen(x, out); }, static_cast<double>(n));
                },
                [&c, n, cpu](benchmark::State& state, std::size_t threads) {
                    time_rayo(state, threads, random_tensor(rayo::Shape{n}, cpu), output_tensor(rayo::Shape{n}, cpu),
                              c.rayo);
                });

    for (std::int64_t n : compare_sizes)
        add_comparison(
            "sum/" + std::to_string(n),
            [n](benchmark::State& state) {
                Vector const x = eigen_vector(n);
                float total = 0;
                time_eigen(
                    state, total, [&] { total = x.sum(); }, static_cast<double>(n));
            },
            [n, cpu](benchmark::State& state, std::size_t threads) {
                time_rayo(state, threads, random_tensor(rayo::Shape{n}, cpu), output_tensor(rayo::Shape{}, cpu),
                          [](In x, In out) { rayo::sum_into(x, out); });
            });

    for (Rows s : softmax_shapes)
        add_comparison(
            "softmax/" + shape_name(s),
            [s](benchmark::State& state) {
                Matrix const x = eigen_matrix(s);
                Matrix out = Matrix::Zero(s.rows, s.cols);
                time_eigen(
                    state, out, [&] { eigen_softmax(x, out); }, static_cast<double>(x.size()));
            },
            [s, cpu](benchmark::State& state, std::size_t threads) {
                rayo::Shape const shape{s.rows, s.cols};
                time_rayo(state, threads, random_tensor(shape, cpu), output_tensor(shape, cpu),
                          [](In x, In out) { rayo::softmax_into(x, -1, out); });
            });
}

}  // namespace
}  // namespace rayo_bench

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    rayo_bench::add_context(rayo::Device::cpu());
    benchmark::AddCustomContext("eigen_version", std::to_string(EIGEN_WORLD_VERSION) + "." +
                                                     std::to_string(EIGEN_MAJOR_VERSION) + "." +
                                                     std::to_string(EIGEN_MINOR_VERSION));
    benchmark::AddCustomContext("eigen_simd", Eigen::SimdInstructionSetsInUse());
    rayo_bench::register_comparisons();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
