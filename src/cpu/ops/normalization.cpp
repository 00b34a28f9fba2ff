// The normalization family on the CPU: rows split across the thread pool.
#include <algorithm>

#include "cpu/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"

namespace rayo::cpu::ops {

Support supports(KernelRunner const&, op::Norm const& d, OpViews const& v) { return detail::contiguous_f32("cpu", d.op, v); }

void run(KernelRunner& r, op::Norm const& d, OpViews const& v) {
    auto const& k = r.kernels();
    ThreadPool& pool = r.pool();
    std::size_t const rows = v.in[0].rows(), cols = v.in[0].cols();
    float const* g = v.in[1].present ? data<float const>(v.in[1]) : nullptr;
    float const* bt = v.in[2].present ? data<float const>(v.in[2]) : nullptr;
    float const* x = data<float const>(v.in[0]);
    float* y = data<float>(v.out[0]);
    std::size_t const grain = std::max<std::size_t>(1, elementwise_grain / std::max<std::size_t>(cols, 1));
    pool.parallel_for(rows, grain, [&](std::size_t b, std::size_t e) {
        if (d.op == Op::layer_norm) k.layer_norm_rows(x + b * cols, g, bt, d.eps, y + b * cols, e - b, cols);
        else k.rms_norm_rows(x + b * cols, g, d.eps, y + b * cols, e - b, cols);
    });
}

}  // namespace rayo::cpu::ops
