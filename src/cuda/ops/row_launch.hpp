// Launches of a row kernel (softmax, the norms) over any number of rows: chunks of at most ~2^31
// rows, because the kernels' row index and the grid are 32-bit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "cuda/kernel_runner.hpp"
#include "rayo/ptx/kernels/row_layout.hpp"

namespace rayo::cuda::ops {

// Calls launch(dims, count, byte_offset) once per chunk of rows of `cols` floats.
template <class Launch>
void for_each_row_chunk(ptx::kernels::RowConfig const& row, std::size_t rows, std::size_t cols, Launch&& launch) {
    std::size_t const per_block = ptx::kernels::rows_per_block(row);
    std::size_t const max_rows = (std::size_t{std::numeric_limits<std::int32_t>::max()} / per_block) * per_block;
    for (std::size_t first = 0; first < rows; first += max_rows) {
        std::size_t const count = std::min(max_rows, rows - first);
        LaunchDims dims;
        dims.grid = {static_cast<unsigned>(ptx::kernels::row_grid(row, count)), 1, 1};
        dims.block = {row.block, 1, 1};
        launch(dims, static_cast<std::uint32_t>(count), static_cast<std::uint64_t>(first) * cols * sizeof(float));
    }
}

}  // namespace rayo::cuda::ops
