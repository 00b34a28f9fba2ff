// Records a device's commands into one command buffer per batch and submits the batch at a host
// read, a synchronize(), or when it grows past a size threshold (small right after the GPU went
// idle, growing while it is busy). Inserts a pipeline barrier
// before a command whose buffer ranges depend on an earlier command of the batch (read after
// write, write after write, write after read). Batches carry increasing serials; a serial is
// complete once its fence has signalled, which is what deferred frees wait for.
// Not thread-safe: the backend's device mutex guards it.
#pragma once

#include <volk.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vulkan/gpu_profile.hpp"
#include "vulkan/logical_device.hpp"

namespace rayo::vulkan {

struct BufferAccess {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize offset = 0;
    VkDeviceSize size = 0;
    bool write = false;
};

// Commands recorded once into a secondary command buffer (a capture, rayo/graph.hpp) and executed
// again by CommandStream::execute as one command of the batch being recorded. Owned by the caller,
// released through CommandStream::destroy_recording once no batch that executed it is in flight.
struct RecordedCommands {
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer commands = VK_NULL_HANDLE;
    std::vector<VkDescriptorPool> descriptor_pools;
    std::size_t pools_used = 0;
    std::vector<BufferAccess> written, read;  // since the last barrier
    std::vector<BufferAccess> accesses;       // every range its commands touch
    std::uint64_t last_serial = 0;            // the newest batch that executed it
};

class CommandStream {
public:
    explicit CommandStream(LogicalDevice const& device);
    ~CommandStream();  // waits for the GPU
    CommandStream(CommandStream const&) = delete;
    CommandStream& operator=(CommandStream const&) = delete;

    // The command buffer to record one command into that touches `accesses`, after whatever
    // barrier those need. `label` names the command in a profile (a string that outlives the
    // stream: a shader's name, or a literal).
    [[nodiscard]] VkCommandBuffer record(std::span<BufferAccess const> accesses, std::string_view label);
    // A descriptor set for the command being recorded; freed with its batch.
    [[nodiscard]] VkDescriptorSet descriptor_set(VkDescriptorSetLayout layout);
    // Submits the batch being recorded when it has grown past the threshold.
    void submit_if_large();
    // Submits the batch being recorded, if any, so that the GPU starts on it.
    void flush() { submit(); }

    // From begin_recording to end_recording, record() and descriptor_set() put commands into a
    // RecordedCommands instead of the batch; end_recording(false) discards them.
    void begin_recording();
    [[nodiscard]] std::optional<RecordedCommands> end_recording(bool keep);
    [[nodiscard]] bool recording_commands() const noexcept { return commands_.has_value(); }
    // Records the execution of `recorded` into the batch, after whatever barrier its ranges need.
    void execute(RecordedCommands& recorded);
    void destroy_recording(RecordedCommands& recorded) noexcept;

    // The serial of the batch being recorded (what its commands complete with).
    [[nodiscard]] std::uint64_t recording_serial() const noexcept { return next_serial_; }
    // The newest serial known complete; polls the fences of submitted batches.
    [[nodiscard]] std::uint64_t completed_serial();
    // Submits what is recorded (when `serial` needs it) and waits until `serial` has completed.
    void wait(std::uint64_t serial);
    [[nodiscard]] std::size_t submits() const noexcept { return submits_; }

    // GPU time by command (gpu_profile.hpp) for the batches begun from now on; false stops adding
    // to it. Throws rayo::Unsupported when the device writes no timestamps.
    void set_profiling(bool on);
    // The profile's table so far; nullopt when profiling never ran.
    [[nodiscard]] std::optional<std::string> profile_table();

private:
    struct Batch {
        VkCommandPool pool = VK_NULL_HANDLE;
        VkCommandBuffer commands = VK_NULL_HANDLE;
        VkFence fence = VK_NULL_HANDLE;
        std::vector<VkDescriptorPool> descriptor_pools;
        std::size_t pools_used = 0;
        std::uint64_t serial = 0;
        std::size_t recorded = 0;
        // Ranges touched since the last barrier.
        std::vector<BufferAccess> written, read;
        // When profiled: the timestamps, and the commands recorded (their labels).
        VkQueryPool queries = VK_NULL_HANDLE;
        bool profiled = false;
        std::vector<std::string_view> labels;
    };

    Batch& recording();
    // A new pool (`pool`, its owner the caller) and one command buffer of `level` from it.
    VkCommandBuffer command_buffer(VkCommandBufferLevel level, VkCommandPoolCreateFlags flags, VkCommandPool& pool);
    VkDescriptorSet allocate_set(std::vector<VkDescriptorPool>& pools, std::size_t& pools_used,
                                 VkDescriptorSetLayout layout);
    void submit();
    void retire(Batch& batch);
    void destroy(Batch& batch) noexcept;

    LogicalDevice const& device_;
    std::optional<Batch> recording_;
    std::deque<Batch> in_flight_;
    std::vector<Batch> idle_;
    std::uint64_t next_serial_ = 1;
    std::uint64_t completed_ = 0;
    std::size_t submits_ = 0;
    std::size_t batch_limit_;  // commands at which submit_if_large submits (command_stream.cpp)
    std::optional<GpuProfile> profile_;
    bool profiling_ = false;
    std::optional<RecordedCommands> commands_;  // between begin_recording and end_recording
};

}  // namespace rayo::vulkan
