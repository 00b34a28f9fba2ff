// Native handles (rayo/native.hpp): a buffer the program owns used as a rayo tensor without a
// copy (an op writes the result into it), and the driver objects behind a device and a tensor,
// for work of one's own on them. Usage: rayo-native-memory [DEVICE]   (default: the best device)
#include <rayo/native.hpp>
#include <rayo/rayo.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

namespace {

// Host memory the program owns, scaled in place by a rayo op: no copy in or out.
bool scale_own_buffer() {
    std::vector<float> pixels{0, 51, 102, 153, 204, 255};
    bool released = false;
    {
        rayo::NativeMemory const memory{rayo::DeviceKind::cpu, reinterpret_cast<std::uintptr_t>(pixels.data()), 0,
                                        pixels.size() * sizeof(float)};
        auto image = rayo::from_native_memory<float>(memory, {2, 3}, rayo::Device::cpu(), [&] { released = true; });
        rayo::mul_into(image, 1.0f / 255, image);
    }  // the last tensor over it is gone: rayo calls the release callback
    std::printf("own buffer scaled in place: [%g, %g, %g, %g, %g, %g] (expect [0, 0.2, 0.4, 0.6, 0.8, 1]), %s\n",
                pixels[0], pixels[1], pixels[2], pixels[3], pixels[4], pixels[5],
                released ? "released" : "NOT released");
    return released && pixels[0] == 0.0f && pixels[5] == 1.0f;
}

// What a device's driver objects and a tensor's memory are, for code outside rayo.
void show_handles(rayo::Device dev) {
    auto const t = rayo::FTensor::zeros({256, 64}, dev);
    rayo::NativeMemory const rows = rayo::native_memory(t.slice(16, 32));
    std::printf("on %s (%s):\n", dev.id().c_str(), dev.name().c_str());
    if (dev.kind() == rayo::DeviceKind::cuda) {
        rayo::CudaHandles const h = rayo::cuda_handles(dev);
        std::printf("  CUdevice %d, CUcontext %p, CUstream %p (rayo's ops are queued there in order)\n", h.device,
                    h.context, h.stream);
        std::printf("  rows 16-31 of a [256, 64] tensor: CUdeviceptr 0x%llx, %llu bytes\n",
                    static_cast<unsigned long long>(rows.handle), static_cast<unsigned long long>(rows.bytes));
    } else if (dev.kind() == rayo::DeviceKind::vulkan) {
        rayo::VulkanHandles const h = rayo::vulkan_handles(dev);
        std::printf("  VkInstance %p, VkDevice %p, VkQueue %p (family %u)\n", h.instance, h.device, h.queue,
                    h.queue_family_index);
        std::printf("  rows 16-31 of a [256, 64] tensor: VkBuffer 0x%llx at offset %llu, %llu bytes\n",
                    static_cast<unsigned long long>(rows.handle), static_cast<unsigned long long>(rows.offset),
                    static_cast<unsigned long long>(rows.bytes));
    } else {
        std::printf("  rows 16-31 of a [256, 64] tensor: host address 0x%llx, %llu bytes\n",
                    static_cast<unsigned long long>(rows.handle), static_cast<unsigned long long>(rows.bytes));
    }
    dev.synchronize();  // rayo's work on the tensor (its zeros) is done before the program ends
}

}  // namespace

int main(int argc, char** argv) {
    try {
        bool const ok = scale_own_buffer();
        show_handles(argc > 1 ? rayo::Device::parse(argv[1]) : rayo::Device::best());
        return ok ? 0 : 1;
    } catch (std::exception const& e) {
        std::fprintf(stderr, "rayo-native-memory: %s\n", e.what());
        return 1;
    }
}
