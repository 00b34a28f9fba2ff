// The unary and binary families on the CPU: the kernels of the instruction set in use over
// contiguous ranges split across the thread pool; f16 and bf16 through the f32 kernels a staged
// block at a time (f32_staging.hpp).
#include <algorithm>

#include "cpu/ops/f32_staging.hpp"
#include "cpu/ops/ops.hpp"
#include "dispatch/broadcast.hpp"
#include "dispatch/operand_checks.hpp"

namespace rayo::cpu::ops {

namespace {

// Outputs at least this large are written with non-temporal stores: they would evict everything
// else from the caches, and skipping the read-for-ownership saves a third of the memory traffic.
constexpr std::size_t streaming_bytes = std::size_t{16} << 20;

bool stream_output(std::size_t numel) noexcept { return numel * sizeof(float) >= streaming_bytes; }

std::byte const* bytes(TensorView const& v) { return data<std::byte const>(v); }
std::byte* out_bytes(TensorView const& v) { return data<std::byte>(v); }

// One row of a broadcast op on 16-bit operands: out[i] = a[i·a_step] op b[i·b_step], staged.
void broadcast_row16(KernelTable const& k, Op op, DType type, std::byte const* a, std::size_t a_step,
                     std::byte const* b, std::size_t b_step, std::byte* out, std::size_t n) {
    float wa[staging_block], wb[staging_block], result[staging_block];
    for (std::size_t s = 0; s < n; s += staging_block) {
        std::size_t const m = std::min(staging_block, n - s);
        k.widen(type, element16(a, s * a_step), wa, a_step ? m : 1);
        k.widen(type, element16(b, s * b_step), wb, b_step ? m : 1);
        k.binary_broadcast(op, wa, a_step, wb, b_step, result, m, false);
        k.narrow(type, result, element16(out, s), m);
    }
}

// Calls row(i, a_offset, a_step, b_offset, b_step, length) for each row of the collapsed layout of a
// broadcast op (offsets in elements; a step of 0 repeats one element), rows spread over the pool.
template <class Row>
void broadcast_rows(ThreadPool& pool, OpViews const& v, Row&& row) {
    std::size_t const n = v.out[0].numel();
    if (n == 0) return;
    detail::StridedLayout const l = detail::collapse(v.out[0], v.in);
    std::size_t const inner = l.inner(), last = l.rank - 1;
    pool.parallel_for(n / inner, std::max<std::size_t>(1, elementwise_grain / inner),
                      [&](std::size_t r0, std::size_t r1) {
                          for (std::size_t r = r0; r < r1; ++r) {
                              std::size_t const i = r * inner;
                              row(i, l.offset(0, i), l.strides[0][last], l.offset(1, i), l.strides[1][last], inner);
                          }
                      });
}

}  // namespace

Support supports(KernelRunner const&, op::Unary const& d, OpViews const& v) {
    return detail::contiguous_floating("cpu", d.op, v);
}

void run(KernelRunner& r, op::Unary const& d, OpViews const& v) {
    auto const& k = r.kernels();
    ThreadPool& pool = r.pool();
    std::size_t const n = v.out[0].numel();
    DType const type = v.in[0].dtype;
    if (type != DType::f32) {
        pool.parallel_for(n, elementwise_grain, [&](std::size_t b, std::size_t e) {
            staged_blocks<1>(
                k, type, {bytes(v.in[0])}, out_bytes(v.out[0]), b, e,
                [&](auto const& x, float* y, std::size_t m) { k.unary(d.op, d.a, d.b, x[0], y, m, false); });
        });
        return;
    }
    bool const stream = stream_output(n);
    float const* x = data<float const>(v.in[0]);
    float* y = data<float>(v.out[0]);
    pool.parallel_for(n, elementwise_grain,
                      [&](std::size_t b, std::size_t e) { k.unary(d.op, d.a, d.b, x + b, y + b, e - b, stream); });
}

Support supports(KernelRunner const&, op::Binary const& d, OpViews const& v) {
    return detail::elementwise_floating("cpu", d.op, v);
}

namespace {

// The 16-bit forms of the binary family.
void run_binary16(KernelRunner& r, op::Binary const& d, OpViews const& v) {
    auto const& k = r.kernels();
    ThreadPool& pool = r.pool();
    std::size_t const n = v.out[0].numel();
    DType const type = v.in[0].dtype;
    std::byte* y = out_bytes(v.out[0]);
    if (d.scalar_rhs) {
        pool.parallel_for(n, elementwise_grain, [&](std::size_t s, std::size_t e) {
            staged_blocks<1>(k, type, {bytes(v.in[0])}, y, s, e, [&](auto const& a, float* out, std::size_t m) {
                k.binary_scalar(d.op, a[0], d.scalar, out, m, false);
            });
        });
        return;
    }
    if (v.in[0].is_contiguous() && v.in[1].is_contiguous()) {
        pool.parallel_for(n, elementwise_grain, [&](std::size_t s, std::size_t e) {
            staged_blocks<2>(
                k, type, {bytes(v.in[0]), bytes(v.in[1])}, y, s, e,
                [&](auto const& ab, float* out, std::size_t m) { k.binary(d.op, ab[0], ab[1], out, m, false); });
        });
        return;
    }
    broadcast_rows(
        pool, v,
        [&](std::size_t i, std::size_t ia, std::size_t a_step, std::size_t ib, std::size_t b_step, std::size_t m) {
            broadcast_row16(k, d.op, type, element16(bytes(v.in[0]), ia), a_step, element16(bytes(v.in[1]), ib), b_step,
                            element16(y, i), m);
        });
}

}  // namespace

void run(KernelRunner& r, op::Binary const& d, OpViews const& v) {
    if (v.in[0].dtype != DType::f32) return run_binary16(r, d, v);
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
    broadcast_rows(pool, v,
                   [&](std::size_t i, std::size_t ia, std::size_t a_step, std::size_t ib, std::size_t b_step,
                       std::size_t m) { k.binary_broadcast(d.op, a + ia, a_step, b + ib, b_step, y + i, m, stream); });
}

}  // namespace rayo::cpu::ops
