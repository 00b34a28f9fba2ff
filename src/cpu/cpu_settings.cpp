// The CPU backend's settings: the thread pool (RAYO_NUM_THREADS) and the instruction set of its
// kernels (RAYO_CPU_ARCH), behind rayo::set_num_threads / rayo::set_cpu_arch.
#include "cpu/cpu_settings.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "core/environment.hpp"
#include "cpu/cpu_features.hpp"
#include "cpu/kernel_table.hpp"
#include "cpu/thread_pool.hpp"
#include "rayo/error.hpp"

namespace rayo {

namespace cpu {

std::size_t parse_num_threads(std::string_view text) {
    std::size_t n = 0;
    auto const [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc{} || end != text.data() + text.size() || n == 0 || n > cpu::max_threads)
        detail::refuse_setting("RAYO_NUM_THREADS", text,
                               "a thread count from 1 to " + std::to_string(cpu::max_threads));
    return n;
}

CpuArch parse_cpu_arch(std::string_view text) {
    for (auto a : {CpuArch::sse4_2, CpuArch::avx2, CpuArch::avx512, CpuArch::avx512_vnni})
        if (text == to_string(a)) return a;
    detail::refuse_setting("RAYO_CPU_ARCH", text, "one of sse4.2, avx2, avx512, avx512-vnni");
}

}  // namespace cpu

namespace {

std::size_t default_threads() {
    if (auto const env = detail::environment("RAYO_NUM_THREADS")) return cpu::parse_num_threads(*env);
    return std::max(1u, std::thread::hardware_concurrency());
}

struct PoolHolder {
    std::mutex mutex;
    std::shared_ptr<cpu::ThreadPool> pool;
};
// Never destroyed: tensors and ops may outlive static destruction's order.
PoolHolder& pool_holder() {
    static PoolHolder* holder = new PoolHolder;
    return *holder;
}

constexpr CpuArch all_archs[] = {CpuArch::sse4_2, CpuArch::avx2, CpuArch::avx512, CpuArch::avx512_vnni};

bool arch_built(CpuArch arch) {
    switch (arch) {
        case CpuArch::sse4_2: return RAYO_HAS_CPU_SSE4_2;
        case CpuArch::avx2: return RAYO_HAS_CPU_AVX2;
        case CpuArch::avx512:
        case CpuArch::avx512_vnni: return RAYO_HAS_CPU_AVX512;
    }
    return false;
}

bool arch_runs(CpuArch arch) {
    auto const& f = cpu::cpu_features();
    switch (arch) {
        case CpuArch::sse4_2: return f.sse4_2;
        case CpuArch::avx2: return f.avx2_fma;
        case CpuArch::avx512: return f.avx512;
        case CpuArch::avx512_vnni: return f.avx512_vnni;
    }
    return false;
}

std::string arch_list() {
    std::string s;
    for (auto a : available_cpu_archs()) s += (s.empty() ? "" : ", ") + std::string(to_string(a));
    return s;
}

CpuArch initial_arch() {
    auto const archs = available_cpu_archs();
    if (archs.empty())
        throw Unsupported("this CPU runs none of the instruction sets rayo was built for (SSE4.2 at least)");
    if (auto const env = detail::environment("RAYO_CPU_ARCH")) {
        CpuArch const want = cpu::parse_cpu_arch(*env);
        if (std::find(archs.begin(), archs.end(), want) == archs.end())
            throw Unsupported("RAYO_CPU_ARCH=" + std::string(to_string(want)) +
                              " is not available on this machine; available: " + arch_list());
        return want;
    }
    return archs.back();
}

std::atomic<int>& arch_state() {
    static std::atomic<int> state{-1};
    return state;
}

}  // namespace

void set_num_threads(std::size_t threads) {
    // The new pool starts before it replaces the old one, outside the lock: ops running now keep
    // the pool they hold, and a pool the system cannot start leaves the old one in place.
    auto pool =
        std::make_shared<cpu::ThreadPool>(threads ? threads : std::max(1u, std::thread::hardware_concurrency()));
    auto& h = pool_holder();
    std::shared_ptr<cpu::ThreadPool> old;
    {
        std::lock_guard lock(h.mutex);
        old = std::exchange(h.pool, std::move(pool));
    }
}

std::size_t num_threads() { return cpu::thread_pool()->size(); }

std::string_view to_string(CpuArch arch) noexcept {
    switch (arch) {
        case CpuArch::sse4_2: return "sse4.2";
        case CpuArch::avx2: return "avx2";
        case CpuArch::avx512: return "avx512";
        case CpuArch::avx512_vnni: return "avx512-vnni";
    }
    return "?";
}

std::vector<CpuArch> available_cpu_archs() {
    std::vector<CpuArch> out;
    for (auto a : all_archs)
        if (arch_built(a) && arch_runs(a)) out.push_back(a);
    return out;
}

CpuArch cpu_arch() {
    int v = arch_state().load(std::memory_order_acquire);
    if (v < 0) {
        v = static_cast<int>(initial_arch());
        int expected = -1;
        if (!arch_state().compare_exchange_strong(expected, v)) v = expected;
    }
    return static_cast<CpuArch>(v);
}

void set_cpu_arch(CpuArch arch) {
    if (!arch_built(arch) || !arch_runs(arch))
        throw Unsupported("CPU arch " + std::string(to_string(arch)) +
                          " is not available on this machine; available: " + arch_list());
    arch_state().store(static_cast<int>(arch), std::memory_order_release);
}

namespace cpu {

std::shared_ptr<ThreadPool> thread_pool() {
    auto& h = pool_holder();
    std::lock_guard lock(h.mutex);
    if (!h.pool) h.pool = std::make_shared<ThreadPool>(default_threads());
    return h.pool;
}

KernelTable const& kernels() {
    switch (cpu_arch()) {
#if RAYO_HAS_CPU_AVX512
        case CpuArch::avx512: return avx512::kernel_table();
        case CpuArch::avx512_vnni: return avx512::vnni_kernel_table();
#endif
#if RAYO_HAS_CPU_AVX2
        case CpuArch::avx2: return avx2::kernel_table();
#endif
        default: break;
    }
#if RAYO_HAS_CPU_SSE4_2
    return sse4_2::kernel_table();
#else
    throw Unsupported("no CPU kernels were built for this machine");
#endif
}

}  // namespace cpu

}  // namespace rayo
