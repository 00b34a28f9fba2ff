// A program that uses only the CPU never looks for GPUs: no GPU driver is loaded (no llvmpipe
// threads, no driver start-up time) until a device of that kind is asked for. Its own process, so
// that nothing else has touched the registry first.
#include <cstdio>
#include <vector>

#include "core/device_registry.hpp"
#include "rayo/rayo.hpp"

namespace {

int failures = 0;

void expect(bool ok, char const* what) {
    if (!ok) {
        std::fprintf(stderr, "FAILED: %s\n", what);
        ++failures;
    }
}

}  // namespace

int main() {
    auto const& registry = rayo::detail::DeviceRegistry::instance();
    auto const x = rayo::Tensor<float>::from(std::vector<float>{-1.0f, 2.0f, -3.0f}, {3});
    float const s = rayo::sum(rayo::relu(x)).item();
    (void)rayo::Device::parse("cpu");
    expect(s == 2.0f, "relu and sum on the CPU");
    expect(!registry.discovered(rayo::DeviceKind::vulkan),
           "a CPU tensor, an op and parse(cpu) looked for Vulkan devices");
    expect(!registry.discovered(rayo::DeviceKind::cuda), "a CPU tensor, an op and parse(cpu) looked for CUDA devices");

    auto const all = rayo::Device::all();
    expect(registry.discovered(rayo::DeviceKind::vulkan) && registry.discovered(rayo::DeviceKind::cuda),
           "Device::all() looked for every kind");
    expect(!all.empty() && all.front() == rayo::Device::cpu(), "Device::all() lists the CPU first");
    std::printf("%s: %zu devices after Device::all()\n", failures ? "FAILED" : "ok", all.size());
    return failures ? 1 : 0;
}
