// rayo::cpu::math on an xsimd batch in a consumer's own SIMD code, beside a rayo op.
#include <rayo/cpu/vector_math.hpp>
#include <rayo/rayo.hpp>

#include <cmath>
#include <cstdio>

int main() {
    using batch = xsimd::batch<float, xsimd::default_arch>;
    float const e = rayo::cpu::math::exp(batch(1.0f)).get(0);
    float const sum = rayo::sum(rayo::Tensor<float>::from(std::vector<float>{1.0f, 2.0f}, {2})).item();
    bool const ok = std::abs(e - 2.7182817f) < 1e-6f && sum == 3.0f;
    std::printf("rayo::cpu::math::exp(1) = %.7f, sum = %g: %s\n", e, sum, ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
