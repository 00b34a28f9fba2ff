// The softmax family on CUDA: pick the row layout and launch shape for the views at hand and queue
// the generated kernel (rayo/ptx/kernels/softmax.hpp) on the runner. Rows of views aligned to 4
// elements whose length is a multiple of 4 are read and written 4 elements at a time, others one
// element at a time; f16 and bf16 rows are computed in f32.
#include <cstdint>
#include <limits>
#include <string>

#include "cuda/ops/ops.hpp"
#include "cuda/ops/row_launch.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/ptx/kernels/softmax.hpp"

namespace rayo::cuda::ops {

Support supports(KernelRunner const&, op::Softmax const& d, OpViews const& v) { return row_kernel_supports(d.op, v); }

void run(KernelRunner& runner, op::Softmax const& d, OpViews const& v) {
    std::size_t const rows = v.in[0].rows(), cols = v.in[0].cols();
    if (rows == 0 || cols == 0) return;
    std::uint64_t const in_address = runner.address(v.in[0]);
    std::uint64_t const out_address = runner.address(v.out[0]);
    DType const type = v.in[0].dtype;
    unsigned const max_vector = row_max_vector(type, in_address | out_address);
    ptx::kernels::SoftmaxConfig const config{
        .op = d.op, .row = ptx::kernels::choose_row_config(cols, max_vector), .element = type};
    std::string const key = std::string("softmax/") + ptx::kernels::softmax_name(config) + "/" +
                            std::string(ptx::to_string(runner.target()));
    auto const make = [config] { return ptx::kernels::softmax(config); };
    for_each_row_chunk(config.row, type, rows, cols,
                       [&](LaunchDims const& dims, std::uint32_t count, std::uint64_t offset) {
                           runner.run(key, make, dims, in_address + offset, out_address + offset, count,
                                      static_cast<std::uint32_t>(cols));
                       });
}

}  // namespace rayo::cuda::ops
