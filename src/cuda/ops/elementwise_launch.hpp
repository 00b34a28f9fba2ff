// The launch shape of the element-wise kernels: 256-thread blocks, each thread `unroll` 16-byte
// accesses per operand at a time (64 registers at most: ptxas reports 60). The grid covers the
// whole tensor rather than striding over it with only the resident blocks: blocks that finish
// make room for new ones whose loads overlap the old ones' arithmetic (docs/backends/cuda.md,
// "Tuning decisions").
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string_view>

#include "cuda/kernel_runner.hpp"
#include "dispatch/broadcast.hpp"

namespace rayo::cuda::ops {

inline constexpr unsigned elementwise_block_threads = 256;
inline constexpr unsigned elementwise_unroll = 4;

// A thread handles `unroll` vectors (or elements) per loop iteration; enough blocks for one
// iteration each, up to the grid's limit (the grid-stride loop does any rest).
inline LaunchDims elementwise_launch(std::size_t n, bool vectorized) {
    std::size_t const units = vectorized ? (n + 3) / 4 : n;
    std::size_t const per_block = std::size_t{elementwise_block_threads} * elementwise_unroll;
    std::size_t const wanted = std::max<std::size_t>(1, (units + per_block - 1) / per_block);
    constexpr std::size_t max_grid_x = 0x7fffffff;
    LaunchDims dims;
    dims.grid[0] = static_cast<unsigned>(std::min(wanted, max_grid_x));
    dims.block[0] = elementwise_block_threads;
    return dims;
}

// Launches a kernel over a collapsed strided layout (rayo/ptx/kernels/elementwise.hpp's
// binary_broadcast, layout.hpp's copy_strided): its leading parameters, then the layout's 24 .u32s.
template <std::size_t Leading>
void launch_strided(KernelRunner& runner, std::string_view key, KernelFactory make, LaunchDims dims,
                    std::array<void*, Leading> leading, detail::StridedLayout const& layout) {
    auto packed = layout.packed();
    std::array<void*, Leading + packed.size()> arguments{};
    std::copy(leading.begin(), leading.end(), arguments.begin());
    for (std::size_t i = 0; i < packed.size(); ++i) arguments[Leading + i] = &packed[i];
    runner.launch(key, std::move(make), dims, arguments);
}

}  // namespace rayo::cuda::ops
