#include "dispatch/dispatch.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/logging.hpp"
#include "dispatch/registry.hpp"
#include "rayo/error.hpp"
#include "rayo/stats.hpp"

namespace rayo::detail {

namespace {

struct StatsState {
    std::atomic<std::uint64_t> ops{0};
    std::mutex mutex;
    std::uint64_t fallbacks = 0;
    std::map<std::string, std::uint64_t> by_op;
    std::set<std::string> logged;  // survives reset_stats(): "logged once" means once per process
};

StatsState& stats_state() {
    static StatsState state;
    return state;
}

TensorView view_of(OpArg const& a) noexcept {
    return {a.storage ? a.storage->handle() : 0, a.offset, a.numel, a.dtype};
}

void run_on_cpu(std::string_view op, Device device, std::string const& reason, std::initializer_list<OpArg> inputs,
                std::initializer_list<OpArg> outputs, OpBody const& body) {
    std::string const key = std::string(op) + " on " + device.id();
    {
        auto& s = stats_state();
        std::lock_guard lock(s.mutex);
        ++s.fallbacks;
        ++s.by_op[key];
        if (s.logged.insert(key).second)
            log(LogLevel::warn, "rayo: " + key + " is not supported there (" + reason + "); running it on the CPU");
    }
    // Host copies: inputs downloaded, outputs computed on the CPU and uploaded back.
    std::vector<std::unique_ptr<Storage>> host;
    std::vector<TensorView> in_views, out_views;
    auto stage = [&](OpArg const& a, bool download) {
        std::size_t const bytes = bytes_for(a.dtype, a.numel);
        auto& s = host.emplace_back(std::make_unique<Storage>(Device::cpu(), bytes));
        if (download && bytes) a.storage->download(a.offset, reinterpret_cast<void*>(s->handle()), bytes);
        return TensorView{s->handle(), 0, a.numel, a.dtype};
    };
    for (auto const& a : inputs) in_views.push_back(a.storage ? stage(a, true) : view_of(a));
    for (auto const& a : outputs) out_views.push_back(stage(a, true));  // keeps bytes an op does not write
    body(Registry::instance().cpu(), in_views, out_views);
    std::size_t i = 0;
    for (auto const& a : outputs) {
        std::size_t const bytes = bytes_for(a.dtype, a.numel);
        if (bytes) a.storage->upload(a.offset, reinterpret_cast<void const*>(out_views[i].buffer), bytes);
        ++i;
    }
}

}  // namespace

void dispatch(std::string_view op, Device device, std::initializer_list<OpArg> inputs,
              std::initializer_list<OpArg> outputs, OpBody const& body) {
    stats_state().ops.fetch_add(1, std::memory_order_relaxed);
    Backend& backend = Registry::instance().backend(device);
    std::vector<TensorView> in_views, out_views;
    for (auto const& a : inputs) in_views.push_back(view_of(a));
    for (auto const& a : outputs) out_views.push_back(view_of(a));
    if (device.kind() == DeviceKind::cpu) {
        body(backend, in_views, out_views);
        return;
    }
    try {
        body(backend, in_views, out_views);
    } catch (Unsupported const& e) {
        run_on_cpu(op, device, e.what(), inputs, outputs, body);
    }
}

}  // namespace rayo::detail

namespace rayo {

Stats stats() {
    auto& s = detail::stats_state();
    std::lock_guard lock(s.mutex);
    return Stats{s.ops.load(), s.fallbacks, s.by_op};
}

void reset_stats() {
    auto& s = detail::stats_state();
    std::lock_guard lock(s.mutex);
    s.ops = 0;
    s.fallbacks = 0;
    s.by_op.clear();
}

}  // namespace rayo
