// The gather family on CUDA: rayo_gather_rows_c<chunk> (rayo/ptx/kernels/gather.hpp), one chunk of
// the output per thread, and for index_copy rayo_scatter_rows_c<chunk>, one chunk of src per
// thread written at its id; ids out of range go to the device's fault record.
#include <cstdint>

#include "cuda/ops/elementwise_launch.hpp"
#include "cuda/ops/ops.hpp"
#include "dispatch/gather_chunks.hpp"
#include "rayo/ptx/kernels/gather.hpp"

namespace rayo::cuda::ops {

Support supports(KernelRunner const&, op::Gather const& g, OpViews const& v) {
    return detail::gpu_gather_support("cuda", g, v);
}

void run(KernelRunner& runner, op::Gather const& g, OpViews const& v) {
    // The kernel's "table" is indexed by id, its "out" entry by entry: index_copy's dst and src.
    bool const scatter = g.op == Op::index_copy;
    TensorView const &table = scatter ? v.out[0] : v.in[0], &ids = v.in[1], &out = scatter ? v.in[0] : v.out[0];
    std::size_t const entry_bytes = bytes_for(table.dtype, g.row);
    std::uint64_t out_address = runner.address(out), table_address = runner.address(table),
                  ids_address = runner.address(ids), fault = runner.fault_record();
    ptx::kernels::GatherKernelConfig const config{
        .chunk_bytes = detail::gather_chunk_bytes(entry_bytes, table_address, out_address),
        .block_threads = elementwise_block_threads,
        .scatter = scatter};
    auto chunks = static_cast<std::uint32_t>(entry_bytes / config.chunk_bytes);
    auto total = static_cast<std::uint32_t>(out.bytes() / config.chunk_bytes);
    auto n = static_cast<std::uint32_t>(ids.numel()), rows = static_cast<std::uint32_t>(g.rows);
    auto code = static_cast<std::uint32_t>(g.op);
    if (total == 0) return;
    KernelKey key;
    key << (scatter ? "scatter_rows/c" : "gather_rows/c") << config.chunk_bytes << "/t" << config.block_threads << "/"
        << ptx::to_string(runner.target());
    runner.run(
        key.view(), [config] { return ptx::kernels::gather_rows(config); }, elementwise_launch(total, false),
        out_address, table_address, ids_address, fault, total, chunks, n, rows, code);
}

}  // namespace rayo::cuda::ops
