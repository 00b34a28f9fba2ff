// The layout family on the CPU: a strided copy over the views collapsed to the fewest axes, rows
// split over the thread pool; rows contiguous on both sides are one memcpy; transpositions go by
// cache-sized blocks.
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

// A kernel table's transposition of one block (KernelTable::transpose32).
template <class E>
using BlockTranspose = void (*)(E const* in, std::size_t in_stride, E* out, std::size_t out_stride, std::size_t rows,
                                std::size_t cols);

// A batch of transpositions by square blocks, split over the pool: each block by the instruction
// set's kernel where there is one (32-bit elements), else read along in's rows into a local tile
// and written along out's rows from the tile's columns. Either way both sides touch whole cache
// lines in order, where walking a column of a wide matrix directly would evict its own lines (rows
// 2^k apart share L1 sets).
template <class E>
void transpose_blocks(ThreadPool& pool, detail::Transposition const& t, E const* from, E* to,
                      BlockTranspose<E> block_transpose = nullptr) {
    constexpr std::size_t block = 64 / sizeof(E) * 2;  // two cache lines of elements a side
    std::size_t const block_rows = (t.rows + block - 1) / block, block_cols = (t.cols + block - 1) / block;
    std::size_t const per_matrix = block_rows * block_cols;
    pool.parallel_for(t.batch * per_matrix, 16, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t b = b0; b < b1; ++b) {
            std::size_t const matrix = b / per_matrix, rest = b % per_matrix;
            std::size_t const r0 = rest / block_cols * block, c0 = rest % block_cols * block;
            std::size_t const r1 = std::min(r0 + block, t.rows), c1 = std::min(c0 + block, t.cols);
            E const* in = from + matrix * t.in_batch;
            E* out = to + matrix * t.out_batch;
            if (block_transpose) {
                block_transpose(in + c0 * t.in_stride + r0, t.in_stride, out + r0 * t.out_stride + c0, t.out_stride,
                                r1 - r0, c1 - c0);
                continue;
            }
            E tile[block][block + 1];
            for (std::size_t c = c0; c < c1; ++c)
                for (std::size_t r = r0; r < r1; ++r) tile[c - c0][r - r0] = in[c * t.in_stride + r];
            for (std::size_t r = r0; r < r1; ++r)
                for (std::size_t c = c0; c < c1; ++c) out[r * t.out_stride + c] = tile[c - c0][r - r0];
        }
    });
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
    if (auto const t = detail::as_transposition(l)) {
        if (bytes == 2)
            transpose_blocks(r.pool(), *t, data<std::uint16_t const>(v.in[0]), data<std::uint16_t>(v.out[0]));
        else
            transpose_blocks(r.pool(), *t, data<std::uint32_t const>(v.in[0]), data<std::uint32_t>(v.out[0]),
                             r.kernels().transpose32);
        return;
    }
    std::size_t const inner = l.inner(), last = l.rank - 1;
    std::size_t const from_step = l.strides[0][last], to_step = l.strides[1][last];
    auto const* from = data<std::byte const>(v.in[0]);
    auto* to = data<std::byte>(v.out[0]);
    r.pool().parallel_for(n / inner, std::max<std::size_t>(1, elementwise_grain / inner),
                          [&](std::size_t r0, std::size_t r1) {
                              for (std::size_t row = r0; row < r1; ++row) {
                                  std::size_t const i = row * inner;
                                  std::byte const* src = from + l.offset(0, i) * bytes;
                                  std::byte* dst = to + l.offset(1, i) * bytes;
                                  if (from_step == 1 && to_step == 1)
                                      std::memcpy(dst, src, inner * bytes);
                                  else if (bytes == 2)
                                      copy_row<2>(src, from_step, dst, to_step, inner);
                                  else
                                      copy_row<4>(src, from_step, dst, to_step, inner);
                              }
                          });
}

}  // namespace rayo::cpu::ops
