// Native handles (rayo/native.hpp) on Vulkan (lavapipe in CI): the device's VkInstance, VkDevice
// and VkQueue, a tensor's VkBuffer and offset, and a range of a VkBuffer the program allocated on
// rayo's VkDevice used as a tensor without a copy: copies and ops read and write it in place, and
// the owner's release runs once, after rayo's queued work on it, when the last tensor is gone.
#include "support/vulkan_support.hpp"

#include <rayo/native.hpp>

#include <volk.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace rayo::test {
namespace {

// A VkBuffer the test allocates on rayo's VkDevice, through the handles rayo gives out, as a user
// would: storage-buffer and transfer usage, in device-local memory.
class OwnBuffer {
public:
    OwnBuffer(VulkanHandles const& h, VkDeviceSize bytes) : device_(static_cast<VkDevice>(h.device)) {
        volkLoadDeviceTable(&fn_, device_);
        VkBufferCreateInfo info{};
        info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
        info.size = bytes;
        info.usage =
            VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
        info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
        EXPECT_EQ(fn_.vkCreateBuffer(device_, &info, nullptr, &buffer_), VK_SUCCESS);
        VkMemoryRequirements needs{};
        fn_.vkGetBufferMemoryRequirements(device_, buffer_, &needs);
        VkPhysicalDeviceMemoryProperties properties{};
        vkGetPhysicalDeviceMemoryProperties(static_cast<VkPhysicalDevice>(h.physical_device), &properties);
        std::uint32_t type = 0;
        while (type < properties.memoryTypeCount &&
               !((needs.memoryTypeBits >> type & 1u) &&
                 (properties.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)))
            ++type;
        VkMemoryAllocateInfo allocate{};
        allocate.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
        allocate.allocationSize = needs.size;
        allocate.memoryTypeIndex = type;
        EXPECT_EQ(fn_.vkAllocateMemory(device_, &allocate, nullptr, &memory_), VK_SUCCESS);
        EXPECT_EQ(fn_.vkBindBufferMemory(device_, buffer_, memory_, 0), VK_SUCCESS);
    }
    ~OwnBuffer() { destroy(); }
    OwnBuffer(OwnBuffer const&) = delete;
    OwnBuffer& operator=(OwnBuffer const&) = delete;
    void destroy() {
        if (buffer_) fn_.vkDestroyBuffer(device_, buffer_, nullptr);
        if (memory_) fn_.vkFreeMemory(device_, memory_, nullptr);
        buffer_ = VK_NULL_HANDLE;
        memory_ = VK_NULL_HANDLE;
    }
    [[nodiscard]] std::uint64_t handle() const { return reinterpret_cast<std::uint64_t>(buffer_); }

private:
    VkDevice device_;
    VolkDeviceTable fn_{};
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
};

VkPhysicalDeviceLimits limits_of(VulkanHandles const& h) {
    VkPhysicalDeviceProperties properties{};
    vkGetPhysicalDeviceProperties(static_cast<VkPhysicalDevice>(h.physical_device), &properties);
    return properties.limits;
}

class VulkanNativeHandles : public VulkanTest {};

TEST_F(VulkanNativeHandles, TheDeviceAndATensorsBufferAreTheDriversObjects) {
    VulkanHandles const h = vulkan_handles(device);
    EXPECT_NE(h.instance, nullptr);
    EXPECT_NE(h.physical_device, nullptr);
    EXPECT_NE(h.device, nullptr);
    EXPECT_NE(h.queue, nullptr);
    auto const t = Tensor<float>::from(random_floats(40, fresh_seed()), {10, 4}, device);
    NativeMemory const whole = native_memory(t);
    NativeMemory const rows = native_memory(t.slice(3, 5));
    EXPECT_EQ(whole.kind, DeviceKind::vulkan);
    EXPECT_NE(whole.handle, 0u);
    EXPECT_EQ(whole.bytes, 160u);
    EXPECT_EQ(rows.handle, whole.handle);
    EXPECT_EQ(rows.offset, whole.offset + 3 * 4 * sizeof(float));
    EXPECT_EQ(rows.bytes, 2 * 4 * sizeof(float));
    expect_error([&] { (void)cuda_handles(device); }, "is not a cuda device");
}

TEST_F(VulkanNativeHandles, ARangeOfAnOwnBufferIsATensorOpsReadAndWriteInPlace) {
    VulkanHandles const h = vulkan_handles(device);
    VkPhysicalDeviceLimits const limits = limits_of(h);
    VkDeviceSize const offset = std::max<VkDeviceSize>(limits.minStorageBufferOffsetAlignment, 16);
    std::size_t const n = 1000;
    auto own = std::make_unique<OwnBuffer>(h, offset + n * sizeof(float));
    auto const seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto const values = random_floats(n, seed, -4.0f, 4.0f);
    int released = 0;
    {
        auto tensor = std::optional(
            from_native_memory<float>({DeviceKind::vulkan, own->handle(), offset, n * sizeof(float)}, {n}, device, [&] {
                ++released;
                own->destroy();  // rayo's work on it has finished
            }));
        auto const& t = *tensor;
        NativeMemory const back = native_memory(t);
        EXPECT_EQ(back.handle, own->handle());
        EXPECT_EQ(back.offset, offset);
        copy_into(Tensor<float>::from(values, {n}, device), t);  // a copy into it
        auto const twice = add(t, t);                            // a kernel reading it
        add_into(t, t, t);                                       // and writing it
        std::vector<float> expected(values);
        for (float& v : expected) v *= 2;
        EXPECT_EQ(t.to_vector(), expected);
        EXPECT_EQ(twice.to_vector(), expected);
        EXPECT_EQ(t.slice(990, 1000).to_vector(), std::vector<float>(expected.end() - 10, expected.end()));
        EXPECT_EQ(stats().cpu_fallbacks, 0u);
        auto const queued = mul(t, t);  // work still queued when the tensor goes
        tensor.reset();
        EXPECT_EQ(released, 1);
        EXPECT_EQ(queued.numel(), n);
    }
    EXPECT_EQ(released, 1);
}

TEST_F(VulkanNativeHandles, MisalignedOrOversizedRangesAreRefused) {
    VulkanHandles const h = vulkan_handles(device);
    VkPhysicalDeviceLimits const limits = limits_of(h);
    OwnBuffer own(h, 4096);
    if (limits.minStorageBufferOffsetAlignment > 4)
        expect_error(
            [&] {
                (void)from_native_memory<float>({DeviceKind::vulkan, own.handle(), 4, 64}, {16}, device);
            },
            "minStorageBufferOffsetAlignment");
    expect_error(
        [&] {
            (void)from_native_memory<float>({DeviceKind::vulkan, own.handle(), 0, 64}, {17}, device);
        },
        "needs 68 bytes, the memory holds 64");
    expect_error(
        [&] {
            (void)from_native_memory<float>({DeviceKind::cpu, own.handle(), 0, 64}, {16}, device);
        },
        "the memory is cpu memory");
    // rayo's own memory is reached through its tensor.
    auto const t = Tensor<float>::zeros({16}, device);
    expect_error([&] { (void)from_native_memory<float>(native_memory(t), {16}, device); },
                 "overlaps a rayo tensor's memory");
}

}  // namespace
}  // namespace rayo::test
