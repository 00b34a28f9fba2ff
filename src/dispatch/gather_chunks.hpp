// What the GPU gathers share: the chunk their threads move (the widest that divides an entry and
// both operands' offsets) and the limits of their 32-bit indexing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dispatch/backend.hpp"

namespace rayo::detail {

// 16, 4 or 2 bytes: dividing the entry's bytes and the table's and output's byte offsets (from
// wherever the kernel indexes them).
[[nodiscard]] inline unsigned gather_chunk_bytes(std::size_t entry_bytes, std::size_t table_offset,
                                                 std::size_t out_offset) noexcept {
    for (unsigned c : {16u, 4u})
        if (entry_bytes % c == 0 && table_offset % c == 0 && out_offset % c == 0) return c;
    return 2;
}

// yes when a GPU gather indexes these views with 32-bit counts of 2-byte chunks: contiguous
// operands, fewer than 2^31 ids and table rows, fewer than 2^31 chunks in the output (index_copy:
// in its src, the entries its threads walk).
[[nodiscard]] inline Support gpu_gather_support(std::string const& backend, op::Gather const& g, OpViews const& v) {
    if (!v.in[0].is_contiguous() || !v.out[0].is_contiguous())
        return Support::no(backend + ": a gather takes contiguous tables and outputs");
    constexpr std::uint64_t limit = std::uint64_t{1} << 31;
    std::size_t const walked = g.op == Op::index_copy ? v.in[0].bytes() : v.out[0].bytes();
    if (v.in[1].numel() >= limit || g.rows >= limit || walked / 2 >= limit)
        return Support::no(backend + ": a gather of 2^31 ids, rows or output chunks or more");
    return Support::yes();
}

}  // namespace rayo::detail
