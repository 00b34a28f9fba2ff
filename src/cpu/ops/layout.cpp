// The layout family on the CPU: a strided copy over the views collapsed to the fewest axes, rows
// split over the thread pool; rows contiguous on both sides are one memcpy.
#include <algorithm>
#include <cstring>

#include "cpu/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"
#include "dispatch/broadcast.hpp"

namespace rayo::cpu::ops {

namespace {


// `count` elements of `bytes` each, `from_step` and `to_step` elements apart.
template <std::size_t Bytes>
void copy_row(std::byte const* from, std::size_t from_step, std::byte* to, std::size_t to_step, std::size_t count) {
    for (std::size_t j = 0; j < count; ++j) std::memcpy(to + j * to_step * Bytes, from + j * from_step * Bytes, Bytes);
}

}  // namespace

Support supports(KernelRunner const&, op::Copy const&, OpViews const& v) {
    if (!detail::castable(v.in[0].dtype) || v.in[0].dtype != v.out[0].dtype)
        return Support::no("cpu: copy takes f32, f16, bf16 or i32 views of one type");
    return Support::yes();
}

void run(KernelRunner& r, op::Copy const&, OpViews const& v) {
    std::size_t const n = v.out[0].numel();
    if (n == 0) return;
    std::size_t const bytes = bytes_for(v.out[0].dtype, 1);
    TensorView const views[] = {v.in[0], v.out[0]};
    detail::StridedLayout const l = detail::collapse(v.out[0], views);
    std::size_t const inner = l.inner(), last = l.rank - 1;
    std::size_t const from_step = l.strides[0][last], to_step = l.strides[1][last];
    auto const* from = data<std::byte const>(v.in[0]);
    auto* to = data<std::byte>(v.out[0]);
    r.pool().parallel_for(n / inner, std::max<std::size_t>(1, elementwise_grain / inner), [&](std::size_t r0, std::size_t r1) {
        for (std::size_t row = r0; row < r1; ++row) {
            std::size_t const i = row * inner;
            std::byte const* src = from + l.offset(0, i) * bytes;
            std::byte* dst = to + l.offset(1, i) * bytes;
            if (from_step == 1 && to_step == 1) std::memcpy(dst, src, inner * bytes);
            else if (bytes == 2) copy_row<2>(src, from_step, dst, to_step, inner);
            else copy_row<4>(src, from_step, dst, to_step, inner);
        }
    });
}

}  // namespace rayo::cpu::ops
