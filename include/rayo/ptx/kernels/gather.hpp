// The gather family as PTX: entries of a table copied by id (or, scattering, written at ids), in
// chunks of 2, 4 or 16 bytes, an id out of range recorded in the device's fault record
// (src/dispatch/device_fault.hpp) instead of read or written.
//
//   Kernel k = rayo::ptx::kernels::gather_rows({.chunk_bytes = 16});
#pragma once

#include "rayo/export.hpp"
#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels {

struct RAYO_API GatherKernelConfig {
    unsigned chunk_bytes = 16;     // 2, 4 or 16: what one thread moves per step
    unsigned block_threads = 256;  // .maxntid
    bool scatter = false;          // index_copy: entries written at the ids instead of read from them
};

// For the table seen as [outer, rows, entry] and ids [n]: out[o, i, :] = table[o, ids[i], :], one
// chunk per thread and step of a grid-stride loop over every chunk of the output. An id outside
// [0, rows) gives zeros and writes its record: ids[i] and i, then rows and op + 1, as two .u64
// stores. Parameters, in order: out, table, ids, fault (.u64 each), total (.u32 chunks of the
// output), chunks (.u32 per entry), n (.u32), rows (.u32), op (.u32 the op's code). Named
// rayo_gather_rows_c<chunk_bytes>.
// With `scatter`, the other way: table[o, ids[i], :] = out[o, i, :] (the same parameters, the
// table written and out read; total counts out's chunks), an id outside [0, rows) writing nothing
// and its record. Named rayo_scatter_rows_c<chunk_bytes>.
[[nodiscard]] RAYO_API Kernel gather_rows(GatherKernelConfig const& config);

}  // namespace rayo::ptx::kernels
