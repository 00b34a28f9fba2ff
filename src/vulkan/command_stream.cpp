#include "vulkan/command_stream.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "rayo/error.hpp"
#include "vulkan/vulkan_error.hpp"

namespace rayo::vulkan {

namespace {

// Dispatches per batch before it is submitted without waiting for a read: enough to amortise a
// submit, few enough that the GPU starts early and deferred frees come back soon.
constexpr std::size_t submit_threshold = 256;
// After a host wait the GPU is idle: the first batch goes at this many commands and each next one
// at twice as many, up to submit_threshold, so that the GPU starts while the host records the rest
// (a model's decode step records hundreds of commands between two reads).
constexpr std::size_t first_batch_commands = 16;
// Batches in flight before recording waits for the oldest (bounds memory held by staging).
constexpr std::size_t max_in_flight = 4;
// How long a host wait polls a GPU's fence before it blocks (CommandStream::wait).
constexpr std::chrono::microseconds fence_poll_time{200};
constexpr std::uint32_t sets_per_pool = 128;
constexpr std::uint32_t buffers_per_set = 4;

constexpr VkPipelineStageFlags device_stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags device_writes = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags device_accesses =
    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

bool overlap(BufferAccess const& a, BufferAccess const& b) noexcept {
    return a.buffer == b.buffer && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

}  // namespace

CommandStream::CommandStream(LogicalDevice const& device) : device_(device), batch_limit_(first_batch_commands) {
    if (GpuProfile::requested() && GpuProfile::available(device_)) set_profiling(true);
}

CommandStream::~CommandStream() {
    try {
        wait(next_serial_);
    } catch (...) {  // a lost device: nothing left to wait for
    }
    device_.fn().vkDeviceWaitIdle(device_.handle());
    if (recording_) destroy(*recording_);
    for (auto& b : in_flight_) destroy(b);
    for (auto& b : idle_) destroy(b);
    if (profile_ && GpuProfile::requested()) std::fputs(("rayo: " + profile_->table()).c_str(), stderr);
}

void CommandStream::destroy(Batch& b) noexcept {
    auto const& fn = device_.fn();
    for (auto p : b.descriptor_pools) fn.vkDestroyDescriptorPool(device_.handle(), p, nullptr);
    if (b.queries) fn.vkDestroyQueryPool(device_.handle(), b.queries, nullptr);
    fn.vkDestroyFence(device_.handle(), b.fence, nullptr);
    fn.vkDestroyCommandPool(device_.handle(), b.pool, nullptr);  // frees its command buffer
}

VkCommandBuffer CommandStream::command_buffer(VkCommandBufferLevel level, VkCommandPoolCreateFlags flags,
                                              VkCommandPool& pool) {
    auto const& fn = device_.fn();
    VkDevice const dev = device_.handle();
    VkCommandPoolCreateInfo info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    info.flags = flags;
    info.queueFamilyIndex = device_.physical().compute_queue_family;
    check(fn.vkCreateCommandPool(dev, &info, nullptr, &pool), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = pool;
    alloc.level = level;
    alloc.commandBufferCount = 1;
    VkCommandBuffer commands = VK_NULL_HANDLE;
    if (VkResult r = fn.vkAllocateCommandBuffers(dev, &alloc, &commands); r != VK_SUCCESS) {
        fn.vkDestroyCommandPool(dev, pool, nullptr);
        check(r, "vkAllocateCommandBuffers");
    }
    return commands;
}

CommandStream::Batch& CommandStream::recording() {
    if (recording_) return *recording_;
    auto const& fn = device_.fn();
    VkDevice const dev = device_.handle();
    while (in_flight_.size() >= max_in_flight) {
        check(fn.vkWaitForFences(dev, 1, &in_flight_.front().fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
        (void)completed_serial();
    }
    Batch b;
    if (!idle_.empty()) {
        b = std::move(idle_.back());
        idle_.pop_back();
    } else {
        b.commands = command_buffer(VK_COMMAND_BUFFER_LEVEL_PRIMARY, VK_COMMAND_POOL_CREATE_TRANSIENT_BIT, b.pool);
        VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        if (VkResult r = fn.vkCreateFence(dev, &fence, nullptr, &b.fence); r != VK_SUCCESS) {
            fn.vkDestroyCommandPool(dev, b.pool, nullptr);
            check(r, "vkCreateFence");
        }
    }
    b.serial = next_serial_;
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (VkResult r = fn.vkBeginCommandBuffer(b.commands, &begin); r != VK_SUCCESS) {
        idle_.push_back(std::move(b));
        check(r, "vkBeginCommandBuffer");
    }
    // Submissions on one queue are ordered but not memory-synchronised: make every earlier
    // batch's writes visible to this one.
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = device_writes;
    barrier.dstAccessMask = device_accesses;
    fn.vkCmdPipelineBarrier(b.commands, device_stages, device_stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
    b.profiled = profiling_;
    if (b.profiled) {
        if (!b.queries) b.queries = profile_->make_pool();
        profile_->begin(b.commands, b.queries);
    }
    recording_ = std::move(b);
    return *recording_;
}

namespace {

// The buffer barriers after which commands may touch what `written` lists (one for each range).
void barrier_after(VolkDeviceTable const& fn, VkCommandBuffer commands, std::vector<BufferAccess> const& written) {
    std::vector<VkBufferMemoryBarrier> barriers;
    for (auto const& w : written) {
        VkBufferMemoryBarrier m{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
        m.srcAccessMask = device_writes;
        m.dstAccessMask = device_accesses;
        m.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
        m.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
        m.buffer = w.buffer;
        m.offset = w.offset;
        m.size = w.size;
        barriers.push_back(m);
    }
    fn.vkCmdPipelineBarrier(commands, device_stages, device_stages, 0, 0, nullptr,
                            static_cast<std::uint32_t>(barriers.size()), barriers.data(), 0, nullptr);
}

// Whether a command touching `accesses` must wait for the commands since the last barrier.
bool hazard(std::span<BufferAccess const> accesses, std::vector<BufferAccess> const& written,
            std::vector<BufferAccess> const& read) {
    bool found = false;
    for (auto const& a : accesses) {
        for (auto const& w : written) found |= overlap(a, w);  // RAW, WAW
        if (a.write)
            for (auto const& r : read) found |= overlap(a, r);  // WAR
    }
    return found;
}

}  // namespace

VkCommandBuffer CommandStream::record(std::span<BufferAccess const> accesses, std::string_view label) {
    if (commands_) {
        RecordedCommands& c = *commands_;
        if (hazard(accesses, c.written, c.read)) {
            barrier_after(device_.fn(), c.commands, c.written);
            c.written.clear();
            c.read.clear();
        }
        for (auto const& a : accesses) {
            (a.write ? c.written : c.read).push_back(a);
            c.accesses.push_back(a);
        }
        return c.commands;
    }
    if (recording_ && recording_->profiled && recording_->labels.size() + 1 >= GpuProfile::queries_per_batch) submit();
    Batch& b = recording();
    // The end of the command before this one (its barrier would otherwise count as that command's).
    if (b.profiled && !b.labels.empty())
        profile_->mark(b.commands, b.queries, static_cast<std::uint32_t>(b.labels.size()));
    if (hazard(accesses, b.written, b.read)) {
        // Buffer barriers for what was written since the last barrier; a pure write-after-read
        // needs only the execution dependency the barrier itself gives.
        barrier_after(device_.fn(), b.commands, b.written);
        b.written.clear();
        b.read.clear();
    }
    for (auto const& a : accesses) (a.write ? b.written : b.read).push_back(a);
    ++b.recorded;
    if (b.profiled) b.labels.push_back(label);
    return b.commands;
}

VkDescriptorSet CommandStream::descriptor_set(VkDescriptorSetLayout layout) {
    if (commands_) return allocate_set(commands_->descriptor_pools, commands_->pools_used, layout);
    Batch& b = recording();
    return allocate_set(b.descriptor_pools, b.pools_used, layout);
}

VkDescriptorSet CommandStream::allocate_set(std::vector<VkDescriptorPool>& pools, std::size_t& pools_used,
                                            VkDescriptorSetLayout layout) {
    auto const& fn = device_.fn();
    VkDevice const dev = device_.handle();
    for (;;) {
        if (pools_used == pools.size()) {
            VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, sets_per_pool * buffers_per_set};
            VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
            info.maxSets = sets_per_pool;
            info.poolSizeCount = 1;
            info.pPoolSizes = &size;
            VkDescriptorPool pool = VK_NULL_HANDLE;
            check(fn.vkCreateDescriptorPool(dev, &info, nullptr, &pool), "vkCreateDescriptorPool");
            pools.push_back(pool);
        }
        VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        alloc.descriptorPool = pools[pools_used];
        alloc.descriptorSetCount = 1;
        alloc.pSetLayouts = &layout;
        VkDescriptorSet set = VK_NULL_HANDLE;
        VkResult const r = fn.vkAllocateDescriptorSets(dev, &alloc, &set);
        if (r == VK_SUCCESS) return set;
        if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) check(r, "vkAllocateDescriptorSets");
        ++pools_used;  // this pool is full: the next one
    }
}

void CommandStream::begin_recording() {
    auto const& fn = device_.fn();
    VkDevice const dev = device_.handle();
    RecordedCommands c;
    c.commands = command_buffer(VK_COMMAND_BUFFER_LEVEL_SECONDARY, 0, c.pool);
    VkCommandBufferInheritanceInfo inheritance{VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO};
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    // Executed by several batches, which may be in flight together.
    begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
    begin.pInheritanceInfo = &inheritance;
    if (VkResult const r = fn.vkBeginCommandBuffer(c.commands, &begin); r != VK_SUCCESS) {
        fn.vkDestroyCommandPool(dev, c.pool, nullptr);
        check(r, "vkBeginCommandBuffer");
    }
    commands_ = std::move(c);
}

std::optional<RecordedCommands> CommandStream::end_recording(bool keep) {
    if (!commands_) return std::nullopt;
    RecordedCommands c = std::move(*commands_);
    commands_.reset();
    VkResult const r = device_.fn().vkEndCommandBuffer(c.commands);
    if (!keep || r != VK_SUCCESS) {
        destroy_recording(c);
        if (keep) check(r, "vkEndCommandBuffer");
        return std::nullopt;
    }
    c.written.clear();
    c.read.clear();
    return c;
}

void CommandStream::execute(RecordedCommands& recorded) {
    VkCommandBuffer const primary = record(recorded.accesses, "captured commands");
    device_.fn().vkCmdExecuteCommands(primary, 1, &recorded.commands);
    recorded.last_serial = next_serial_;
}

void CommandStream::destroy_recording(RecordedCommands& c) noexcept {
    auto const& fn = device_.fn();
    for (auto p : c.descriptor_pools) fn.vkDestroyDescriptorPool(device_.handle(), p, nullptr);
    fn.vkDestroyCommandPool(device_.handle(), c.pool, nullptr);  // frees its command buffer
    c.descriptor_pools.clear();
    c.pool = VK_NULL_HANDLE;
}

void CommandStream::set_profiling(bool on) {
    if (on && !profile_) {
        if (!GpuProfile::available(device_))
            throw Unsupported("vulkan: " + device_.physical().name() + " writes no timestamps on its compute queue");
        profile_.emplace(device_);
    }
    profiling_ = on;
}

std::optional<std::string> CommandStream::profile_table() {
    if (!profile_) return std::nullopt;
    wait(next_serial_);  // everything recorded so far, run and added
    return profile_->table();
}

void CommandStream::submit_if_large() {
    if (recording_ && recording_->recorded >= batch_limit_) submit();
}

void CommandStream::submit() {
    if (!recording_) return;
    Batch& b = *recording_;
    auto const& fn = device_.fn();
    if (b.profiled && !b.labels.empty())
        profile_->mark(b.commands, b.queries, static_cast<std::uint32_t>(b.labels.size()));
    // Make the batch's writes visible to host reads of mapped staging memory after the fence.
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = device_writes;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    fn.vkCmdPipelineBarrier(b.commands, device_stages, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr, 0,
                            nullptr);
    check(fn.vkEndCommandBuffer(b.commands), "vkEndCommandBuffer");
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &b.commands;
    check(fn.vkQueueSubmit(device_.queue(), 1, &submit, b.fence), "vkQueueSubmit");
    ++submits_;
    ++next_serial_;
    batch_limit_ = std::min(2 * batch_limit_, submit_threshold);
    in_flight_.push_back(std::move(b));
    recording_.reset();
}

void CommandStream::retire(Batch& b) {
    auto const& fn = device_.fn();
    VkDevice const dev = device_.handle();
    if (b.profiled) profile_->add(b.queries, b.labels);
    b.labels.clear();
    check(fn.vkResetFences(dev, 1, &b.fence), "vkResetFences");
    check(fn.vkResetCommandPool(dev, b.pool, 0), "vkResetCommandPool");
    for (std::size_t i = 0; i < b.descriptor_pools.size(); ++i)
        check(fn.vkResetDescriptorPool(dev, b.descriptor_pools[i], 0), "vkResetDescriptorPool");
    b.pools_used = 0;
    b.recorded = 0;
    b.written.clear();
    b.read.clear();
}

std::uint64_t CommandStream::completed_serial() {
    auto const& fn = device_.fn();
    while (!in_flight_.empty()) {
        Batch& b = in_flight_.front();
        VkResult const r = fn.vkGetFenceStatus(device_.handle(), b.fence);
        if (r == VK_NOT_READY) break;
        check(r, "vkGetFenceStatus");
        completed_ = b.serial;
        retire(b);
        idle_.push_back(std::move(b));
        in_flight_.pop_front();
    }
    return completed_;
}

void CommandStream::wait(std::uint64_t serial) {
    if (serial >= next_serial_) submit();
    auto const& fn = device_.fn();
    // A fence wait may sleep in the driver, and waking takes longer than a short batch runs: a
    // GPU's fence is polled first (docs/backends/vulkan.md). Not on a CPU implementation, whose own
    // threads would lose the core to the poll.
    if (!device_.physical().is_software()) {
        auto const until = std::chrono::steady_clock::now() + fence_poll_time;
        while (completed_serial() < serial && !in_flight_.empty() && std::chrono::steady_clock::now() < until) {
        }
    }
    while (completed_serial() < serial && !in_flight_.empty())
        check(fn.vkWaitForFences(device_.handle(), 1, &in_flight_.front().fence, VK_TRUE, UINT64_MAX),
              "vkWaitForFences");
    if (in_flight_.empty()) batch_limit_ = first_batch_commands;
}

}  // namespace rayo::vulkan
