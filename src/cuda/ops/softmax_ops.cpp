#include "cuda/ops/softmax_ops.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "cuda/ops/operand_checks.hpp"
#include "cuda/ops/row_launch.hpp"
#include "rayo/error.hpp"
#include "rayo/ptx/kernels/softmax.hpp"

namespace rayo::cuda::ops {

using detail::TensorView;


void softmax(KernelRunner& runner, std::size_t rows, std::size_t cols, bool log, TensorView const& in,
             TensorView const& out) {
    char const* const op = log ? "log_softmax" : "softmax";
    if (rows == 0 || cols == 0) return;
    require_f32(op, in, "input");
    require_f32(op, out, "output");
    require_numel(op, in, rows * cols, "the input", false);
    require_numel(op, out, rows * cols, "the output", false);
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

    for_each_row_chunk(config.row, rows, cols, [&](LaunchDims const& dims, std::uint32_t count, std::uint64_t offset) {
        runner.run(key, make, dims, in_address + offset, out_address + offset, count, static_cast<std::uint32_t>(cols));
    });
}

}  // namespace rayo::cuda::ops
