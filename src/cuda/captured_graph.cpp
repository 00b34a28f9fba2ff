// rayo::capture on CUDA: the device's stream is captured (relaxed mode) into a CUDA graph while the
// capture's body runs; the graph is instantiated once and launched on the stream by each replay.
// Temporaries the ops allocate and free inside the capture become the graph's own allocation
// nodes, so each replay has them afresh. The fault record is allocated before the capture starts:
// kernels write to it at every replay, and the next host read looks.
#include <string>
#include <utility>

#include "core/logging.hpp"
#include "cuda/cuda_backend.hpp"
#include "rayo/error.hpp"

namespace rayo::cuda {

// An instantiated graph; destroys both the graph and its executable form.
class CudaBackend::Graph final : public detail::NativeGraph {
public:
    Graph(CudaBackend& backend, CUgraph graph, CUgraphExec exec) noexcept
        : backend_(backend), graph_(graph), exec_(exec) {}
    ~Graph() override {
        std::lock_guard lock(backend_.mutex_);
        try {
            ScopedCurrent const current(backend_.context_);
            Driver const& d = backend_.context_.driver();
            (void)d.cuGraphExecDestroy(exec_);
            (void)d.cuGraphDestroy(graph_);
        } catch (std::exception const& e) {
            detail::log(LogLevel::error, "rayo: " + backend_.label() + ": destroying a graph: " + e.what());
        }
    }
    Graph(Graph const&) = delete;
    Graph& operator=(Graph const&) = delete;

    void replay(std::span<std::uintptr_t const> written) override { backend_.launch_graph(exec_, written); }

private:
    CudaBackend& backend_;
    CUgraph graph_;
    CUgraphExec exec_;
};

void CudaBackend::refuse_while_captured(char const* what) const {
    if (capture_thread_ && *capture_thread_ != std::this_thread::get_id())
        throw Error(label() + ": " + what + " from another thread while a capture records the device's stream");
}

bool CudaBackend::begin_capture() {
    Driver const& d = context_.driver();
    if (!d.cuStreamBeginCapture || !d.cuStreamEndCapture || !d.cuGraphInstantiateWithFlags || !d.cuGraphLaunch ||
        !d.cuGraphExecDestroy || !d.cuGraphDestroy)
        return false;
    std::lock_guard lock(mutex_);
    if (capture_thread_)
        throw Error(label() + ": a capture is already recording the device's stream on another thread");
    ScopedCurrent const current(context_);
    pending_before_capture_ = fault_pending_;  // end_capture puts it back: the kernels recorded do not run
    (void)fault_record();                      // outside the graph: its address stays valid for every replay
    check(d.cuStreamBeginCapture(stream_.handle(), CUstreamCaptureMode::relaxed), label() + ": cuStreamBeginCapture");
    capture_thread_ = std::this_thread::get_id();
    return true;
}

std::unique_ptr<detail::NativeGraph> CudaBackend::end_capture(bool keep) {
    std::lock_guard lock(mutex_);
    ScopedCurrent const current(context_);
    Driver const& d = context_.driver();
    CUgraph graph = nullptr;
    CUresult const ended = d.cuStreamEndCapture(stream_.handle(), &graph);
    capture_thread_.reset();
    for (auto& [pointer, buffer] : buffers_) buffer.written_in_capture = false;
    // Frees of tensors released meanwhile, queued now on the stream as it runs again.
    for (CUdeviceptr pointer : released_in_capture_) {
        try {
            memory_.free(pointer);
        } catch (std::exception const& e) {
            detail::log(LogLevel::error, "rayo: " + label() + ": release after a capture: " + e.what());
        }
    }
    released_in_capture_.clear();
    fault_pending_ = pending_before_capture_;
    if (!keep || ended != CUresult::success) {
        if (graph) (void)d.cuGraphDestroy(graph);
        if (keep) throw_error(ended, label() + ": cuStreamEndCapture");
        return nullptr;
    }
    CUgraphExec exec = nullptr;
    if (CUresult const r = d.cuGraphInstantiateWithFlags(&exec, graph, 0); r != CUresult::success) {
        (void)d.cuGraphDestroy(graph);
        throw_error(r, label() + ": cuGraphInstantiateWithFlags");
    }
    try {
        return std::make_unique<Graph>(*this, graph, exec);
    } catch (...) {
        (void)d.cuGraphExecDestroy(exec);
        (void)d.cuGraphDestroy(graph);
        throw;
    }
}

void CudaBackend::launch_graph(CUgraphExec exec, std::span<std::uintptr_t const> written) {
    std::lock_guard lock(mutex_);
    refuse_while_captured("a graph replay");  // the capturing thread's own replay is refused by Graph::replay
    ScopedCurrent const current(context_);
    for (std::uintptr_t handle : written) mark_written(handle);
    KernelProfile* const profile = profiling_ ? profile_.get() : nullptr;
    CUevent const start = profile ? profile->begin() : nullptr;
    check(context_.driver().cuGraphLaunch(exec, stream_.handle()), label() + ": cuGraphLaunch");
    if (profile) profile->end("graph_replay", start);
    if (fault_record_) fault_pending_ = true;
}

}  // namespace rayo::cuda
