// A kernel of one's own, written with rayo's PTX builder, run on rayo tensors in the order of
// rayo's ops: y = a·x + y, then a rayo op on the result. On a machine without a CUDA device it
// prints the kernel's PTX and says so.   Usage: rayo-cuda-kernel [cuda:N]
#include <rayo/cuda_kernel.hpp>
#include <rayo/ptx/ptx.hpp>
#include <rayo/rayo.hpp>

#include "scale_add_kernel.hpp"

#include <cstdio>
#include <exception>
#include <vector>

namespace {

rayo::Device cuda_device(int argc, char** argv) {
    if (argc > 1) return rayo::Device::parse(argv[1]);
    for (rayo::Device d : rayo::Device::all())
        if (d.kind() == rayo::DeviceKind::cuda) return d;
    return rayo::Device::cpu();
}

}  // namespace

int main(int argc, char** argv) try {
    rayo::ptx::Kernel const kernel = scale_add_kernel();
    rayo::Device const dev = cuda_device(argc, argv);
    if (dev.kind() != rayo::DeviceKind::cuda) {
        std::printf("no CUDA device here; the kernel rayo would load, for sm_90:\n%s",
                    kernel.emit(rayo::ptx::Target::sm_90).c_str());
        return 0;
    }
    std::uint32_t const n = 1000;
    std::vector<float> host(n);
    for (std::uint32_t i = 0; i < n; ++i) host[i] = static_cast<float>(i);
    auto const x = rayo::FTensor::from(host, {n}, dev);
    auto y = rayo::FTensor::full({n}, 1.0f, dev);
    // Queued after the fill of y and before the softmax: no synchronization in between.
    rayo::launch_cuda_kernel(dev, kernel, {.grid = {(n + 255) / 256, 1, 1}, .block = {256, 1, 1}}, {x, y, 0.5f, n});
    auto const p = rayo::softmax(y, -1);
    std::vector<float> const got = y.to_vector();
    std::printf("on %s: y = 0.5·x + 1 = [%g, %g, ..., %g] (expect [1, 1.5, ..., 500.5]); softmax's last %.4f\n",
                dev.id().c_str(), got[0], got[1], got[n - 1], p.to_vector()[n - 1]);
    bool ok = true;
    for (std::uint32_t i = 0; i < n; ++i) ok = ok && got[i] == 0.5f * static_cast<float>(i) + 1.0f;
    return ok ? 0 : 1;
} catch (std::exception const& e) {
    std::fprintf(stderr, "rayo-cuda-kernel: %s\n", e.what());
    return 1;
}
