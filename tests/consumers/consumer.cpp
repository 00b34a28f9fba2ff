// Built by the consumer projects: links rayo::rayo and checks one op end to end.
#include <rayo/config.hpp>
#include <rayo/rayo.hpp>

#include <cstdio>
#include <vector>

// find_package's rayo_<backend>_FOUND and the header's RAYO_HAS_<backend> describe one build.
#ifdef CONSUMER_VULKAN_FOUND
static_assert(RAYO_HAS_VULKAN == CONSUMER_VULKAN_FOUND, "rayo_vulkan_FOUND disagrees with rayo/config.hpp");
static_assert(RAYO_HAS_CUDA == CONSUMER_CUDA_FOUND, "rayo_cuda_FOUND disagrees with rayo/config.hpp");
#endif
static_assert(RAYO_VERSION_MAJOR == rayo::version_major && RAYO_VERSION_MINOR == rayo::version_minor);

int main() {
    std::vector<float> x{1.0f, -2.0f, 3.0f, -4.0f};
    auto t = rayo::Tensor<float>::from(x, {2, 2});
    auto y = rayo::relu(t).to_vector();
    float const s = rayo::sum(rayo::relu(t)).item();
    bool const ok = y == std::vector<float>{1.0f, 0.0f, 3.0f, 0.0f} && s == 4.0f;
    std::printf("rayo %s (vulkan %d, cuda %d) consumer: %s\n", rayo::version_string, RAYO_HAS_VULKAN, RAYO_HAS_CUDA,
                ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
