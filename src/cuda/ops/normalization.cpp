// The normalization family on CUDA: pick the row layout and launch shape for the views at hand and
// queue the generated kernel (rayo/ptx/kernels/normalization.hpp) on the runner. Accesses of 4
// elements when every view used is aligned to 4 elements and cols is a multiple of 4; f16 and bf16
// rows (gamma and beta of the same type) computed in f32. Deterministic: the same bits on every run.
#include <cstdint>
#include <string>

#include "cuda/ops/ops.hpp"
#include "cuda/ops/row_launch.hpp"
#include "rayo/ptx/kernels/normalization.hpp"

namespace rayo::cuda::ops {

Support supports(KernelRunner const&, op::Norm const& d, OpViews const& v) { return row_kernel_supports(d.op, v); }

void run(KernelRunner& runner, op::Norm const& d, OpViews const& v) {
    std::size_t const rows = v.in[0].rows(), cols = v.in[0].cols();
    if (rows == 0 || cols == 0) return;
    bool const has_gamma = v.in[1].present;
    bool const has_beta = d.op == Op::layer_norm && v.in[2].present;  // rms_norm has no beta
    std::uint64_t const in_address = runner.address(v.in[0]);
    std::uint64_t const out_address = runner.address(v.out[0]);
    // 0 tells the kernel that gamma or beta is absent.
    std::uint64_t const gamma_address = has_gamma ? runner.address(v.in[1]) : 0;
    std::uint64_t const beta_address = has_beta ? runner.address(v.in[2]) : 0;
    DType const type = v.in[0].dtype;
    unsigned const max_vector = row_max_vector(type, in_address | out_address | gamma_address | beta_address);
    ptx::kernels::NormConfig const config{
        .op = d.op, .row = ptx::kernels::choose_row_config(cols, max_vector), .element = type};
    std::string const key = std::string("norm/") + ptx::kernels::normalization_name(config) + "/" +
                            std::string(ptx::to_string(runner.target()));
    auto const make = [config] { return ptx::kernels::normalization(config); };
    for_each_row_chunk(config.row, type, rows, cols,
                       [&](LaunchDims const& dims, std::uint32_t count, std::uint64_t offset) {
                           runner.run(key, make, dims, in_address + offset, gamma_address, beta_address,
                                      out_address + offset, count, static_cast<std::uint32_t>(cols), d.eps);
                       });
}

}  // namespace rayo::cuda::ops
