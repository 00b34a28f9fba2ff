// What the row kernels (softmax, the norms) share: what they take, and their launches over any
// number of rows in chunks of at most ~2^31 rows, because the kernels' row index and the grid are
// 32-bit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include <string>

#include "cuda/kernel_runner.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/ptx/kernels/row_layout.hpp"

namespace rayo::cuda::ops {

// Contiguous operands of one floating type (f32, f16, bf16) with rows shorter than 2^31 elements
// (the kernels index a row with 32-bit signed arithmetic).
inline detail::Support row_kernel_supports(Op op, detail::OpViews const& v) {
    detail::Support s = detail::contiguous_floating("cuda", op, v);
    if (s.native && v.in[0].cols() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        return detail::Support::no("cuda: " + std::string(to_string(op)) + ": rows of " +
                                   std::to_string(v.in[0].cols()) + " elements (2^31 or more) have no kernel");
    return s;
}

// The widest vector (in elements) the row kernels may use for rows of `type` at these addresses:
// 4 where every one is aligned to 4 elements (16 bytes for f32, 8 for f16 / bf16), else 1.
inline unsigned row_max_vector(DType type, std::uint64_t addresses_or) {
    return addresses_or % (4 * bytes_for(type, 1)) == 0 ? 4 : 1;
}

// Calls launch(dims, count, byte_offset) once per chunk of rows of `cols` elements of `type`.
template <class Launch>
void for_each_row_chunk(ptx::kernels::RowConfig const& row, DType type, std::size_t rows, std::size_t cols,
                        Launch&& launch) {
    std::size_t const per_block = ptx::kernels::rows_per_block(row);
    std::size_t const max_rows = (std::size_t{std::numeric_limits<std::int32_t>::max()} / per_block) * per_block;
    for (std::size_t first = 0; first < rows; first += max_rows) {
        std::size_t const count = std::min(max_rows, rows - first);
        LaunchDims dims;
        dims.grid = {static_cast<unsigned>(ptx::kernels::row_grid(row, count)), 1, 1};
        dims.block = {row.block, 1, 1};
        launch(dims, static_cast<std::uint32_t>(count), static_cast<std::uint64_t>(first) * cols * bytes_for(type, 1));
    }
}

}  // namespace rayo::cuda::ops
