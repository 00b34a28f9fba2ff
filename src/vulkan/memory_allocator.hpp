// A suballocator over large VkDeviceMemory blocks of one memory type: each block carries one
// VkBuffer spanning it, and allocations are ranges of that buffer (first fit, coalesced on free).
// Requests larger than half a block get a block of their own; freed, such a block is kept for the
// next request of about its size (at most 2x), as long as the kept blocks stay under a quarter of
// the heap, and all kept blocks go back to the driver before an allocation would fail.
// vkAllocateMemory of a large block costs far more than using it (the driver clears it), so
// without the cache a loop that makes and drops large tensors measures allocation. Not
// thread-safe: the backend's device mutex guards it.
//
// When its memory type lives in a device-local heap, the allocator counts into the backend's
// MemoryCounters (Device::memory_usage): the bytes of every VkDeviceMemory it holds as reserved,
// the ranges it hands out as in use. Memory in a host heap (staging on a discrete GPU) is not
// device memory and is not counted.
#pragma once

#include <volk.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dispatch/memory_counter.hpp"
#include "vulkan/logical_device.hpp"

namespace rayo::vulkan {

struct Allocation {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize offset = 0;  // of the range within buffer (and within its block)
    VkDeviceSize size = 0;
    std::byte* mapped = nullptr;  // host address of the range, for host-visible memory
    std::uint32_t block = 0;
};

enum class MemoryKind {
    device_local,  // tensors: storage buffers, copy source and destination
    staging,       // host-visible, coherent: uploads and downloads
};

class MemoryAllocator {
public:
    MemoryAllocator(LogicalDevice const& device, MemoryKind kind, detail::MemoryCounters& device_memory);
    ~MemoryAllocator();
    MemoryAllocator(MemoryAllocator const&) = delete;
    MemoryAllocator& operator=(MemoryAllocator const&) = delete;

    // Throws OutOfMemory (with the sizes) when the heap cannot hold `bytes` more.
    [[nodiscard]] Allocation allocate(VkDeviceSize bytes);
    void free(Allocation const& allocation) noexcept;

    // allocate() from the blocks already reserved (a shared block with room, or a kept dedicated
    // block that fits), never asking the driver for a new one: nullopt when none serves.
    [[nodiscard]] std::optional<Allocation> allocate_reserved(VkDeviceSize bytes);
    // Whether freeing `freed` could let allocate_reserved(bytes) succeed.
    [[nodiscard]] bool would_serve(Allocation const& freed, VkDeviceSize bytes) const noexcept;

    [[nodiscard]] std::size_t block_count() const noexcept;
    // The size of a shared block (requests above half of it get a block of their own).
    [[nodiscard]] VkDeviceSize block_bytes() const noexcept { return block_bytes_; }
    [[nodiscard]] VkDeviceSize heap_bytes() const noexcept { return heap_bytes_; }
    // Whether its memory counts as device memory (its heap is device-local).
    [[nodiscard]] bool counts_device_memory() const noexcept { return counters_ != nullptr; }

private:
    struct Block {
        VkDeviceMemory memory = VK_NULL_HANDLE;
        VkBuffer buffer = VK_NULL_HANDLE;
        VkDeviceSize size = 0;
        VkDeviceSize allocation_bytes = 0;  // of the VkDeviceMemory: size, as the driver rounds it
        std::byte* mapped = nullptr;
        std::map<VkDeviceSize, VkDeviceSize> free_ranges;  // offset -> size
        VkDeviceSize used = 0;
        bool dedicated = false;
        bool kept = false;  // a dedicated block with nothing in it, cached for reuse
    };

    Block create_block(VkDeviceSize size, VkDeviceSize requested);
    Block create_block_or_release_kept(VkDeviceSize size, VkDeviceSize requested);
    // The smallest kept block of at least `bytes` and at most twice that, or blocks_.size().
    std::uint32_t kept_block_for(VkDeviceSize bytes) const noexcept;
    // Releases the kept dedicated blocks and the empty shared ones; whether there were any.
    bool release_kept_blocks() noexcept;
    void destroy_block(Block& block) noexcept;
    bool carve(Block& block, std::uint32_t index, VkDeviceSize bytes, Allocation& out);

    LogicalDevice const& device_;
    std::string label_;
    VkBufferUsageFlags usage_ = 0;
    std::uint32_t memory_type_ = 0;
    bool host_visible_ = false;
    VkDeviceSize heap_bytes_ = 0;
    VkDeviceSize block_bytes_ = 0;
    VkDeviceSize alignment_ = 256;
    VkDeviceSize reserved_bytes_ = 0;             // in blocks
    VkDeviceSize kept_bytes_ = 0;                 // in kept dedicated blocks (part of reserved_bytes_)
    std::vector<Block> blocks_;                   // a destroyed block leaves an empty slot (memory == null)
    detail::MemoryCounters* counters_ = nullptr;  // the backend's, for a device-local heap
};

}  // namespace rayo::vulkan
