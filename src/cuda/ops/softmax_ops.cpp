#include "cuda/ops/softmax_ops.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "rayo/error.hpp"
#include "rayo/ptx/kernels/softmax.hpp"

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
                         " elements, the rows need " + std::to_string(n));
}

}  // namespace

void softmax(KernelRunner& runner, std::size_t rows, std::size_t cols, bool log, TensorView const& in,
             TensorView const& out) {
    char const* const op = log ? "log_softmax" : "softmax";
    if (rows == 0 || cols == 0) return;
    require_f32(op, in, "input");
    require_f32(op, out, "output");
    require_numel(op, in, rows * cols, "the input");
    require_numel(op, out, rows * cols, "the output");
    // The kernels index a row with 32-bit signed arithmetic.
    if (cols > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        throw Unsupported(std::string("cuda: ") + op + ": rows of " + std::to_string(cols) +
                          " floats (2^31 or more) have no kernel");

    std::uint64_t const in_address = runner.address(in);
    std::uint64_t const out_address = runner.address(out);
    unsigned const max_vector = (in_address | out_address) % 16 == 0 ? 4 : 1;
    ptx::kernels::SoftmaxConfig const config{.log = log, .row = ptx::kernels::choose_row_config(cols, max_vector)};
    std::string const key = std::string("softmax/") + ptx::kernels::softmax_name(config) + "/" +
                            std::string(ptx::to_string(runner.target()));
    auto const make = [config] { return ptx::kernels::softmax(config); };

    // Launches of at most ~2^31 rows: the kernel's row index and the grid are 32-bit.
    std::size_t const per_block = ptx::kernels::rows_per_block(config.row);
    std::size_t const max_rows = (std::size_t{std::numeric_limits<std::int32_t>::max()} / per_block) * per_block;
    for (std::size_t first = 0; first < rows; first += max_rows) {
        std::size_t const count = std::min(max_rows, rows - first);
        std::uint64_t const offset = static_cast<std::uint64_t>(first) * cols * sizeof(float);
        LaunchDims dims;
        dims.grid = {static_cast<unsigned>(ptx::kernels::row_grid(config.row, count)), 1, 1};
        dims.block = {config.row.block, 1, 1};
        runner.run(key, make, dims, in_address + offset, out_address + offset, static_cast<std::uint32_t>(count),
                   static_cast<std::uint32_t>(cols));
    }
}

}  // namespace rayo::cuda::ops
