// The reduction family on CUDA: pick the kernels (rayo/ptx/kernels/reduction.hpp), the split of long
// axes into parts and the launch shapes, and queue them on the runner. Results are deterministic:
// the split depends only on the shape and the device's multiprocessor count.
#include <algorithm>
#include <cstdint>
#include <string>

#include "cuda/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/ptx/kernels/reduction.hpp"

namespace rayo::cuda::ops {

using ptx::kernels::ReduceGroup;
using ptx::kernels::ReduceSource;
using ptx::kernels::ReduceStage;

namespace {

constexpr unsigned block_threads = 256;
constexpr unsigned unroll = 4;
// Enough 256-thread blocks to keep every multiprocessor's loads in flight when one long axis is
// split into parts (a part per block); the parts' partial results then fit one more small launch.
constexpr std::size_t blocks_per_multiprocessor = 4;
// Grid-stride launches never need more blocks than this per multiprocessor.
constexpr std::size_t max_blocks_per_multiprocessor = 8;
// A part of a split row is at least this long, so the partial results stay few.
constexpr std::size_t min_part = 8192;
// A column part walks at least this many elements along the axis.
constexpr std::size_t min_column_part = 64;

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

std::size_t multiprocessors(KernelRunner const& runner) {
    return static_cast<std::size_t>(std::max(1, runner.multiprocessor_count()));
}

// Who reduces one row of `extent` values: short rows a thread each, middling ones a warp, long
// ones a block.
ReduceGroup group_for(std::size_t extent) {
    if (extent <= 16) return ReduceGroup::thread;
    if (extent <= 2048) return ReduceGroup::warp;
    return ReduceGroup::block;
}

LaunchDims rows_launch(KernelRunner const& runner, ReduceGroup group, std::size_t items) {
    std::size_t const per_block = group == ReduceGroup::thread ? block_threads
                                  : group == ReduceGroup::warp ? block_threads / 32
                                                               : 1;
    std::size_t const cap = multiprocessors(runner) * max_blocks_per_multiprocessor;
    LaunchDims dims;
    dims.grid[0] = static_cast<unsigned>(std::clamp<std::size_t>(ceil_div(items, per_block), 1, cap));
    dims.block[0] = block_threads;
    return dims;
}

// Splits an axis of `extent` into about `wanted` parts of a multiple of 4 elements (so the parts of
// a 16-byte aligned row stay aligned); returns {chunk, parts} with no empty part.
std::pair<std::size_t, std::size_t> split(std::size_t extent, std::size_t wanted) {
    std::size_t chunk = std::max<std::size_t>(4, ceil_div(ceil_div(extent, std::max<std::size_t>(wanted, 1)), 4) * 4);
    return {chunk, std::max<std::size_t>(1, ceil_div(extent, chunk))};
}

KernelKey rows_key(ptx::kernels::ReduceRowsConfig const& c, KernelRunner const& runner) {
    KernelKey key;
    key << "reduce_rows/" << to_string(c.op) << (c.mean ? "/mean" : "/plain") << "/" << to_string(c.element) << "/"
        << to_string(c.source) << "/" << to_string(c.stage) << "/" << to_string(c.group)
        << (c.vectorized ? "/v4" : "/scalar") << "/u" << c.unroll << "/b" << c.block_threads << "/"
        << ptx::to_string(runner.target());
    return key;
}

KernelKey columns_key(ptx::kernels::ReduceColumnsConfig const& c, KernelRunner const& runner) {
    KernelKey key;
    key << "reduce_columns/" << to_string(c.op) << (c.mean ? "/mean" : "/plain") << "/" << to_string(c.element) << "/"
        << to_string(c.stage) << "/u" << c.unroll << "/b" << c.block_threads << "/" << ptx::to_string(runner.target());
    return key;
}

// Launches reduce_rows over `rows` rows of `extent` entries at in (and in_aux).
void launch_rows(KernelRunner& runner, ptx::kernels::ReduceRowsConfig config, std::uint64_t out,
                 std::uint64_t out_index, std::uint64_t in, std::uint64_t in_aux, std::size_t rows, std::size_t extent,
                 std::size_t chunk, std::size_t parts, std::size_t count) {
    // The generator reads partials, and rows a thread reduces alone, with scalar loads.
    if (config.source == ReduceSource::partials || config.group == ReduceGroup::thread) config.vectorized = false;
    if (config.stage == ReduceStage::partial) config.mean = false;  // applied by the final pass
    std::size_t const items = config.stage == ReduceStage::partial ? rows * parts : rows;
    runner.run(
        rows_key(config, runner).view(), [config] { return ptx::kernels::reduce_rows(config); },
        rows_launch(runner, config.group, items), out, out_index, in, in_aux, std::uint64_t{rows},
        std::uint64_t{extent}, std::uint64_t{chunk}, std::uint64_t{parts}, std::uint64_t{count});
}

// The partial results of a split axis: `slots` values (f64 sums or f32 extremes) and, for the
// arg ops, their s64 indices.
struct Partials {
    Partials(KernelRunner& runner, Op op, std::size_t slots)
        : values(runner, slots * (op == Op::sum ? 8 : 4)), indices(runner, is_arg_reduction(op) ? slots * 8 : 8) {}
    TemporaryBuffer values;
    TemporaryBuffer indices;
};

// The second pass: each of `outputs` rows of `parts` partial results reduced in order to the final
// result at `out`.
void combine_partials(KernelRunner& runner, Op op, bool mean, Partials const& partials, std::size_t outputs,
                      std::size_t parts, std::size_t count, std::uint64_t out) {
    ptx::kernels::ReduceRowsConfig const config{.op = op,
                                                .mean = mean,
                                                .source = ReduceSource::partials,
                                                .stage = ReduceStage::final,
                                                .group = group_for(parts),
                                                .vectorized = false,
                                                .unroll = unroll,
                                                .block_threads = block_threads};
    launch_rows(runner, config, out, 0, partials.values.address(), partials.indices.address(), outputs, parts, parts, 1,
                count);
}

// inner == 1: rows of `extent` contiguous values of `element` (a, and b for a dot product).
void reduce_rows(KernelRunner& runner, Op op, bool mean, DType element, std::size_t rows, std::size_t extent,
                 std::uint64_t a, std::uint64_t b, bool products, std::uint64_t out) {
    std::uint64_t const group_bytes = 4 * bytes_for(element, 1);  // one vector load
    bool const vectorized = !products || a % group_bytes == b % group_bytes;
    ReduceSource const source = products ? ReduceSource::products : ReduceSource::values;
    ReduceGroup const group = group_for(extent);
    // Few long rows: split each into parts, a block per part, so the whole device reads.
    std::size_t const target_blocks = multiprocessors(runner) * blocks_per_multiprocessor;
    std::size_t wanted_parts = 1;
    if (group == ReduceGroup::block && rows < target_blocks)
        wanted_parts = std::min(ceil_div(target_blocks, rows), std::max<std::size_t>(1, extent / min_part));
    auto const [chunk, parts] = split(extent, wanted_parts);
    ptx::kernels::ReduceRowsConfig config{.op = op,
                                          .mean = mean,
                                          .source = source,
                                          .stage = ReduceStage::final,
                                          .group = group,
                                          .vectorized = vectorized,
                                          .unroll = unroll,
                                          .block_threads = block_threads,
                                          .element = element};
    if (parts == 1) {
        launch_rows(runner, config, out, 0, a, b, rows, extent, extent, 1, extent);
        return;
    }
    Partials const partials(runner, op, rows * parts);
    config.stage = ReduceStage::partial;
    launch_rows(runner, config, partials.values.address(), partials.indices.address(), a, b, rows, extent, chunk, parts,
                extent);
    combine_partials(runner, op, mean, partials, rows, parts, extent, out);
}

// inner > 1: a thread per output column, walking the axis with stride inner.
void reduce_columns(KernelRunner& runner, Op op, bool mean, DType element, op::ReduceShape shape, std::uint64_t in,
                    std::uint64_t out) {
    std::size_t const outputs = shape.outer * shape.inner;
    // Few columns along a long axis: split the axis so that the device has threads enough.
    std::size_t const target_threads = multiprocessors(runner) * 2048;
    std::size_t wanted_parts = 1;
    if (outputs < target_threads / 2)
        wanted_parts =
            std::min(ceil_div(target_threads, outputs), std::max<std::size_t>(1, shape.extent / min_column_part));
    // Plain variables, not a structured binding: the launch lambda captures them (clang 14).
    auto const split_extent = split(shape.extent, wanted_parts);
    std::size_t const chunk = split_extent.first, parts = split_extent.second;
    ReduceStage const stage = parts == 1 ? ReduceStage::final : ReduceStage::partial;
    ptx::kernels::ReduceColumnsConfig const config{.op = op,
                                                   .mean = stage == ReduceStage::final && mean,
                                                   .stage = stage,
                                                   .unroll = unroll,
                                                   .block_threads = block_threads,
                                                   .element = element};
    // x: consecutive columns (coalesced), y: the (outer, part) slabs.
    LaunchDims dims;
    std::size_t const block_x = std::min<std::size_t>(block_threads, ceil_div(shape.inner, 32) * 32);
    std::size_t const cap = multiprocessors(runner) * max_blocks_per_multiprocessor;
    std::size_t const grid_x = std::clamp<std::size_t>(ceil_div(shape.inner, block_x), 1, cap);
    std::size_t const slabs = shape.outer * parts;
    std::size_t const grid_y =
        std::clamp<std::size_t>(std::min(slabs, std::max<std::size_t>(1, cap * 4 / grid_x)), 1, 65535);
    dims.grid = {static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y), 1};
    dims.block = {static_cast<unsigned>(block_x), 1, 1};
    auto launch = [&](std::uint64_t value_out, std::uint64_t index_out) {
        runner.run(
            columns_key(config, runner).view(), [config] { return ptx::kernels::reduce_columns(config); }, dims,
            value_out, index_out, in, std::uint64_t{shape.outer}, std::uint64_t{shape.extent},
            std::uint64_t{shape.inner}, std::uint64_t{chunk}, std::uint64_t{parts}, std::uint64_t{shape.extent});
    };
    if (parts == 1) {
        launch(out, 0);
        return;
    }
    Partials const partials(runner, op, outputs * parts);
    launch(partials.values.address(), partials.indices.address());
    combine_partials(runner, op, mean, partials, outputs, parts, shape.extent, out);
}

}  // namespace

