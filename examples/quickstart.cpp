// The quickstart from the README: a matmul, a softmax and a sum on the best device.
#include <rayo/rayo.hpp>

#include <cstdio>
#include <iostream>
#include <random>
#include <vector>

int main() {
    rayo::Device dev = rayo::Device::best();  // RAYO_DEVICE=cpu|vulkan|cuda|vulkan:1 overrides
    for (rayo::Device d : rayo::Device::all()) std::cout << d.name() << ' ' << to_string(d.kind()) << '\n';

    std::size_t const m = 64, k = 128, n = 32;
    std::mt19937 rng(42);
    std::normal_distribution<float> normal;
    std::vector<float> host_a(m * k), host_b(k * n);
    for (auto& v : host_a) v = normal(rng);
    for (auto& v : host_b) v = normal(rng);

    auto a = rayo::Tensor<float>::from(host_a, {m, k}, dev);  // upload (copies)
    auto b = rayo::Tensor<float>::from(host_b, {k, n}, dev);
    auto c = rayo::matmul(a, b);      // runs on a's device, result stays there
    auto p = rayo::softmax(c, -1);    // each row of p sums to 1
    std::vector<float> host = p.to_vector();  // waits for the device, downloads
    float total = rayo::sum(p).item();
    dev.synchronize();

    std::printf("device %s: softmax(a·b) is %zux%zu, p[0][0] = %.6f, sum of all rows = %.3f (expect %zu)\n",
                dev.id().c_str(), m, n, host[0], total, m);
    return total > m - 0.01f && total < m + 0.01f ? 0 : 1;
}
