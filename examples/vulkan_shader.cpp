// A compute shader of one's own (examples/scale_add.comp, SPIR-V from glslc) dispatched on rayo
// tensors in the order of rayo's ops: y = a·x + y, then a rayo op on the result.
// Usage: rayo-vulkan-shader [SHADER.spv [vulkan:N]]   (default: the scale_add.spv built beside it)
#include <rayo/rayo.hpp>
#include <rayo/vulkan_shader.hpp>

#include <cstdio>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

std::vector<std::uint32_t> read_spirv(char const* path) {
    std::ifstream file(path, std::ios::binary | std::ios::ate);
    if (!file) throw std::runtime_error(std::string("cannot open ") + path);
    std::vector<std::uint32_t> words(static_cast<std::size_t>(file.tellg()) / 4);
    file.seekg(0);
    file.read(reinterpret_cast<char*>(words.data()), static_cast<std::streamsize>(words.size() * 4));
    return words;
}

rayo::Device vulkan_device(int argc, char** argv) {
    if (argc > 2) return rayo::Device::parse(argv[2]);
    for (rayo::Device d : rayo::Device::all())  // lavapipe too, which best() passes over
        if (d.kind() == rayo::DeviceKind::vulkan) return d;
    throw std::runtime_error("no Vulkan device on this machine (install mesa-vulkan-drivers for lavapipe)");
}

}  // namespace

int main(int argc, char** argv) try {
    std::vector<std::uint32_t> const spirv = read_spirv(argc > 1 ? argv[1] : RAYO_EXAMPLE_SCALE_ADD_SPV);
    rayo::Device const dev = vulkan_device(argc, argv);
    std::uint32_t const n = 1000;
    std::vector<float> host(n);
    for (std::uint32_t i = 0; i < n; ++i) host[i] = static_cast<float>(i);
    auto const x = rayo::FTensor::from(host, {n}, dev);
    auto y = rayo::FTensor::full({n}, 1.0f, dev);
    // Recorded after the fill of y and before the softmax: no synchronization in between.
    rayo::dispatch_vulkan_shader(dev, spirv, {(n + 63) / 64, 1, 1}, {x, y, 0.5f, n});
    auto const p = rayo::softmax(y, -1);
    std::vector<float> const got = y.to_vector();
    std::printf("on %s: y = 0.5·x + 1 = [%g, %g, ..., %g] (expect [1, 1.5, ..., 500.5]); softmax's last %.4f\n",
                dev.id().c_str(), got[0], got[1], got[n - 1], p.to_vector()[n - 1]);
    bool ok = true;
    for (std::uint32_t i = 0; i < n; ++i) ok = ok && got[i] == 0.5f * static_cast<float>(i) + 1.0f;
    return ok ? 0 : 1;
} catch (std::exception const& e) {
    std::fprintf(stderr, "rayo-vulkan-shader: %s\n", e.what());
    return 1;
}
