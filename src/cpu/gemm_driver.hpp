// The ISA-independent GEMM driver: BLIS-style cache blocking (NC -> KC -> MC, packed B panel and
// packed A block) around the micro-kernel and packers of a KernelTable, threaded over the pool.
#pragma once

#include <cstddef>

#include "cpu/kernel_table.hpp"

namespace rayo::cpu {

// C = A · B as described by args, computed with k's GEMM entries. C is fully overwritten
// (k == 0 gives zeros); m == 0 or n == 0 does nothing.
void gemm(GemmArgs const& args, KernelTable const& k);

// Cache blocking for a micro-tile of mr x nr, from the cache sizes read at run time: kc (depth of
// a packed panel), mc (rows of a packed A block, a multiple of mr) and nc (columns of a packed B
// panel, a multiple of nr; smaller when `threads` threads share the last-level cache).
struct GemmBlocking {
    std::size_t mc = 0, kc = 0, nc = 0;
};
GemmBlocking gemm_blocking(std::size_t mr, std::size_t nr, std::size_t threads = 1);

}  // namespace rayo::cpu
