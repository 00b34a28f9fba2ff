// The CPU thread pool: coverage of every index, nesting, concurrent callers, exceptions; resizing
// while other threads run ops, and counts the pool or the system refuses.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <pthread.h>

#include "cpu/thread_pool.hpp"
#include "rayo/rayo.hpp"

namespace rayo::cpu {
namespace {

TEST(ThreadPool, EveryIndexExactlyOnce) {
    ThreadPool pool(4);
    for (std::size_t n : {0u, 1u, 3u, 4u, 1000u, 100003u}) {
        std::vector<std::atomic<int>> hits(n);
        pool.parallel_for(n, 7, [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1);
        });
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
    }
}

TEST(ThreadPool, NestedAndConcurrentCallsRunSerially) {
    ThreadPool pool(3);
    std::atomic<long> total{0};
    auto work = [&] {
        for (int rep = 0; rep < 50; ++rep)
            pool.parallel_for(64, 1, [&](std::size_t b, std::size_t e) {
                pool.parallel_for(e - b, 1,
                                  [&](std::size_t bb, std::size_t ee) { total += static_cast<long>(ee - bb); });
            });
    };
    std::thread t1(work), t2(work);
    t1.join();
    t2.join();
    EXPECT_EQ(total.load(), 2 * 50 * 64);
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
    ThreadPool pool(2);
    EXPECT_THROW(pool.parallel_for(100, 1,
                                   [](std::size_t b, std::size_t) {
                                       if (b > 0) throw std::runtime_error("worker failed");
                                   }),
                 std::runtime_error);
    std::atomic<int> n{0};
    pool.parallel_for(10, 1, [&](std::size_t b, std::size_t e) { n += static_cast<int>(e - b); });
    EXPECT_EQ(n.load(), 10);
}

// Runs body on another thread and fails the test, ending the process, when it has not finished in
// time: a deadlock must show as a failure, not as a test that never ends.
template <class Body>
void within(std::chrono::seconds limit, Body body) {
    auto done = std::async(std::launch::async, body);
    if (done.wait_for(limit) != std::future_status::ready) {
        ADD_FAILURE() << "still running after " << limit.count() << " s: deadlocked";
        std::fflush(nullptr);
        std::_Exit(1);
    }
    done.get();
}

// set_num_threads while other host threads run CPU ops: each op keeps the pool it started with,
// and the old pool goes when its last op ends.
TEST(ThreadPool, ResizingWhileOtherThreadsRunOps) {
    std::size_t const saved = num_threads();
    within(std::chrono::seconds(120), [&] {
        std::vector<float> const host(1 << 18, -1.5f);
        auto const x = Tensor<float>::from(host, {host.size()});
        std::atomic<bool> stop{false};
        std::atomic<int> wrong{0}, ops{0};
        auto run_ops = [&] {
            while (!stop.load()) {
                if (sum(relu(x)).item() != 0.0f || sum(abs(x)).item() != 1.5f * static_cast<float>(host.size()))
                    ++wrong;
                ++ops;
            }
        };
        std::thread a(run_ops), b(run_ops);
        for (int i = 0; i < 60; ++i) {
            set_num_threads(static_cast<std::size_t>(1 + i % 5));
            for (int const seen = ops.load(); ops.load() < seen + 2;) std::this_thread::yield();  // ops in between
        }
        stop = true;
        a.join();
        b.join();
        EXPECT_EQ(wrong.load(), 0);
    });
    set_num_threads(saved);
}

TEST(ThreadPool, RefusesCountsOutOfRangeAndKeepsThePool) {
    std::size_t const saved = num_threads();
    for (std::size_t n : {max_threads + 1, std::size_t{100000}}) {
        try {
            set_num_threads(n);
            ADD_FAILURE() << n << " threads accepted";
        } catch (Error const& e) {
            EXPECT_NE(std::string(e.what()).find("takes 1 to " + std::to_string(max_threads)), std::string::npos)
                << e.what();
        }
        EXPECT_EQ(num_threads(), saved);
    }
}

// A pool the system cannot start (here every new thread asks for a 64 TiB stack) is a rayo::Error,
// and the pool before it keeps working.
TEST(ThreadPool, ThreadsTheSystemRefusesAreAnErrorAndThePoolStaysUsable) {
    std::size_t const saved = num_threads();
    pthread_attr_t before{}, huge{};
    ASSERT_EQ(pthread_getattr_default_np(&before), 0);
    ASSERT_EQ(pthread_attr_init(&huge), 0);
    ASSERT_EQ(pthread_attr_setstacksize(&huge, std::size_t{1} << 46), 0);
    ASSERT_EQ(pthread_setattr_default_np(&huge), 0);
    bool refused = false;
    std::string message;
    try {
        set_num_threads(4);
    } catch (Error const& e) {
        refused = true;
        message = e.what();
    }
    ASSERT_EQ(pthread_setattr_default_np(&before), 0);
    pthread_attr_destroy(&huge);
    pthread_attr_destroy(&before);
    ASSERT_TRUE(refused) << "the system started threads with 64 TiB stacks";
    EXPECT_NE(message.find("the system refused thread 2 of a CPU thread pool of 4"), std::string::npos) << message;
    EXPECT_EQ(num_threads(), saved);
    auto const x = Tensor<float>::from(std::vector<float>(100000, 2.0f), {100000});
    EXPECT_EQ(sum(x).item(), 200000.0f);
}

}  // namespace
}  // namespace rayo::cpu
