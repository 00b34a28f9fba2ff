#include "vulkan/gpu_profile.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "vulkan/vulkan_error.hpp"

namespace rayo::vulkan {

bool GpuProfile::available(LogicalDevice const& device) noexcept {
    PhysicalDevice const& physical = device.physical();
    std::uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical.handle, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(physical.handle, &count, families.data());
    return physical.compute_queue_family < count && families[physical.compute_queue_family].timestampValidBits > 0 &&
           physical.properties.limits.timestampPeriod > 0;
}

bool GpuProfile::requested() noexcept {
    char const* env = std::getenv("RAYO_VULKAN_PROFILE");
    return env && std::string_view(env) == "1";
}

VkQueryPool GpuProfile::make_pool() const {
    VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = queries_per_batch;
    VkQueryPool pool = VK_NULL_HANDLE;
    check(device_.fn().vkCreateQueryPool(device_.handle(), &info, nullptr, &pool), "vkCreateQueryPool");
    return pool;
}

void GpuProfile::begin(VkCommandBuffer commands, VkQueryPool pool) const {
    device_.fn().vkCmdResetQueryPool(commands, pool, 0, queries_per_batch);
    mark(commands, pool, 0);
}

void GpuProfile::mark(VkCommandBuffer commands, VkQueryPool pool, std::uint32_t index) const {
    device_.fn().vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, index);
}

void GpuProfile::add(VkQueryPool pool, std::span<std::string_view const> labels) {
    if (labels.empty()) return;
    auto const n = static_cast<std::uint32_t>(labels.size() + 1);
    std::vector<std::uint64_t> ticks(n);
    check(device_.fn().vkGetQueryPoolResults(device_.handle(), pool, 0, n, n * sizeof(std::uint64_t), ticks.data(),
                                             sizeof(std::uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
    double const period = device_.physical().properties.limits.timestampPeriod;  // ns a tick
    auto const span_ns = [&](std::uint64_t from, std::uint64_t to) {
        return to > from ? double(to - from) * period : 0.0;
    };
    for (std::size_t i = 0; i < labels.size(); ++i) {
        auto it = totals_.find(labels[i]);
        if (it == totals_.end()) it = totals_.emplace(std::string(labels[i]), Total{}).first;
        ++it->second.count;
        it->second.ns += span_ns(ticks[i], ticks[i + 1]);
    }
    if (last_end_ != 0) between_batches_ns_ += span_ns(last_end_, ticks[0]);
    last_end_ = ticks.back();
    ++batches_;
}

std::string GpuProfile::table() const {
    std::vector<std::pair<std::string, Total>> rows(totals_.begin(), totals_.end());
    std::ranges::sort(rows, [](auto const& a, auto const& b) { return a.second.ns > b.second.ns; });
    double busy_ns = 0;
    std::uint64_t commands = 0;
    for (auto const& [label, total] : rows) {
        busy_ns += total.ns;
        commands += total.count;
    }
    std::string out;
    char line[256];
    std::snprintf(line, sizeof line,
                  "GPU time on %s: %.3f ms in %llu commands of %llu batches, and %.3f ms between batches\n",
                  device_.physical().name().c_str(), busy_ns * 1e-6, static_cast<unsigned long long>(commands),
                  static_cast<unsigned long long>(batches_), between_batches_ns_ * 1e-6);
    out += line;
    std::snprintf(line, sizeof line, "  %-36s %9s %11s %10s %7s\n", "command", "count", "total ms", "mean us", "share");
    out += line;
    for (auto const& [label, total] : rows) {
        std::snprintf(line, sizeof line, "  %-36s %9llu %11.3f %10.2f %6.1f%%\n", label.c_str(),
                      static_cast<unsigned long long>(total.count), total.ns * 1e-6,
                      total.ns * 1e-3 / double(total.count), busy_ns > 0 ? 100.0 * total.ns / busy_ns : 0.0);
        out += line;
    }
    return out;
}

}  // namespace rayo::vulkan
