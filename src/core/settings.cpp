// Process-wide knobs and their environment variables.
#include "rayo/settings.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "core/environment.hpp"
#include "core/logging.hpp"
#include "cpu/cpu_features.hpp"
#include "cpu/kernel_table.hpp"
#include "cpu/thread_pool.hpp"
#include "rayo/error.hpp"

namespace rayo {

namespace {

std::size_t default_threads() {
    if (auto const env = detail::environment("RAYO_NUM_THREADS")) return detail::parse_num_threads(*env);
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
        CpuArch const want = detail::parse_cpu_arch(*env);
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

KQuantActivations initial_kquant_activations() {
    auto const env = detail::environment("RAYO_KQUANT_ACTIVATIONS");
    return env ? detail::parse_kquant_activations(*env) : KQuantActivations::q8_k_residual;
}

std::atomic<KQuantActivations>& kquant_activations_state() {
    static std::atomic<KQuantActivations> mode{initial_kquant_activations()};
    return mode;
}

LogLevel initial_log_level() {
    auto const env = detail::environment("RAYO_LOG");
    return env ? detail::parse_log_level(*env) : LogLevel::warn;
}

std::atomic<LogLevel>& log_state() {
    static std::atomic<LogLevel> level{initial_log_level()};
    return level;
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

std::string_view to_string(KQuantActivations mode) noexcept {
    return mode == KQuantActivations::q8_k ? "q8_k" : "q8_k_residual";
}
void set_kquant_activations(KQuantActivations mode) { kquant_activations_state().store(mode); }
KQuantActivations kquant_activations() { return kquant_activations_state().load(); }

void set_log_level(LogLevel level) { log_state().store(level); }
LogLevel log_level() { return log_state().load(); }

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
