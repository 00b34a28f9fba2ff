// The gather family on Vulkan: shaders/gather_rows.comp, one chunk of the output per invocation
// (index_copy: one chunk of src, written at its id); ids out of range go to the device's fault
// record.
#include <algorithm>
#include <cstdint>

#include "dispatch/gather_chunks.hpp"
#include "vulkan/ops/ops.hpp"

namespace rayo::vulkan::ops {

namespace {

// Push constants of gather_rows.comp.
struct GatherPush {
    std::uint32_t total = 0, chunks = 0, n = 0, rows = 0;
    std::uint32_t table_offset = 0, ids_offset = 0, out_offset = 0;  // in chunks; ids in elements
    std::uint32_t op = 0;
    std::uint32_t zero = 0;  // the shader's 16-bit zero
};

}  // namespace

Support supports(ShaderRunner const& r, op::Gather const& g, OpViews const& v) {
    if (!r.physical().storage_buffer_16bit)
        return Support::no("vulkan: a gather needs 16-bit storage (storageBuffer16BitAccess), which this device lacks");
    if (v.in[0].bytes() > 0xffffffffu || v.out[0].bytes() > 0xffffffffu)
        return Support::no("vulkan: a gather of tables or outputs of 4 GiB or more");
    return detail::gpu_gather_support("vulkan", g, v);
}

void run(ShaderRunner& r, op::Gather const& g, OpViews const& v) {
    // The shader reads binding 0 and writes binding 2: the table and out of a gather, index_copy's
    // src and dst. Its "table" is what the ids index.
    bool const scatter = g.op == Op::index_copy;
    TensorView const &read = v.in[0], &ids = v.in[1], &written = v.out[0];
    std::size_t const entry_bytes = bytes_for(read.dtype, g.row);
    // Rows of q6_k, q8_0 or q4_0 blocks may start 2 bytes past a word: bound from the word (the
    // shader copies 2-byte chunks there).
    auto const bind = [&](TensorView const& view, Access access, char const* what) {
        return is_weight_block_type(view.dtype) ? bind_blocks(r, view, view.bytes(), access, what)
                                                : r.bind(view, view.bytes(), access, what);
    };
    Binding const bt = bind(read, Access::read, scatter ? "index_copy source" : "gather table");
    Binding const bi = r.bind(ids, ids.bytes(), Access::read, "gather ids");
    // index_copy leaves dst's other entries as they are: bound for writing, read by nothing.
    Binding const bo = bind(written, Access::write, scatter ? "index_copy destination" : "gather output");
    std::uint32_t const chunk = detail::gather_chunk_bytes(entry_bytes, bt.offset, bo.offset);
    GatherPush push;
    push.total = static_cast<std::uint32_t>((scatter ? read : written).bytes() / chunk);
    if (push.total == 0) return;
    push.chunks = static_cast<std::uint32_t>(entry_bytes / chunk);
    push.n = static_cast<std::uint32_t>(ids.numel());
    push.rows = static_cast<std::uint32_t>(g.rows);
    push.table_offset = bt.element_offset(chunk);
    push.ids_offset = bi.element_offset(4);
    push.out_offset = bo.element_offset(chunk);
    push.op = static_cast<std::uint32_t>(g.op);
    std::uint32_t const workgroup = r.workgroup_size();
    SpecConstants const constants{0u, workgroup, chunk, scatter ? 1u : 0u};
    auto const groups =
        static_cast<std::uint32_t>(std::min<std::size_t>((push.total + workgroup - 1) / workgroup, r.max_groups()));
    r.dispatch(Shader::gather_rows, constants, {bt, bi, bo, r.fault_record()}, push, {groups});
}

}  // namespace rayo::vulkan::ops
