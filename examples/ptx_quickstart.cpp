// Prints the PTX of one of rayo's GEMM kernels for sm_90. Needs no GPU, driver or CUDA toolkit:
// the kernel is built in C++ by rayo's PTX builder.
//
//   rayo-ptx-quickstart > gemm.ptx              (the launch shape goes to stderr)
//   ptxas -arch=sm_90 -v gemm.ptx -o gemm.cubin  (optional, where the CUDA toolkit is installed)
#include <rayo/ptx/kernels/gemm.hpp>
#include <rayo/ptx/ptx.hpp>

#include <exception>
#include <iostream>

int main() try {
    using namespace rayo::ptx;
    // bf16 x bf16ᵀ -> f32 on the tensor cores: 128x128 block tiles, 32 of k per step, 4 warps,
    // a 4-stage cp.async pipeline. The sizes are baked in, so whole tiles need no edge checks.
    kernels::GemmConfig const config{.m = 4096,
                                     .n = 4096,
                                     .k = 4096,
                                     .a = Type::bf16,
                                     .b = Type::bf16,
                                     .b_transposed = true,
                                     .tile = {128, 128, 32},
                                     .warps = 4,
                                     .stages = 4};
    Kernel const kernel = kernels::gemm(config);
    kernels::GemmLaunch const launch = kernels::gemm_launch(config, config.m, config.n);

    std::cout << kernel.emit(Target::sm_90);
    std::cerr << kernel.name() << ": " << launch.grid << " blocks of " << launch.threads << " threads, "
              << launch.shared_bytes << " bytes of dynamic shared memory; parameters a, b, out, m, n, k\n";
    return 0;
} catch (std::exception const& e) {
    std::cerr << "rayo-ptx-quickstart: " << e.what() << '\n';
    return 2;
}
