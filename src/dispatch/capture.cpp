// rayo::capture and rayo::Graph (rayo/graph.hpp): the ops a body dispatches are recorded with
// their views; a backend that records natively (CUDA: stream capture into a graph) queues their
// work into its recording as well. Replay checks that every tensor is still there, then has the
// backend enqueue its recording, or runs the recorded ops through the backend again.
#include "dispatch/capture.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "rayo/error.hpp"
#include "rayo/graph.hpp"

namespace rayo::detail {

namespace {

thread_local GraphState* current_capture = nullptr;

// Makes `graph` this thread's capture for its lifetime.
class CaptureScope {
public:
    explicit CaptureScope(GraphState& graph) noexcept : mark_(graph.device) { current_capture = &graph; }
    ~CaptureScope() { current_capture = nullptr; }
    CaptureScope(CaptureScope const&) = delete;
    CaptureScope& operator=(CaptureScope const&) = delete;

private:
    CaptureMark mark_;  // what the storage and device layers see
};

std::string op_name(OpDescriptor const& op) { return std::string(to_string(op_of(op))); }

}  // namespace

GraphState* active_capture() noexcept { return current_capture; }

void capture_op(GraphState& graph, Device device, OpDescriptor const& op, Support const& support,
                std::initializer_list<OpArg> inputs, std::initializer_list<OpArg> outputs, OpViews const& views) {
    if (device != graph.device)
        throw Error("capture on " + graph.device.id() + ": " + op_name(op) + " on " + device.id() +
                    ": a capture records the ops of its own device only");
    if (!support.native)
        throw Error("capture on " + graph.device.id() + ": " + op_name(op) + " would run on the CPU there (" +
                    support.reason + "), which a capture cannot record");
    CapturedOp recorded{.op = op,
                        .in = {views.in.begin(), views.in.end()},
                        .out = {views.out.begin(), views.out.end()},
                        .operands = {}};
    for (auto const* list : {&inputs, &outputs})
        for (OpArg const& a : *list) {
            CapturedOp::Operand operand{.storage = {}, .given = a.storage != nullptr};
            if (operand.given) {
                operand.storage = a.storage->weak_from_this();
                if (operand.storage.expired())
                    throw Error("capture on " + graph.device.id() + ": " + op_name(op) +
                                " has an operand that no tensor owns");
            }
            recorded.operands.push_back(std::move(operand));
        }
    for (TensorView const& v : views.out)
        if (std::find(graph.written.begin(), graph.written.end(), v.buffer) == graph.written.end())
            graph.written.push_back(v.buffer);
    if (graph.records_natively) {
        try {
            graph.backend->run(op, views);
        } catch (Unsupported const& e) {  // a limit found while planning: the CPU would take it
            throw Error("capture on " + graph.device.id() + ": " + op_name(op) + " would run on the CPU there (" +
                        e.what() + "), which a capture cannot record");
        }
    }
    graph.ops.push_back(std::move(recorded));
}

}  // namespace rayo::detail

namespace rayo {

Graph::Graph() noexcept = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;
Graph::~Graph() = default;

Device Graph::device() const noexcept { return state_ ? state_->device : Device::cpu(); }
std::size_t Graph::ops() const noexcept { return state_ ? state_->ops.size() : 0; }
bool Graph::native() const noexcept { return state_ && state_->native != nullptr; }

void Graph::replay() {
    if (!state_) throw Error("graph replay: the graph was moved from");
    detail::GraphState& g = *state_;
    detail::refuse_in_capture("replaying a graph");
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
        detail::CapturedOp const& op = g.ops[i];
        for (std::size_t j = 0; j < op.operands.size(); ++j) {
            if (op.operands[j].given && op.operands[j].storage.expired()) {
                bool const input = j < op.in.size();
                throw Error("graph replay on " + g.device.id() + ": op " + std::to_string(i) + " (" +
                            std::string(to_string(detail::op_of(op.op))) + ") " + (input ? "input " : "output ") +
                            std::to_string(input ? j : j - op.in.size()) +
                            " was a tensor that has been destroyed since the capture");
            }
        }
    }
    if (g.native) {
        g.native->replay(g.written);
    } else {
        for (detail::CapturedOp const& op : g.ops) g.backend->run(op.op, {op.in, op.out});
    }
    detail::count_ops(g.ops.size());
}

Graph capture(Device device, std::function<void()> const& body) {
    if (detail::GraphState const* running = detail::active_capture())
        throw Error("capture on " + device.id() + ": a capture inside the capture on " + running->device.id());
    if (!body) throw Error("capture on " + device.id() + ": no body to record");
    auto state = std::make_unique<detail::GraphState>(device);
    state->backend = &detail::backend_of(device);
    state->records_natively = state->backend->begin_capture();
    try {
        detail::CaptureScope const scope(*state);
        body();
    } catch (...) {
        if (state->records_natively) (void)state->backend->end_capture(false);
        throw;
    }
    if (state->records_natively) state->native = state->backend->end_capture(true);
    Graph graph;
    graph.state_ = std::move(state);
    return graph;
}

}  // namespace rayo
