#include "cuda/ops/normalization_ops.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "cuda/ops/operand_checks.hpp"
#include "cuda/ops/row_launch.hpp"
#include "rayo/error.hpp"
#include "rayo/ptx/kernels/normalization.hpp"

namespace rayo::cuda::ops {

using detail::TensorView;


void norm(KernelRunner& runner, detail::NormOp op, std::size_t rows, std::size_t cols, float eps, TensorView const& in,
          TensorView const& gamma, TensorView const& beta, TensorView const& out) {
    bool const layer = op == detail::NormOp::layer_norm;
    char const* const name = layer ? "layer_norm" : "rms_norm";
    if (rows == 0 || cols == 0) return;
    require_f32(name, in, "input");
    require_f32(name, out, "output");
    require_numel(name, in, rows * cols, "the input", false);
    require_numel(name, out, rows * cols, "the output", false);
    bool const has_gamma = gamma.numel != 0;
    bool const has_beta = layer && beta.numel != 0;  // rms_norm has no beta
    if (has_gamma) {
        require_f32(name, gamma, "gamma");
        require_numel(name, gamma, cols, "gamma", false);
    }
    if (has_beta) {
        require_f32(name, beta, "beta");
        require_numel(name, beta, cols, "beta", false);
    }
    if (cols > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        throw Unsupported(std::string("cuda: ") + name + ": rows of " + std::to_string(cols) +
                          " floats (2^31 or more) have no kernel");

    std::uint64_t const in_address = runner.address(in);
    std::uint64_t const out_address = runner.address(out);
    // 0 tells the kernel that gamma or beta is absent.
    std::uint64_t const gamma_address = has_gamma ? runner.address(gamma) : 0;
    std::uint64_t const beta_address = has_beta ? runner.address(beta) : 0;
    unsigned const max_vector = (in_address | out_address | gamma_address | beta_address) % 16 == 0 ? 4 : 1;
    ptx::kernels::NormConfig const config{.norm = layer ? ptx::kernels::Norm::layer_norm : ptx::kernels::Norm::rms_norm,
                                          .row = ptx::kernels::choose_row_config(cols, max_vector)};
    std::string const key = std::string("norm/") + ptx::kernels::normalization_name(config) + "/" +
                            std::string(ptx::to_string(runner.target()));
    auto const make = [config] { return ptx::kernels::normalization(config); };

    for_each_row_chunk(config.row, rows, cols, [&](LaunchDims const& dims, std::uint32_t count, std::uint64_t offset) {
        runner.run(key, make, dims, in_address + offset, gamma_address, beta_address, out_address + offset, count,
                   static_cast<std::uint32_t>(cols), eps);
    });
}

}  // namespace rayo::cuda::ops
