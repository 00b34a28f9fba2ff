// rayo::capture on Vulkan: while the capture's body runs, the ops' commands go into a secondary
// command buffer (CommandStream::begin_recording) instead of the batch; each replay records its
// execution (vkCmdExecuteCommands) into the batch being recorded, after the barriers its buffer
// ranges need, so a replay costs one command of host time. Memory the ops free inside the capture
// (scratch buffers, temporaries) stays with the graph, whose commands use it at every replay; the
// fault record is made before the capture starts, so that every replay writes the same one.
#include <algorithm>
#include <string>
#include <utility>

#include "core/logging.hpp"
#include "rayo/error.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace rayo::vulkan {

class VulkanBackend::Graph final : public detail::NativeGraph {
public:
    Graph(VulkanBackend& backend, RecordedCommands commands, std::vector<std::uintptr_t> buffers,
          std::vector<PendingFree> kept) noexcept
        : backend_(backend), commands_(std::move(commands)), buffers_(std::move(buffers)), kept_(std::move(kept)) {}
    ~Graph() override {
        std::lock_guard lock(backend_.mutex_);
        try {
            backend_.stream_.wait(commands_.last_serial);  // no batch in flight executes it
        } catch (std::exception const& e) {                // a lost device: nothing runs any more
            detail::log(LogLevel::error, std::string("rayo: vulkan: destroying a graph: ") + e.what());
        }
        backend_.stream_.destroy_recording(commands_);
        for (PendingFree const& p : kept_) backend_.free_after(commands_.last_serial, p.allocation, p.staging);
    }
    Graph(Graph const&) = delete;
    Graph& operator=(Graph const&) = delete;

    void replay(std::span<std::uintptr_t const>) override {
        std::lock_guard lock(backend_.mutex_);
        backend_.refuse_while_captured(
            "a graph replay");  // the capturing thread's own replay is refused by Graph::replay
        backend_.reclaim();
        backend_.stream_.execute(commands_);
        std::uint64_t const serial = backend_.stream_.recording_serial();
        for (std::uintptr_t handle : buffers_)
            if (auto it = backend_.buffers_.find(handle); it != backend_.buffers_.end()) it->second.last_use = serial;
        if (backend_.fault_record_) backend_.fault_pending_ = true;
        backend_.stream_.submit_if_large();
    }

private:
    VulkanBackend& backend_;
    RecordedCommands commands_;
    std::vector<std::uintptr_t> buffers_;
    std::vector<PendingFree> kept_;
};

void VulkanBackend::refuse_while_captured(char const* what) const {
    if (capture_ && capture_->thread != std::this_thread::get_id())
        throw Error("vulkan:" + std::to_string(index_) + ": " + what +
                    " from another thread while a capture records the device's commands");
}

bool VulkanBackend::begin_capture() {
    std::lock_guard lock(mutex_);
    if (capture_)
        throw Error("vulkan:" + std::to_string(index_) + ": a capture is already recording on another thread");
    bool const fault_pending = fault_pending_;
    (void)fault_record();  // outside the graph: the same record for every replay
    stream_.begin_recording();
    capture_ =
        Capture{.thread = std::this_thread::get_id(), .buffers = {}, .kept = {}, .fault_pending_before = fault_pending};
    return true;
}

std::unique_ptr<detail::NativeGraph> VulkanBackend::end_capture(bool keep) {
    std::lock_guard lock(mutex_);
    Capture capture = std::move(*capture_);
    capture_.reset();
    fault_pending_ = capture.fault_pending_before;  // the recorded commands have not run
    std::optional<RecordedCommands> commands;
    try {
        commands = stream_.end_recording(keep);
    } catch (...) {
        for (PendingFree const& p : capture.kept) free_after(p.serial, p.allocation, p.staging);
        throw;
    }
    if (!commands) {
        for (PendingFree const& p : capture.kept) free_after(p.serial, p.allocation, p.staging);
        return nullptr;
    }
    std::sort(capture.buffers.begin(), capture.buffers.end());
    capture.buffers.erase(std::unique(capture.buffers.begin(), capture.buffers.end()), capture.buffers.end());
    try {
        return std::make_unique<Graph>(*this, std::move(*commands), std::move(capture.buffers),
                                       std::move(capture.kept));
    } catch (...) {
        stream_.destroy_recording(*commands);
        throw;
    }
}

}  // namespace rayo::vulkan
