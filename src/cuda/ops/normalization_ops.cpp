#include "cuda/ops/normalization_ops.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "rayo/error.hpp"
#include "rayo/ptx/kernels/normalization.hpp"

namespace rayo::cuda::ops {

using detail::TensorView;

namespace {

void require_f32(char const* op, TensorView const& view, char const* role) {
    if (view.dtype != DType::f32)
        throw Unsupported(std::string("cuda: ") + op + " runs on f32 " + role + ", not " +
                          std::string(to_string(view.dtype)));
}

void require_numel(char const* op, TensorView const& view, std::size_t n, char const* role) {
    if (view.numel < n)
        throw ShapeError(std::string("cuda: ") + op + ": " + role + " has " + std::to_string(view.numel) +
                         " elements, expected " + std::to_string(n));
}

}  // namespace

void norm(KernelRunner& runner, detail::NormOp op, std::size_t rows, std::size_t cols, float eps, TensorView const& in,
          TensorView const& gamma, TensorView const& beta, TensorView const& out) {
    bool const layer = op == detail::NormOp::layer_norm;
    char const* const name = layer ? "layer_norm" : "rms_norm";
    if (rows == 0 || cols == 0) return;
    require_f32(name, in, "input");
    require_f32(name, out, "output");
    require_numel(name, in, rows * cols, "the input");
    require_numel(name, out, rows * cols, "the output");
    bool const has_gamma = gamma.numel != 0;
    bool const has_beta = layer && beta.numel != 0;  // rms_norm has no beta
    if (has_gamma) {
        require_f32(name, gamma, "gamma");
        require_numel(name, gamma, cols, "gamma");
    }
    if (has_beta) {
        require_f32(name, beta, "beta");
        require_numel(name, beta, cols, "beta");
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

    // Launches of at most ~2^31 rows: the kernel's row index and the grid are 32-bit.
    std::size_t const per_block = ptx::kernels::rows_per_block(config.row);
    std::size_t const max_rows = (std::size_t{std::numeric_limits<std::int32_t>::max()} / per_block) * per_block;
    for (std::size_t first = 0; first < rows; first += max_rows) {
        std::size_t const count = std::min(max_rows, rows - first);
        std::uint64_t const offset = static_cast<std::uint64_t>(first) * cols * sizeof(float);
        LaunchDims dims;
        dims.grid = {static_cast<unsigned>(ptx::kernels::row_grid(config.row, count)), 1, 1};
        dims.block = {config.row.block, 1, 1};
        runner.run(key, make, dims, in_address + offset, gamma_address, beta_address, out_address + offset,
                   static_cast<std::uint32_t>(count), static_cast<std::uint32_t>(cols), eps);
    }
}

}  // namespace rayo::cuda::ops
