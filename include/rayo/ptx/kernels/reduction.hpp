// Reduction kernels: sum (and mean), max, min, argmax, argmin of f32, f16 or bf16 data along one
// axis, and dot products, as PTX (16-bit values widened to f32 as they are loaded; results f32). Deterministic: every
// result comes from a fixed tree (per-thread runs in index order, warp butterfly shuffles, shared memory across warps,
// and for long rows a fixed split into parts whose partial results a second launch combines in order) and never from
// float atomics, so repeated runs on one device give the same bits.
//
// Semantics are the CPU backend's: sums accumulate in f64 (each group of up to four f32 values is
// added in f32 first) and round once to f32, after dividing by `count` for a mean; max/min return
// NaN when the run holds one; argmax/argmin return the first index of the extreme value, or of the
// first NaN; -0 and +0 tie.
//
// A tensor reduced along one axis is [outer, extent, inner]. reduce_rows serves inner == 1 (each
// row of `extent` contiguous values reduced by a thread, a warp or a block); reduce_columns serves
// inner > 1 (one thread per output, walking the axis with stride inner). For few long rows, both
// split the axis into `parts` chunks of `chunk` elements (stage partial); reduce_rows with source
// partials then reduces each output's `parts` partial results (stage final). A dot product is
// reduce_rows over the products a[i]·b[i] (each product rounded to f32, as on the CPU).
#pragma once

#include <cstdint>
#include <string_view>

#include "rayo/dtype.hpp"
#include "rayo/export.hpp"
#include "rayo/op_table.hpp"
#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels {

// Who reduces one row of reduce_rows: a thread (short rows), a warp, or a whole block.
enum class ReduceGroup : std::uint8_t { thread, warp, block };
// What the rows of reduce_rows hold: f32 values; the products in[i]·in_aux[i] of two f32 arrays
// (dot); or partial results of a first pass (values: f64 sums or f32 extremes; in_aux: their s64
// indices for argmax/argmin).
enum class ReduceSource : std::uint8_t { values, products, partials };
// What a kernel writes. final: the op's result per output (f32, or s64 for argmax/argmin) at
// out[output]. partial: per (output, part), at out[output * parts + part], an f64 sum or an f32
// extreme, and for argmax/argmin the s64 index (within the axis) at out_index[output * parts + part].
enum class ReduceStage : std::uint8_t { final, partial };

constexpr std::string_view to_string(ReduceGroup g) noexcept {
    constexpr std::string_view names[] = {"thread", "warp", "block"};
    return names[static_cast<int>(g)];
}
constexpr std::string_view to_string(ReduceSource s) noexcept {
    constexpr std::string_view names[] = {"values", "products", "partials"};
    return names[static_cast<int>(s)];
}
constexpr std::string_view to_string(ReduceStage s) noexcept {
    constexpr std::string_view names[] = {"final", "partial"};
    return names[static_cast<int>(s)];
}

// The ops: rayo::Op's sum, max, min, argmax and argmin (a mean is a sum with `mean` set).
struct RAYO_API ReduceRowsConfig {
    Op op = Op::sum;
    bool mean = false;  // final sums are divided by `count`
    ReduceSource source = ReduceSource::values;
    ReduceStage stage = ReduceStage::final;
    ReduceGroup group = ReduceGroup::block;
    // values and products: 16-byte loads (ld.global.v4.f32) with a scalar head and tail per row;
    // products need in and in_aux at the same address modulo 16. Partials, and rows reduced by a
    // single thread, are always read with scalar loads.
    bool vectorized = true;
    unsigned unroll = 4;           // loads in flight per thread and loop iteration: 1, 2 or 4
    unsigned block_threads = 256;  // .maxntid; the block must be a multiple of 32 threads
    // Of the values (in, and in_aux for products): f32, f16 or bf16; a vector load of 16-bit ones is
    // 8 bytes (ld.global.v2.b32), so products need in and in_aux at one address modulo 8.
    DType element = DType::f32;
};

// Reduces rows x extent values (row-major, contiguous). Parameters, in order, all .u64:
//   out, out_index (stage partial of argmax/argmin; else unused), in, in_aux (products: b;
//   partials: the s64 indices of argmax/argmin; else unused), rows, extent, chunk, parts, count
// Work item w < rows * parts covers elements [part * chunk, min(extent, (part + 1) * chunk)) of row
// w / parts (part = w % parts); stage final needs parts = 1 (chunk is then unused). count: the
// divisor of a mean (the length of the original axis). Work items are spread over the launch with
// grid-stride loops (over threads, warps or blocks as the group says): any 1-D launch works.
// Named rayo_reduce_rows_<op>[_mean]_<source>_<stage>_<group>_<v4|scalar>_u<unroll>[_f16|_bf16].
[[nodiscard]] RAYO_API Kernel reduce_rows(ReduceRowsConfig const& config);

struct RAYO_API ReduceColumnsConfig {
    Op op = Op::sum;
    bool mean = false;
    ReduceStage stage = ReduceStage::final;
    unsigned unroll = 4;           // loads along the axis in flight per thread: 1, 2 or 4
    unsigned block_threads = 256;  // .maxntid
    DType element = DType::f32;    // of in: f32, f16 or bf16
};

// Reduces [outer, extent, inner] f32 values along the middle axis. Parameters, in order, all
// .u64:
//   out, out_index, in, outer, extent, inner, chunk, parts, count
// Output (o, j) = o * inner + j. A 2-D launch: x covers j (threads of consecutive j read
// consecutive addresses), y covers the (o, part) slabs; both grid-stride, so any grid works.
// Named rayo_reduce_columns_<op>[_mean]_<stage>_u<unroll>[_f16|_bf16].
[[nodiscard]] RAYO_API Kernel reduce_columns(ReduceColumnsConfig const& config);

}  // namespace rayo::ptx::kernels
