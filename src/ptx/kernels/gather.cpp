// The gather kernel (rayo/ptx/kernels/gather.hpp).
#include "rayo/ptx/kernels/gather.hpp"

#include <string>
#include <vector>

#include "ptx/kernels/strided_layout.hpp"

namespace rayo::ptx::kernels {

namespace {

// One chunk: a .v4.u32 for 16 bytes, else one register of the chunk's width.
std::vector<Reg> load_chunk(Kernel& k, unsigned bytes, Reg address) {
    if (bytes == 16) return k.ld_vector(Space::global, Type::u32, 4, address);
    return {k.ld(Space::global, bytes == 4 ? Type::b32 : Type::b16, address)};
}

void store_chunk(Kernel& k, unsigned bytes, Reg address, std::vector<Reg> const& values) {
    if (bytes == 16)
        k.st_vector(Space::global, Type::u32, address, values);
    else
        k.st(Space::global, bytes == 4 ? Type::b32 : Type::b16, address, values[0]);
}

std::vector<Reg> zero_chunk(Kernel& k, unsigned bytes) {
    if (bytes == 16) return {k.mov(Type::u32, 0u), k.mov(Type::u32, 0u), k.mov(Type::u32, 0u), k.mov(Type::u32, 0u)};
    return {k.mov(bytes == 4 ? Type::b32 : Type::b16, 0u)};
}

}  // namespace

Kernel gather_rows(GatherKernelConfig const& config) {
    unsigned const bytes = config.chunk_bytes;
    std::string const name =
        std::string(config.scatter ? "rayo_scatter_rows_c" : "rayo_gather_rows_c") + std::to_string(bytes);
    if (bytes != 2 && bytes != 4 && bytes != 16)
        throw BuildError("ptx kernel '" + name + "': chunks of 2, 4 or 16 bytes");
    Kernel k(name);
    k.max_threads(config.block_threads);
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const table = k.cvta_to_global(k.param(Type::u64, "table"));
    Reg const ids = k.cvta_to_global(k.param(Type::u64, "ids"));
    Reg const fault = k.cvta_to_global(k.param(Type::u64, "fault"));
    Reg const total = k.param(Type::u32, "total");
    Reg const chunks = k.param(Type::u32, "chunks");
    Reg const n = k.param(Type::u32, "n");
    Reg const rows = k.param(Type::u32, "rows");
    Reg const op = k.param(Type::u32, "op");
    layout_detail::grid_loop_u32(k, total, [&](Reg i) {
        Reg const entry = k.div(i, chunks);
        Reg const chunk = k.sub(i, k.mul(entry, chunks));
        Reg const o = k.div(entry, n);
        Reg const at = k.sub(entry, k.mul(o, n));
        Reg const id = k.ld(Space::global, Type::u32, k.element_address(ids, at, 4));
        Reg const at_out = k.element_address(out, i, bytes);
        // Unsigned, so negative ids are out of range too.
        k.if_then_else(
            k.setp(Cmp::lt, id, rows),
            [&] {
                Reg const table_entry = k.add(k.mul_wide(o, rows), k.cvt(Type::u64, id));
                Reg const table_chunk = k.add(k.mul(table_entry, k.cvt(Type::u64, chunks)), k.cvt(Type::u64, chunk));
                Reg const at_table = k.add(table, k.mul(table_chunk, static_cast<std::uint64_t>(bytes)));
                if (config.scatter)
                    store_chunk(k, bytes, at_table, load_chunk(k, bytes, at_out));
                else
                    store_chunk(k, bytes, at_out, load_chunk(k, bytes, at_table));
            },
            [&] {
                if (!config.scatter) store_chunk(k, bytes, at_out, zero_chunk(k, bytes));
                k.if_then(k.setp(Cmp::eq, chunk, 0u), [&] {
                    k.st(Space::global, Type::u64, fault, k.join(Type::u64, id, at));
                    k.st(Space::global, Type::u64, k.add(fault, std::uint64_t{8}),
                         k.join(Type::u64, rows, k.add(op, 1u)));
                });
            });
    });
    return k;
}

}  // namespace rayo::ptx::kernels
