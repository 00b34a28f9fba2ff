// The normalization family on the CPU: rows split across the thread pool; f16 and bf16 rows (and
// gamma, beta) widened to f32 (f32_staging.hpp).
#include <algorithm>
#include <vector>

#include "cpu/ops/f32_staging.hpp"
#include "cpu/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"

namespace rayo::cpu::ops {

Support supports(KernelRunner const&, op::Norm const& d, OpViews const& v) {
    return detail::contiguous_floating("cpu", d.op, v);
}

namespace {

// `rows` rows of f32 from x to y, with f32 gamma and beta (or null).
void norm_rows(KernelTable const& k, op::Norm const& d, float const* x, float const* gamma, float const* beta, float* y,
               std::size_t rows, std::size_t cols) {
    if (d.op == Op::layer_norm)
        k.layer_norm_rows(x, gamma, beta, d.eps, y, rows, cols);
    else
        k.rms_norm_rows(x, gamma, d.eps, y, rows, cols);
}

}  // namespace

void run(KernelRunner& r, op::Norm const& d, OpViews const& v) {
    auto const& k = r.kernels();
    ThreadPool& pool = r.pool();
    std::size_t const rows = v.in[0].rows(), cols = v.in[0].cols();
    std::size_t const grain = std::max<std::size_t>(1, elementwise_grain / std::max<std::size_t>(cols, 1));
    if (DType const type = v.in[0].dtype; type != DType::f32) {
        std::vector<float> gamma, beta;
        if (v.in[1].present) widen_all(k, type, data<std::byte const>(v.in[1]), cols, gamma);
        if (v.in[2].present) widen_all(k, type, data<std::byte const>(v.in[2]), cols, beta);
        float const* g = v.in[1].present ? gamma.data() : nullptr;
        float const* bt = v.in[2].present ? beta.data() : nullptr;
        pool.parallel_for(rows, grain, [&](std::size_t b, std::size_t e) {
            staged_rows(k, type, data<std::byte const>(v.in[0]), data<std::byte>(v.out[0]), b, e, cols,
                        [&](float const* x, float* y) { norm_rows(k, d, x, g, bt, y, 1, cols); });
        });
        return;
    }
    float const* g = v.in[1].present ? data<float const>(v.in[1]) : nullptr;
    float const* bt = v.in[2].present ? data<float const>(v.in[2]) : nullptr;
    float const* x = data<float const>(v.in[0]);
    float* y = data<float>(v.out[0]);
    pool.parallel_for(rows, grain, [&](std::size_t b, std::size_t e) {
        norm_rows(k, d, x + b * cols, g, bt, y + b * cols, e - b, cols);
    });
}

}  // namespace rayo::cpu::ops
