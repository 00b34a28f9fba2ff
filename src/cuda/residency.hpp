// How much dynamic shared memory keeps a kernel to a number of resident blocks per multiprocessor.
#pragma once

namespace rayo::cuda {

// The multiprocessor's shared memory as the driver reports it: what its blocks share, and what
// the driver reserves for each block on top of the block's own (CU_DEVICE_ATTRIBUTE_
// MAX_SHARED_MEMORY_PER_MULTIPROCESSOR and _RESERVED_SHARED_MEMORY_PER_BLOCK). 0 where unknown.
struct MultiprocessorSharedMemory {
    unsigned bytes = 0;
    unsigned reserved_per_block = 0;
};

// The least dynamic shared memory (in the 128-byte unit it is allocated in) with which `blocks`
// blocks fit on a multiprocessor and `blocks` + 1 do not; 0 where that cannot be had (or sm is
// unknown). A launch that asks for at least this much has at most `blocks` blocks resident on any
// multiprocessor, whatever else (registers, threads) would let in.
constexpr unsigned shared_bytes_limiting_residency(unsigned blocks, MultiprocessorSharedMemory sm) noexcept {
    if (blocks == 0 || sm.bytes == 0) return 0;
    unsigned const one_more = sm.bytes / (blocks + 1);  // a block this size (with its reserve) lets blocks + 1 fit
    if (one_more < sm.reserved_per_block) return 0;     // blocks + 1 never fit: nothing to limit
    unsigned const bytes = (one_more - sm.reserved_per_block + 1 + 127) / 128 * 128;
    return static_cast<unsigned long long>(blocks) * (bytes + sm.reserved_per_block) <= sm.bytes ? bytes : 0;
}

}  // namespace rayo::cuda
