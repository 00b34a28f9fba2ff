// GPU time by command, from timestamps written between the commands of a batch: what a profile of
// a workload on a Vulkan device shows (RAYO_VULKAN_PROFILE=1 prints its table to stderr when the
// device is destroyed, at exit; docs/backends/vulkan.md). A command's time runs from the end of the
// command before it to its own end, so it holds the launch and the pipeline barrier it waited at;
// the time from one batch's end to the next batch's start, when the GPU waits for the host to
// submit, is counted apart as "between batches". The timestamps order the commands they separate,
// so commands that would overlap run one after another while profiling.
// Not thread-safe: the command stream that owns it is guarded by the device mutex.
#pragma once

#include <volk.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "vulkan/logical_device.hpp"

namespace rayo::vulkan {

class GpuProfile {
public:
    // Timestamps one batch may hold; a batch that would need more is submitted first.
    static constexpr std::uint32_t queries_per_batch = 1024;

    explicit GpuProfile(LogicalDevice const& device) : device_(device) {}
    // Whether the device's compute queue writes timestamps.
    [[nodiscard]] static bool available(LogicalDevice const& device) noexcept;
    // Whether RAYO_VULKAN_PROFILE=1.
    [[nodiscard]] static bool requested() noexcept;

    // A batch's query pool (made once per batch, destroyed with it).
    [[nodiscard]] VkQueryPool make_pool() const;
    // Records the reset of `pool` and the batch's first timestamp.
    void begin(VkCommandBuffer commands, VkQueryPool pool) const;
    // Records timestamp `index` (1, 2, ...): the end of the batch's command `index - 1`.
    void mark(VkCommandBuffer commands, VkQueryPool pool, std::uint32_t index) const;
    // Adds a completed batch whose commands were `labels` (timestamps 0 .. labels.size()).
    void add(VkQueryPool pool, std::span<std::string_view const> labels);

    // The table so far: one row per label, most time first, and the time between batches.
    [[nodiscard]] std::string table() const;

private:
    struct Total {
        std::uint64_t count = 0;
        double ns = 0;
    };
    LogicalDevice const& device_;
    std::map<std::string, Total, std::less<>> totals_;
    std::uint64_t batches_ = 0;
    double between_batches_ns_ = 0;
    std::uint64_t last_end_ = 0;  // the previous batch's last timestamp (ticks); 0: none yet
};

}  // namespace rayo::vulkan
