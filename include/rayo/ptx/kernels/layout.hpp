// The layout family's strided copy, as PTX: out's elements set to in's through views of any
// strides, over a collapsed layout (src/dispatch/broadcast.hpp) of up to 8 axes.
//
//   Kernel k = rayo::ptx::kernels::copy_strided({.rank = 2, .element_bytes = 4});
//
// And the transposition of matrices (permute's {1, 0}, or a batch's last two axes) through tiles.
#pragma once

#include "rayo/export.hpp"
#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels {

struct RAYO_API CopyStridedKernelConfig {
    unsigned rank = 1;             // axes of the collapsed layout, 1 to 8
    unsigned element_bytes = 4;    // 2 or 4
    unsigned block_threads = 256;  // .maxntid
};

// out[Σ c[d]·out_stride[d]] = in[Σ c[d]·in_stride[d]] for every coordinate c of the layout, one
// element per thread and step of a grid-stride loop. Parameters, in order: out (.u64), in (.u64),
// n (.u32 element count), dim0..dim7, in_stride0..in_stride7, out_stride0..out_stride7 (.u32 each,
// in elements; those past `rank` are not read). Element offsets are 32-bit. Named
// rayo_copy_strided_r<rank>_b<element_bytes>.
[[nodiscard]] RAYO_API Kernel copy_strided(CopyStridedKernelConfig const& config);

struct RAYO_API TransposeKernelConfig {
    unsigned element_bytes = 4;  // 2 or 4
};

// out[b][r, c] = in[b][c, r] for a batch of matrices: 32 × 32 tiles staged through shared memory
// (rows padded to 33 slots, so that reading a column touches 32 banks), so that the loads run
// along in's rows and the stores along out's. Blocks of 32 × 8 threads, 4 elements each; grid
// (⌈cols / 32⌉, ⌈rows / 32⌉, batch). Parameters, in order: out, in (.u64), rows, cols (.u32, of
// out), in_stride, out_stride (.u32, elements between consecutive rows of in and of out),
// in_batch, out_batch (.u32, elements between consecutive matrices). Element offsets are 32-bit.
// Named rayo_transpose_tiled_b<element_bytes>.
[[nodiscard]] RAYO_API Kernel transpose_tiled(TransposeKernelConfig const& config);

}  // namespace rayo::ptx::kernels
