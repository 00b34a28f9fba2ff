// The unary and binary families on the CPU: the kernels of the instruction set in use over
// contiguous ranges split across the thread pool.
#include <algorithm>

#include "cpu/ops/ops.hpp"
#include "dispatch/broadcast.hpp"
#include "dispatch/operand_checks.hpp"

namespace rayo::cpu::ops {

namespace {

// Outputs at least this large are written with non-temporal stores: they would evict everything
// else from the caches, and skipping the read-for-ownership saves a third of the memory traffic.
constexpr std::size_t streaming_bytes = std::size_t{16} << 20;

bool stream_output(std::size_t numel) noexcept { return numel * sizeof(float) >= streaming_bytes; }

}  // namespace

Support supports(KernelRunner const&, op::Unary const& d, OpViews const& v) { return detail::contiguous_f32("cpu", d.op, v); }

void run(KernelRunner& r, op::Unary const& d, OpViews const& v) {
    auto const& k = r.kernels();
    ThreadPool& pool = r.pool();
    std::size_t const n = v.out[0].numel();
    bool const stream = stream_output(n);
    float const* x = data<float const>(v.in[0]);
    float* y = data<float>(v.out[0]);
    pool.parallel_for(n, elementwise_grain,
                        [&](std::size_t b, std::size_t e) { k.unary(d.op, d.a, d.b, x + b, y + b, e - b, stream); });
}

Support supports(KernelRunner const&, op::Binary const& d, OpViews const& v) { return detail::elementwise_f32("cpu", d.op, v); }

void run(KernelRunner& r, op::Binary const& d, OpViews const& v) {
    auto const& k = r.kernels();
    ThreadPool& pool = r.pool();
    std::size_t const n = v.out[0].numel();
    bool const stream = stream_output(n);
    float const* a = data<float const>(v.in[0]);
    float* y = data<float>(v.out[0]);
    if (d.scalar_rhs) {
        pool.parallel_for(n, elementwise_grain, [&](std::size_t s, std::size_t e) {
            k.binary_scalar(d.op, a + s, d.scalar, y + s, e - s, stream);
        });
        return;
    }
    float const* b = data<float const>(v.in[1]);
    if (v.in[0].is_contiguous() && v.in[1].is_contiguous()) {
        pool.parallel_for(n, elementwise_grain,
                          [&](std::size_t s, std::size_t e) { k.binary(d.op, a + s, b + s, y + s, e - s, stream); });
        return;
    }
    // Broadcast: rows of the collapsed layout, each operand's row contiguous or one repeated value.
    if (n == 0) return;
    detail::StridedLayout const l = detail::collapse(v.out[0], v.in);
    std::size_t const inner = l.inner(), last = l.rank - 1;
    pool.parallel_for(n / inner, std::max<std::size_t>(1, elementwise_grain / inner), [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
            std::size_t const i = r * inner;
            k.binary_broadcast(d.op, a + l.offset(0, i), l.strides[0][last], b + l.offset(1, i), l.strides[1][last], y + i,
                               inner, stream);
        }
    });
}

}  // namespace rayo::cpu::ops
