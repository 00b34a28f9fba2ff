#include "cpu/thread_pool.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <system_error>

#include "rayo/error.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace rayo::cpu {

namespace {

thread_local bool inside_pool_job = false;

constexpr auto spin_time = std::chrono::microseconds(200);

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
}

}  // namespace

ThreadPool::ThreadPool(std::size_t threads) {
    if (threads < 1 || threads > max_threads)
        throw Error("rayo: a CPU thread pool of " + std::to_string(threads) + " threads: it takes 1 to " +
                    std::to_string(max_threads));
    workers_.reserve(threads - 1);
    try {
        for (std::size_t i = 0; i + 1 < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i + 1); });
    } catch (std::system_error const& e) {
        std::size_t const started = workers_.size();
        stop_workers();
        throw Error("rayo: the system refused thread " + std::to_string(started + 2) + " of a CPU thread pool of " +
                    std::to_string(threads) + " (" + e.what() + "); rayo keeps the pool it had");
    }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() noexcept {
    {
        std::lock_guard lock(sleep_mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
}

template <class Done>
void ThreadPool::wait(Done done, std::condition_variable& cv) {
    auto const start = std::chrono::steady_clock::now();
    for (unsigned i = 1; !done(); ++i) {
        cpu_relax();
        if (i % 256 == 0 && std::chrono::steady_clock::now() - start > spin_time) {
            std::unique_lock lock(sleep_mutex_);
            cv.wait(lock, done);
            return;
        }
    }
}

void ThreadPool::worker_loop(std::size_t index) {
    std::uint64_t seen = 0;  // generation
    for (;;) {
        wait(
            [&] {
                return stop_.load(std::memory_order_acquire) || (state_.load(std::memory_order_acquire) >> 16) != seen;
            },
            wake_);
        if (stop_.load(std::memory_order_acquire)) return;
        std::uint64_t const state = state_.load(std::memory_order_acquire);
        seen = state >> 16;
        std::size_t const parts = state & 0xffff;
        if (index >= parts) continue;
        inside_pool_job = true;
        (*job_)(index, parts);
        inside_pool_job = false;
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard lock(sleep_mutex_);  // pairs with the caller's check before it sleeps
            done_.notify_one();
        }
    }
}

void ThreadPool::run_parts(std::size_t parts, PartFn const& body) {
    parts = std::min(parts, size());
    if (parts <= 1 || inside_pool_job || !busy_.try_lock()) {
        for (std::size_t p = 0; p < parts; ++p) body(p, parts);
        return;
    }
    std::lock_guard busy(busy_, std::adopt_lock);
    // Exceptions must not escape a worker; the first one is rethrown on the caller.
    std::exception_ptr error;
    std::mutex error_mutex;
    PartFn const guarded = [&](std::size_t p, std::size_t n) {
        try {
            body(p, n);
        } catch (...) {
            std::lock_guard lock(error_mutex);
            if (!error) error = std::current_exception();
        }
    };
    job_ = &guarded;
    pending_.store(parts - 1, std::memory_order_relaxed);
    {
        std::lock_guard lock(sleep_mutex_);  // a worker between its check and its sleep sees this
        std::uint64_t const generation = (state_.load(std::memory_order_relaxed) >> 16) + 1;
        state_.store(generation << 16 | parts, std::memory_order_release);
    }
    wake_.notify_all();
    inside_pool_job = true;
    guarded(0, parts);
    inside_pool_job = false;
    wait([&] { return pending_.load(std::memory_order_acquire) == 0; }, done_);
    job_ = nullptr;
    if (error) std::rethrow_exception(error);
}

void ThreadPool::parallel_for(std::size_t n, std::size_t grain, RangeFn const& body) {
    if (n == 0) return;
    grain = std::max<std::size_t>(grain, 1);
    std::size_t const parts = std::min(size(), (n + grain - 1) / grain);
    run_parts(parts, [&](std::size_t p, std::size_t count) {
        std::size_t const begin = n * p / count;
        std::size_t const end = n * (p + 1) / count;
        if (begin < end) body(begin, end);
    });
}

}  // namespace rayo::cpu
