// The gather family on the CPU: every id checked first, then one memcpy per entry, the entries
// split over the thread pool; index_copy's entries in order (a repeated id: the last lands).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "cpu/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/error.hpp"

namespace rayo::cpu::ops {

Support supports(KernelRunner const&, op::Gather const&, OpViews const& v) {
    if (!v.in[0].is_contiguous() || !v.out[0].is_contiguous())
        return Support::no("cpu: a gather takes contiguous tables and outputs");
    return Support::yes();
}

void run(KernelRunner& r, op::Gather const& g, OpViews const& v) {
    TensorView const &table = v.in[0], &ids_view = v.in[1], &out = v.out[0];
    std::size_t const n = ids_view.numel();
    auto const* ids = data<std::int32_t const>(ids_view);
    for (std::size_t i = 0; i < n; ++i)
        if (ids[i] < 0 || static_cast<std::uint64_t>(ids[i]) >= g.rows)
            throw IndexError(std::string(to_string(g.op)) + ": id " + std::to_string(ids[i]) + " (ids[" +
                             std::to_string(i) + "]) is out of range for a table of " + std::to_string(g.rows) +
                             " rows");
    std::size_t const row_bytes = bytes_for(table.dtype, g.row);
    auto const* from = data<std::byte const>(table);
    auto* to = data<std::byte>(out);
    std::size_t const entries = g.outer * n;
    if (g.op == Op::index_copy) {  // in[0] is src [outer, n, row], out dst [outer, rows, row]
        for (std::size_t e = 0; e < entries; ++e) {
            std::size_t const o = e / n, id = static_cast<std::size_t>(ids[e % n]);
            std::memcpy(to + (o * g.rows + id) * row_bytes, from + e * row_bytes, row_bytes);
        }
        return;
    }
    std::size_t const grain = std::max<std::size_t>(1, elementwise_grain / std::max<std::size_t>(1, g.row));
    r.pool().parallel_for(entries, grain, [&](std::size_t e0, std::size_t e1) {
        for (std::size_t e = e0; e < e1; ++e) {
            std::size_t const o = e / n, id = static_cast<std::size_t>(ids[e % n]);
            std::memcpy(to + e * row_bytes, from + (o * g.rows + id) * row_bytes, row_bytes);
        }
    });
}

}  // namespace rayo::cpu::ops
