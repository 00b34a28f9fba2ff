#include "vulkan/memory_allocator.hpp"

#include <algorithm>
#include <optional>

#include "rayo/error.hpp"
#include "vulkan/vulkan_error.hpp"

namespace rayo::vulkan {

namespace {

constexpr VkDeviceSize default_block_bytes = VkDeviceSize{64} << 20;
constexpr std::size_t max_idle_shared_blocks = 8;

VkDeviceSize round_up(VkDeviceSize v, VkDeviceSize a) { return (v + a - 1) / a * a; }

std::string mib(VkDeviceSize bytes) {
    return std::to_string(bytes) + " bytes (" + std::to_string(bytes >> 20) + " MiB)";
}

}  // namespace

MemoryAllocator::MemoryAllocator(LogicalDevice const& device, MemoryKind kind, detail::MemoryCounters& device_memory)
    : device_(device) {
    auto const& physical = device.physical();
    bool const staging = kind == MemoryKind::staging;
    label_ = physical.name() + (staging ? " staging memory" : " device memory");
    usage_ = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (!staging) usage_ |= VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;

    // The memory types a buffer of this usage may live in.
    VkBufferCreateInfo probe_info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    probe_info.size = 256;
    probe_info.usage = usage_;
    VkBuffer probe = VK_NULL_HANDLE;
    check(device.fn().vkCreateBuffer(device.handle(), &probe_info, nullptr, &probe), "vkCreateBuffer");
    VkMemoryRequirements requirements;
    device.fn().vkGetBufferMemoryRequirements(device.handle(), probe, &requirements);
    device.fn().vkDestroyBuffer(device.handle(), probe, nullptr);

    VkMemoryPropertyFlags const required =
        staging ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    // Downloads read staging memory on the host: cached is much faster there. Tensors prefer
    // memory the host cannot see (on discrete GPUs the host-visible window is small).
    auto score = [&](VkMemoryPropertyFlags f) {
        if (staging) return (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) ? 1 : 0;
        return (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) ? 0 : 1;
    };
    std::optional<std::uint32_t> chosen;
    auto const& memory = physical.memory;
    for (std::uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
        VkMemoryPropertyFlags const f = memory.memoryTypes[i].propertyFlags;
        if (!(requirements.memoryTypeBits & (1u << i)) || (f & required) != required) continue;
        if (!chosen || score(f) > score(memory.memoryTypes[*chosen].propertyFlags) ||
            (score(f) == score(memory.memoryTypes[*chosen].propertyFlags) &&
             memory.memoryHeaps[memory.memoryTypes[i].heapIndex].size >
                 memory.memoryHeaps[memory.memoryTypes[*chosen].heapIndex].size))
            chosen = i;
    }
    if (!chosen) throw Unsupported(label_ + ": no memory type fits");
    memory_type_ = *chosen;
    host_visible_ = memory.memoryTypes[memory_type_].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
    VkMemoryHeap const& heap = memory.memoryHeaps[memory.memoryTypes[memory_type_].heapIndex];
    heap_bytes_ = heap.size;
    if (heap.flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) counters_ = &device_memory;
    block_bytes_ = std::min(
        {default_block_bytes, std::max<VkDeviceSize>(heap_bytes_ / 8, 1 << 20), physical.max_allocation_bytes});
    alignment_ =
        std::max({alignment_, requirements.alignment, physical.properties.limits.minStorageBufferOffsetAlignment,
                  physical.properties.limits.nonCoherentAtomSize});
}

MemoryAllocator::~MemoryAllocator() {
    for (auto& b : blocks_) destroy_block(b);
}

std::size_t MemoryAllocator::block_count() const noexcept {
    return static_cast<std::size_t>(
        std::count_if(blocks_.begin(), blocks_.end(), [](auto const& b) { return b.memory != VK_NULL_HANDLE; }));
}

MemoryAllocator::Block MemoryAllocator::create_block(VkDeviceSize size, VkDeviceSize requested) {
    auto const& fn = device_.fn();
    VkDevice const dev = device_.handle();
    // The heap's size is the budget; asking the driver for more only gets a later, vaguer failure.
    if (reserved_bytes_ + size > heap_bytes_)
        throw OutOfMemory(label_ + ": cannot allocate " + mib(requested) + ": " + mib(reserved_bytes_) +
                          " of the heap's " + mib(heap_bytes_) + " are already reserved");
    Block block;
    block.size = size;
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = size;
    info.usage = usage_;
    check(fn.vkCreateBuffer(dev, &info, nullptr, &block.buffer), "vkCreateBuffer of " + mib(size));
    VkMemoryRequirements requirements;
    fn.vkGetBufferMemoryRequirements(dev, block.buffer, &requirements);
    VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    allocate.allocationSize = requirements.size;
    allocate.memoryTypeIndex = memory_type_;
    VkResult const r = fn.vkAllocateMemory(dev, &allocate, nullptr, &block.memory);
    if (r != VK_SUCCESS) {
        fn.vkDestroyBuffer(dev, block.buffer, nullptr);
        if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
            throw OutOfMemory(label_ + ": cannot allocate " + mib(requested) + " (a block of " + mib(size) + " with " +
                              mib(reserved_bytes_) + " of the heap's " + mib(heap_bytes_) +
                              " reserved): " + std::string(to_string(r)));
        check(r, "vkAllocateMemory of " + mib(size));
    }
    auto cleanup = [&] {
        fn.vkDestroyBuffer(dev, block.buffer, nullptr);
        fn.vkFreeMemory(dev, block.memory, nullptr);
    };
    if (VkResult b = fn.vkBindBufferMemory(dev, block.buffer, block.memory, 0); b != VK_SUCCESS) {
        cleanup();
        check(b, "vkBindBufferMemory");
    }
    if (host_visible_) {
        void* p = nullptr;
        if (VkResult m = fn.vkMapMemory(dev, block.memory, 0, VK_WHOLE_SIZE, 0, &p); m != VK_SUCCESS) {
            cleanup();
            check(m, "vkMapMemory");
        }
        block.mapped = static_cast<std::byte*>(p);
    }
    block.free_ranges.emplace(0, size);
    block.allocation_bytes = requirements.size;
    reserved_bytes_ += size;
    if (counters_) counters_->reserved.add(block.allocation_bytes);
    return block;
}

void MemoryAllocator::destroy_block(Block& block) noexcept {
    if (block.memory == VK_NULL_HANDLE) return;
    auto const& fn = device_.fn();
    fn.vkDestroyBuffer(device_.handle(), block.buffer, nullptr);
    fn.vkFreeMemory(device_.handle(), block.memory, nullptr);  // unmaps implicitly
    reserved_bytes_ -= block.size;
    if (counters_) counters_->reserved.subtract(block.allocation_bytes);
    block = Block{};
}

bool MemoryAllocator::carve(Block& block, std::uint32_t index, VkDeviceSize bytes, Allocation& out) {
    for (auto it = block.free_ranges.begin(); it != block.free_ranges.end(); ++it) {
        auto const [start, size] = *it;
        VkDeviceSize const aligned = round_up(start, alignment_);
        if (aligned + bytes > start + size) continue;
        block.free_ranges.erase(it);
        if (aligned > start) block.free_ranges.emplace(start, aligned - start);
        if (aligned + bytes < start + size) block.free_ranges.emplace(aligned + bytes, start + size - aligned - bytes);
        block.used += bytes;
        if (counters_) counters_->in_use.add(bytes);
        out = {block.buffer, aligned, bytes, block.mapped ? block.mapped + aligned : nullptr, index};
        return true;
    }
    return false;
}

Allocation MemoryAllocator::allocate(VkDeviceSize bytes) {
    bytes = round_up(std::max<VkDeviceSize>(bytes, 4), 4);
    if (bytes > heap_bytes_)
        throw OutOfMemory(label_ + ": cannot allocate " + mib(bytes) + ": the heap holds " + mib(heap_bytes_));
    if (bytes > device_.physical().max_allocation_bytes)
        throw OutOfMemory(label_ + ": cannot allocate " + mib(bytes) +
                          ": the largest allocation (maxMemoryAllocationSize) is " +
                          mib(device_.physical().max_allocation_bytes));
    if (std::optional<Allocation> reserved = allocate_reserved(bytes)) return *reserved;
    bool const dedicated = bytes > block_bytes_ / 2;
    Allocation out;
    Block block = create_block_or_release_kept(dedicated ? round_up(bytes, alignment_) : block_bytes_, bytes);
    block.dedicated = dedicated;
    auto slot = std::find_if(blocks_.begin(), blocks_.end(), [](auto const& b) { return b.memory == VK_NULL_HANDLE; });
    if (slot == blocks_.end()) slot = blocks_.insert(blocks_.end(), Block{});
    *slot = std::move(block);
    auto const index = static_cast<std::uint32_t>(slot - blocks_.begin());
    carve(*slot, index, bytes, out);
    return out;
}

std::optional<Allocation> MemoryAllocator::allocate_reserved(VkDeviceSize bytes) {
    bytes = round_up(std::max<VkDeviceSize>(bytes, 4), 4);
    Allocation out;
    if (bytes <= block_bytes_ / 2) {
        for (std::uint32_t i = 0; i < blocks_.size(); ++i)
            if (blocks_[i].memory && !blocks_[i].dedicated && carve(blocks_[i], i, bytes, out)) return out;
    } else if (std::uint32_t const i = kept_block_for(bytes); i < blocks_.size()) {
        Block& kept = blocks_[i];
        kept.kept = false;
        kept_bytes_ -= kept.size;
        carve(kept, i, bytes, out);
        return out;
    }
    return std::nullopt;
}

bool MemoryAllocator::would_serve(Allocation const& freed, VkDeviceSize bytes) const noexcept {
    Block const& b = blocks_[freed.block];
    bytes = round_up(std::max<VkDeviceSize>(bytes, 4), 4);
    if (bytes <= block_bytes_ / 2) return !b.dedicated;  // room in a shared block, once it and its neighbours are free
    return b.dedicated && b.size >= bytes && b.size / 2 <= bytes && kept_bytes_ + b.size <= heap_bytes_ / 4;
}

std::uint32_t MemoryAllocator::kept_block_for(VkDeviceSize bytes) const noexcept {
    auto best = static_cast<std::uint32_t>(blocks_.size());
    for (std::uint32_t i = 0; i < blocks_.size(); ++i) {
        Block const& b = blocks_[i];
        if (b.memory && b.kept && b.size >= bytes && b.size / 2 <= bytes &&
            (best == blocks_.size() || b.size < blocks_[best].size))
            best = i;
    }
    return best;
}

bool MemoryAllocator::release_kept_blocks() noexcept {
    bool released = false;
    for (Block& b : blocks_)
        if (b.memory && (b.kept || (!b.dedicated && b.used == 0))) {
            destroy_block(b);
            released = true;
        }
    kept_bytes_ = 0;
    return released;
}

MemoryAllocator::Block MemoryAllocator::create_block_or_release_kept(VkDeviceSize size, VkDeviceSize requested) {
    try {
        return create_block(size, requested);
    } catch (OutOfMemory const&) {
        if (!release_kept_blocks()) throw;
    }
    return create_block(size, requested);
}

void MemoryAllocator::free(Allocation const& a) noexcept {
    Block& block = blocks_[a.block];
    block.used -= a.size;
    if (counters_) counters_->in_use.subtract(a.size);
    if (block.dedicated) {
        if (kept_bytes_ + block.size <= heap_bytes_ / 4) {
            block.kept = true;
            block.free_ranges = {{0, block.size}};
            kept_bytes_ += block.size;
        } else {
            destroy_block(block);
        }
        return;
    }
    // Insert and merge with the neighbours.
    auto [it, inserted] = block.free_ranges.emplace(a.offset, a.size);
    if (auto next = std::next(it); next != block.free_ranges.end() && it->first + it->second == next->first) {
        it->second += next->second;
        block.free_ranges.erase(next);
    }
    if (it != block.free_ranges.begin()) {
        auto prev = std::prev(it);
        if (prev->first + prev->second == it->first) {
            prev->second += it->second;
            block.free_ranges.erase(it);
        }
    }
    // An empty block stays for reuse while at most max_idle_shared_blocks are empty: tensors made
    // and dropped faster than the GPU finishes with them (their frees wait for it) would otherwise
    // make and destroy blocks over and over, milliseconds each; keeping more would pin memory that
    // other devices or processes may need (and an allocation that finds the heap full releases them).
    if (block.used == 0) {
        std::size_t idle = 0;
        for (auto const& b : blocks_) idle += b.memory && !b.dedicated && b.used == 0;
        if (idle > max_idle_shared_blocks) destroy_block(block);
    }
}

}  // namespace rayo::vulkan
