// Built by both consumer projects: links rayo::rayo and checks one op end to end.
#include <rayo/rayo.hpp>

#include <cstdio>
#include <vector>

int main() {
    std::vector<float> x{1.0f, -2.0f, 3.0f, -4.0f};
    auto t = rayo::Tensor<float>::from(x, {2, 2});
    auto y = rayo::relu(t).to_vector();
    float const s = rayo::sum(rayo::relu(t)).item();
    bool const ok = y == std::vector<float>{1.0f, 0.0f, 3.0f, 0.0f} && s == 4.0f;
    std::printf("rayo %s consumer: %s\n", rayo::version_string, ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
