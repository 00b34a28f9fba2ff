#include "dispatch/dispatch.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/logging.hpp"
#include "dispatch/capture.hpp"
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

// The most operands of one op (attention: q, k, v, mask, position; one output).
constexpr std::size_t max_inputs = 5;
constexpr std::size_t max_outputs = 2;

// The views of one op's operands, on the stack: the dispatch of a small op allocates nothing.
class ViewList {
public:
    ViewList(std::initializer_list<OpArg> inputs, std::initializer_list<OpArg> outputs) {
        if (inputs.size() > max_inputs || outputs.size() > max_outputs)
            throw Error("rayo: an op with more operands than the dispatcher takes");
        std::transform(inputs.begin(), inputs.end(), in_.begin(), [](OpArg const& a) { return a.view; });
        std::transform(outputs.begin(), outputs.end(), out_.begin(), [](OpArg const& a) { return a.view; });
        views_ = {{in_.data(), inputs.size()}, {out_.data(), outputs.size()}};
    }
    [[nodiscard]] OpViews const& views() const noexcept { return views_; }

private:
    std::array<TensorView, max_inputs> in_;
    std::array<TensorView, max_outputs> out_;
    OpViews views_;
};

void run_on_cpu(OpDescriptor const& op, Device device, std::string const& reason, std::initializer_list<OpArg> inputs,
                std::initializer_list<OpArg> outputs) {
    std::string const key = std::string(to_string(op_of(op))) + " on " + device.id();
    {
        auto& s = stats_state();
        std::lock_guard lock(s.mutex);
        ++s.fallbacks;
        ++s.by_op[key];
        if (s.logged.insert(key).second)
            log(LogLevel::warn, "rayo: " + key + " is not supported there (" + reason + "); running it on the CPU");
    }
    Backend& cpu = cpu_backend();
    // Host copies of every operand's bytes (outputs too: an op may leave some of them as they are),
    // seen through the same shape and strides; the outputs are uploaded back afterwards.
    std::vector<std::unique_ptr<Storage>> host;
    auto stage = [&](OpArg const& a) {
        if (!a.storage) return a.view;
        std::size_t const bytes = a.view.span_bytes();
        auto& s = host.emplace_back(std::make_unique<Storage>(Device::cpu(), bytes));
        if (bytes) a.storage->download(a.view.offset, cpu.host_address(s->handle()), bytes);
        TensorView v = a.view;
        v.buffer = s->handle();
        v.offset = 0;
        return v;
    };
    std::vector<TensorView> in_views, out_views;
    for (auto const& a : inputs) in_views.push_back(stage(a));
    for (auto const& a : outputs) out_views.push_back(stage(a));
    OpViews const views{in_views, out_views};
    if (Support const s = cpu.supports(op, views); !s.native)
        throw Unsupported(std::string(to_string(op_of(op))) + " on " + device.id() + ": " + reason +
                          "; nor on the cpu: " + s.reason);
    cpu.run(op, views);
    std::size_t i = 0;
    for (auto const& a : outputs) {
        std::size_t const bytes = a.view.span_bytes();
        if (bytes) a.storage->upload(a.view.offset, cpu.host_address(out_views[i].buffer), bytes);
        ++i;
    }
}

}  // namespace

TensorView view_of(Storage const& storage, std::size_t offset, DType dtype,
                   std::span<std::int64_t const> dims) noexcept {
    if (dims.size() <= max_view_rank) return contiguous_view(storage.handle(), offset, dtype, dims);
    std::array<std::int64_t, max_view_rank> merged{};
    std::size_t const lead = dims.size() - max_view_rank + 1;
    merged[0] = 1;
    for (std::size_t i = 0; i < lead; ++i) merged[0] *= dims[i];
    std::copy(dims.begin() + static_cast<std::ptrdiff_t>(lead), dims.end(), merged.begin() + 1);
    return contiguous_view(storage.handle(), offset, dtype, merged);
}

void dispatch(Device device, OpDescriptor const& op, std::initializer_list<OpArg> inputs,
              std::initializer_list<OpArg> outputs) {
    if (!well_formed(op)) throw Error("rayo: " + std::string(to_string(op_of(op))) + " dispatched as another family");
    Backend& backend = backend_of(device);
    ViewList const list(inputs, outputs);
    Support support = backend.supports(op, list.views());
    if (GraphState* graph = active_capture()) {  // recorded, counted when replayed
        capture_op(*graph, device, op, support, inputs, outputs, list.views());
        return;
    }
    stats_state().ops.fetch_add(1, std::memory_order_relaxed);
    if (device.kind() == DeviceKind::cpu) {
        if (!support.native) throw Unsupported(std::string(to_string(op_of(op))) + " on cpu: " + support.reason);
        backend.run(op, list.views());
        return;
    }
    if (support.native) {
        try {
            backend.run(op, list.views());
            return;
        } catch (Unsupported const& e) {  // a limit the backend finds only while planning the launch
            support = Support::no(e.what());
        }
    }
    run_on_cpu(op, device, support.reason, inputs, outputs);
}

void count_ops(std::size_t count) noexcept { stats_state().ops.fetch_add(count, std::memory_order_relaxed); }

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
