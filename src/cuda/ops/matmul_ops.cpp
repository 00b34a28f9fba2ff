// matmul / linear on CUDA: picks the GEMM variant (rayo::ptx::kernels::choose_gemm_config) and
// launches it; K-quant weights go to quant_linear.
#include "cuda/ops/matmul_ops.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "cuda/ops/quant_ops.hpp"
#include "rayo/error.hpp"
#include "rayo/ptx/kernels/gemm.hpp"

namespace rayo::cuda::ops {

namespace {

using detail::TensorView;

ptx::Type element_type(DType t) {
    switch (t) {
        case DType::f32: return ptx::Type::f32;
        case DType::f16: return ptx::Type::f16;
        case DType::bf16: return ptx::Type::bf16;
        default: throw Unsupported("cuda matmul: no GEMM for " + std::string(to_string(t)) + " operands");
    }
}

std::uint64_t element_bytes(DType t) { return t == DType::f32 ? 4 : 2; }

}  // namespace

void matmul(KernelRunner& runner, detail::MatmulShape shape, TensorView const& a, TensorView const& b,
            TensorView const& out) {
    if (b.dtype == DType::q4_k || b.dtype == DType::q6_k) {
        quant_linear(runner, shape, a, b, out);
        return;
    }
    ptx::Type const a_type = element_type(a.dtype), b_type = element_type(b.dtype);
    if (out.dtype != DType::f32 || (a.dtype != b.dtype && a.dtype != DType::f32))
        throw Unsupported("cuda matmul: " + std::string(to_string(a.dtype)) + " x " + std::string(to_string(b.dtype)) +
                          " -> " + std::string(to_string(out.dtype)) + " is not a GEMM rayo runs");
    constexpr std::size_t size_limit = std::numeric_limits<std::uint32_t>::max();
    if (shape.m > size_limit || shape.n > size_limit || shape.k > size_limit)
        throw Unsupported("cuda matmul: " + std::to_string(shape.m) + "x" + std::to_string(shape.n) + "x" +
                          std::to_string(shape.k) + " has a size of 2^32 or more");
    if (shape.m == 0 || shape.n == 0) return;

    std::uint64_t const a_address = runner.address(a), b_address = runner.address(b), out_address = runner.address(out);
    // 16-byte accesses need 16-byte aligned tensors whose rows are whole 16-byte multiples.
    std::uint64_t const b_row = shape.b_transposed ? shape.k : shape.n;
    bool const aligned = (a_address | b_address | out_address) % 16 == 0 &&
                         shape.k * element_bytes(a.dtype) % 16 == 0 && b_row * element_bytes(b.dtype) % 16 == 0 &&
                         shape.n * 4 % 16 == 0;
    ptx::kernels::GemmConfig const config =
        ptx::kernels::choose_gemm_config(shape.m, shape.n, shape.k, a_type, b_type, shape.b_transposed, aligned,
                                         runner.multiprocessor_count(), runner.target());
    auto const m = static_cast<std::uint32_t>(shape.m), n = static_cast<std::uint32_t>(shape.n),
               k = static_cast<std::uint32_t>(shape.k);
    ptx::kernels::GemmLaunch const launch = ptx::kernels::gemm_launch(config, m, n);
    LaunchDims const dims{.grid = {launch.grid, 1, 1}, .block = {launch.threads, 1, 1}, .shared_bytes = launch.shared_bytes};
    // The kernel's name spells every generator parameter; the target completes the key.
    std::string const key = "matmul/" + ptx::kernels::gemm_name(config) + "/" + std::string(ptx::to_string(runner.target()));
    runner.run(key, [config] { return ptx::kernels::gemm(config); }, dims, a_address, b_address, out_address, m, n, k);
}

}  // namespace rayo::cuda::ops
