// The softmax family on the CPU: rows split across the thread pool; f16 and bf16 rows widened to f32
// one at a time (f32_staging.hpp).
#include <algorithm>
#include <vector>

#include "cpu/ops/f32_staging.hpp"
#include "cpu/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"

namespace rayo::cpu::ops {

Support supports(KernelRunner const&, op::Softmax const& d, OpViews const& v) {
    return detail::contiguous_floating("cpu", d.op, v);
}

void run(KernelRunner& r, op::Softmax const& d, OpViews const& v) {
    auto const& k = r.kernels();
    ThreadPool& pool = r.pool();
    std::size_t const rows = v.in[0].rows(), cols = v.in[0].cols();
    bool const log = d.op == Op::log_softmax;
    std::size_t const grain = std::max<std::size_t>(1, elementwise_grain / std::max<std::size_t>(cols, 1));
    if (DType const type = v.in[0].dtype; type != DType::f32) {
        pool.parallel_for(rows, grain, [&](std::size_t b, std::size_t e) {
            staged_rows(k, type, data<std::byte const>(v.in[0]), data<std::byte>(v.out[0]), b, e, cols,
                        [&](float const* x, float* y) { k.softmax_rows(x, y, 1, cols, log); });
        });
        return;
    }
    float const* x = data<float const>(v.in[0]);
    float* y = data<float>(v.out[0]);
    pool.parallel_for(rows, grain, [&](std::size_t b, std::size_t e) {
        k.softmax_rows(x + b * cols, y + b * cols, e - b, cols, log);
    });
}

}  // namespace rayo::cpu::ops