Support supports(KernelRunner const&, op::Reduce const& d, OpViews const& v) {
    return detail::reduction_floating("cuda", d.op, v, is_arg_reduction(d.op) ? DType::i64 : DType::f32);
}

void run(KernelRunner& runner, op::Reduce const& d, OpViews const& v) {
    auto const shape = d.shape;
    bool const mean = d.op == Op::mean;
    Op const op = mean ? Op::sum : d.op;
    if (shape.outer * shape.inner == 0) return;
    std::uint64_t const in_address = runner.address(v.in[0]);
    std::uint64_t const out_address = runner.address(v.out[0]);
    // An empty axis reads nothing (the kernels write 0, or NaN for a mean, without touching in).
    if (shape.inner == 1 || shape.extent == 0)
        reduce_rows(runner, op, mean, v.in[0].dtype, shape.outer * shape.inner, shape.extent, in_address, 0, false,
                    out_address);
    else
        reduce_columns(runner, op, mean, v.in[0].dtype, shape, in_address, out_address);
}

Support supports(KernelRunner const&, op::Dot const& d, OpViews const& v) {
    return detail::reduction_floating("cuda", d.op, v, DType::f32);
}

void run(KernelRunner& runner, op::Dot const&, OpViews const& v) {
    reduce_rows(runner, Op::sum, false, v.in[0].dtype, 1, v.in[0].numel(), runner.address(v.in[0]),
                runner.address(v.in[1]), true, runner.address(v.out[0]));
}

}  // namespace rayo::cuda::ops
