// A persistent pool of worker threads for the CPU backend. The calling thread takes part in every
// parallel_for, so a pool of N threads starts N-1 workers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace rayo::cpu {

class ThreadPool {
public:
    // Runs body(begin, end) over [0, n) in chunks of at least `grain` items.
    using RangeFn = std::function<void(std::size_t begin, std::size_t end)>;
    using PartFn = std::function<void(std::size_t part, std::size_t parts)>;

    // Starts threads - 1 workers (1 <= threads <= max_threads). rayo::Error when the system
    // refuses a thread; the workers started by then are stopped again.
    explicit ThreadPool(std::size_t threads);
    ~ThreadPool();
    ThreadPool(ThreadPool const&) = delete;
    ThreadPool& operator=(ThreadPool const&) = delete;

    [[nodiscard]] std::size_t size() const noexcept { return workers_.size() + 1; }

    // Splits [0, n) into at most size() contiguous parts of at least `grain` items each. Calls
    // made while the pool is busy (from a worker, or from another host thread) run serially on
    // the caller, so nesting and concurrent use are safe.
    void parallel_for(std::size_t n, std::size_t grain, RangeFn const& body);

    // Runs body(part, parts) once for each of `parts` <= size() parts, in parallel.
    void run_parts(std::size_t parts, PartFn const& body);

private:
    void worker_loop(std::size_t index);
    void stop_workers() noexcept;
    // Spins briefly (a wake-up through the kernel costs tens of microseconds on some machines,
    // more than a medium-sized op), then sleeps until `done` holds.
    template <class Done>
    void wait(Done done, std::condition_variable& cv);

    std::vector<std::thread> workers_;
    std::mutex busy_;  // held by the one caller that owns the workers for a job

    // A job is published by one store of state_ = generation << 16 | parts (release), so a worker
    // reads a consistent (generation, parts) pair. Only workers with index < parts take part and
    // read job_; the others go back to waiting, and nobody waits for them.
    PartFn const* job_ = nullptr;
    std::atomic<std::uint64_t> state_{0};
    std::atomic<std::size_t> pending_{0};  // participating workers still running
    std::atomic<bool> stop_{false};

    std::mutex sleep_mutex_;
    std::condition_variable wake_;
    std::condition_variable done_;
};

// The most threads a pool takes (set_num_threads, RAYO_NUM_THREADS): more than any machine's
// hardware threads by far, and few enough that asking for them is clearly a mistake past it.
inline constexpr std::size_t max_threads = 1024;

// The process-wide pool, sized by set_num_threads / RAYO_NUM_THREADS (default: hardware threads).
// An op holds on to the pool it started with: set_num_threads may replace the pool at any time,
// and the old one goes when the last op using it ends.
std::shared_ptr<ThreadPool> thread_pool();

}  // namespace rayo::cpu
