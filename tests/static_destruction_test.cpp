// Tensors kept in namespace-scope containers are destroyed after main returns, after the
// drivers' own exit handlers may have run: that must end the process cleanly, on every device.
#include <cstdio>
#include <vector>

#include "rayo/rayo.hpp"

namespace {

std::vector<rayo::Tensor<float>> cache;  // destroyed after main returns
std::vector<rayo::Device> devices;

}  // namespace

int main() {
    devices = rayo::Device::all();
    for (rayo::Device d : devices) {
        auto x = rayo::Tensor<float>::from(std::vector<float>{1.0f, -2.0f, 3.0f}, {3}, d);
        cache.push_back(rayo::relu(x));
        cache.push_back(x);
    }
    static auto const kept = rayo::Tensor<float>::zeros({4}, devices.back());  // a function-local static too
    std::printf("%zu tensors on %zu devices kept past main; sum on %s: %g\n", cache.size(), devices.size(),
                devices.back().id().c_str(), rayo::sum(cache.back()).item() + rayo::sum(kept).item());
    return 0;
}
