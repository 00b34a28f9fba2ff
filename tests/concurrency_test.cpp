// Ops from many host threads on the CPU device: threads sharing read-only inputs get the results a
// single thread gets, and process-wide settings may change while ops run (docs/ops.md, "Threads").
// These tests, the thread pool's and the GPU devices' FourThreadsShareOneDevice run under
// ThreadSanitizer in CI (the tsan preset).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "support/test_support.hpp"

namespace rayo::test {
namespace {

// A few ops of each family over inputs every thread shares and none writes.
class Workload {
public:
    explicit Workload(std::uint32_t seed)
        : x_(Tensor<float>::from(random_floats(rows * k, seed), {rows, k})),
          b_(Tensor<float>::from(random_floats(k * 40, seed + 1), {k, 40})),
          q_(quantize<q4_k>(Tensor<float>::from(random_floats(96 * k, seed + 2, -1.0f, 1.0f), {96, k}))) {}

    // The results, in order: matmul, linear (q4_k), softmax, layer_norm, rms_norm, sum.
    [[nodiscard]] std::vector<std::vector<float>> run() const {
        return {matmul(x_, b_).to_vector(), linear(x_, q_).to_vector(), softmax(x_).to_vector(),
                layer_norm(x_).to_vector(), rms_norm(x_).to_vector(),   {sum(x_).item()}};
    }

    // linear's tolerance covers RAYO_KQUANT_ACTIVATIONS=q8_k (~0.5% relative error); the others
    // differ only by summation order between thread counts and instruction sets.
    [[nodiscard]] static std::string mismatch(std::vector<std::vector<float>> const& got,
                                              std::vector<std::vector<float>> const& want) {
        static constexpr char const* names[] = {"matmul", "linear", "softmax", "layer_norm", "rms_norm", "sum"};
        for (std::size_t r = 0; r < want.size(); ++r) {
            if (got[r].size() != want[r].size()) return std::string(names[r]) + ": wrong size";
            double scale = 0;
            for (float v : want[r]) scale = std::max(scale, std::abs(static_cast<double>(v)));
            double const tol = (r == 1 ? 2e-2 : 1e-4) * std::max(scale, 1.0);
            for (std::size_t i = 0; i < want[r].size(); ++i)
                if (!(std::abs(static_cast<double>(got[r][i]) - want[r][i]) <= tol))
                    return std::string(names[r]) + "[" + std::to_string(i) + "] = " + std::to_string(got[r][i]) +
                           ", single-threaded " + std::to_string(want[r][i]);
        }
        return {};
    }

private:
    static constexpr std::size_t rows = 33, k = 512;
    Tensor<float> x_, b_;
    Tensor<q4_k> q_;
};

// Runs body(t) on `threads` host threads and returns the first mismatch any of them reported.
template <class Body>
std::string on_threads(int threads, Body body) {
    std::vector<std::string> errors(static_cast<std::size_t>(threads));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { errors[static_cast<std::size_t>(t)] = body(t); });
    for (auto& th : pool) th.join();
    for (auto const& e : errors)
        if (!e.empty()) return e;
    return {};
}

TEST(Concurrency, FourThreadsShareTheCpu) {
    auto const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    Workload const work(seed);
    reset_stats();
    auto const want = work.run();
    std::uint64_t const ops_per_run = stats().ops;
    constexpr int iterations = 10;
    reset_stats();
    EXPECT_EQ(on_threads(4,
                         [&](int) {
                             for (int i = 0; i < iterations; ++i)
                                 if (auto e = Workload::mismatch(work.run(), want); !e.empty()) return e;
                             return std::string{};
                         }),
              "");
    EXPECT_EQ(stats().ops, 4 * iterations * ops_per_run);
    EXPECT_EQ(stats().cpu_fallbacks, 0u);
}

// Every setting documented as "any time" changes while two threads run ops: the ops give correct
// results, and every setting reads back what was set last.
TEST(Concurrency, SettingsChangeWhileOpsRun) {
    auto const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    ArchScope const arch(cpu_arch());
    std::size_t const threads = num_threads();
    KQuantActivations const activations = kquant_activations();
    LogLevel const level = log_level();

    Workload const work(seed);
    auto const want = work.run();
    std::atomic<bool> stop{false};
    std::atomic<int> runs{0};
    std::string const error = on_threads(3, [&](int t) {
        if (t == 0) {  // the thread that changes settings, until the others have run enough
            auto const available = archs();
            for (std::size_t i = 0; runs.load() < 40 && !stop.load(); ++i) {
                set_cpu_arch(available[i % available.size()]);
                set_kquant_activations(i % 2 ? KQuantActivations::q8_k : KQuantActivations::q8_k_residual);
                set_log_level(i % 2 ? LogLevel::error : LogLevel::warn);
                if (i % 8 == 0) set_num_threads(1 + i / 8 % 3);
                if (i % 4 == 0) reset_stats();
                (void)stats();
                std::this_thread::yield();
            }
            stop = true;
            return std::string{};
        }
        while (!stop.load()) {
            if (auto e = Workload::mismatch(work.run(), want); !e.empty()) {
                stop = true;
                return e;
            }
            ++runs;
        }
        return std::string{};
    });
    EXPECT_EQ(error, "");
    set_num_threads(threads);
    set_kquant_activations(activations);
    set_log_level(level);
    EXPECT_EQ(num_threads(), threads);
    EXPECT_EQ(kquant_activations(), activations);
    EXPECT_EQ(log_level(), level);
}

}  // namespace
}  // namespace rayo::test
