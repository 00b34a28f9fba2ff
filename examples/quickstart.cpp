// The quickstart from the README: a matmul, a softmax and a sum on the best device, on numbers
// small enough to check by hand.
#include <rayo/rayo.hpp>

#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <vector>

namespace {

int run() {
    rayo::Device dev = rayo::Device::best();  // RAYO_DEVICE=cpu|vulkan|cuda|vulkan:1 overrides
    for (rayo::Device d : rayo::Device::all()) std::cout << d.id() << ": " << d.name() << '\n';

    std::vector<float> const host_a{1, 2,  //
                                    3, 4};
    std::vector<float> const host_b{1, 0, 2,  //
                                    0, 1, 1};
    auto a = rayo::Tensor<float>::from(host_a, {2, 2}, dev);  // upload (copies)
    auto b = rayo::Tensor<float>::from(host_b, {2, 3}, dev);
    auto c = rayo::matmul(a, b);    // runs on a's device, result stays there: [[1, 2, 4], [3, 4, 10]]
    auto p = rayo::softmax(c, -1);  // each row of p sums to 1
    std::vector<float> const cv = c.to_vector(), pv = p.to_vector();  // waits for the device, downloads
    float const total = rayo::sum(p).item();

    std::printf("\non %s:\n", dev.id().c_str());
    std::printf("c = a·b          = [[%g, %g, %g], [%g, %g, %g]]  (expect [[1, 2, 4], [3, 4, 10]])\n", cv[0], cv[1],
                cv[2], cv[3], cv[4], cv[5]);
    std::printf("p = softmax(c)   = [[%.4f, %.4f, %.4f], [%.4f, %.4f, %.4f]]\n", pv[0], pv[1], pv[2], pv[3], pv[4],
                pv[5]);
    std::printf("                   (expect e^c / Σ e^c per row: [[%.4f, %.4f, %.4f], ...])\n",
                std::exp(1.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(4.0)),
                std::exp(2.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(4.0)),
                std::exp(4.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(4.0)));
    std::printf("sum(p)           = %.4f  (expect 2: two rows of 1)\n", total);
    bool const ok = cv == std::vector<float>{1, 2, 4, 3, 4, 10} && std::abs(total - 2.0f) < 1e-5f;
    return ok ? 0 : 1;
}

}  // namespace

int main() {
    try {
        return run();
    } catch (std::exception const& e) {  // rayo::Error: e.g. RAYO_DEVICE names a device that is not here
        std::fprintf(stderr, "rayo-quickstart: %s\n", e.what());
        return 2;
    }
}
