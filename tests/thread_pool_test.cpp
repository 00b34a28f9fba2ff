// The CPU thread pool: coverage of every index, nesting, concurrent callers, exceptions.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cpu/thread_pool.hpp"

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
                pool.parallel_for(e - b, 1, [&](std::size_t bb, std::size_t ee) { total += static_cast<long>(ee - bb); });
            });
    };
    std::thread t1(work), t2(work);
    t1.join();
    t2.join();
    EXPECT_EQ(total.load(), 2 * 50 * 64);
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
    ThreadPool pool(2);
    EXPECT_THROW(pool.parallel_for(100, 1, [](std::size_t b, std::size_t) {
        if (b > 0) throw std::runtime_error("worker failed");
    }), std::runtime_error);
    std::atomic<int> n{0};
    pool.parallel_for(10, 1, [&](std::size_t b, std::size_t e) { n += static_cast<int>(e - b); });
    EXPECT_EQ(n.load(), 10);
}

}  // namespace
}  // namespace rayo::cpu
