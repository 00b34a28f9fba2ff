// The stages Hopper kernels are composed of: a ring of shared-memory slots that the tensor memory
// accelerator fills and warpgroup MMAs drain, the 64-bit shared-memory matrix descriptors wgmma
// reads its operands through, and the persistent walk over output tiles. gemm_wgmma.cpp composes
// them into the GEMM. Not part of the API.
//
// Layouts: every operand tile is 16-bit, in rows of 64 elements (128 bytes) stored with the
// 128-byte swizzle (TensorMapSwizzle::swizzle_128b), 8 rows making a 1024-byte atom; tiles start
// on 1024-byte boundaries.
#pragma once

#include <cstdint>
#include <functional>

#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels::warpgroup {

inline constexpr unsigned threads = 128;        // a warpgroup: 4 consecutive warps
inline constexpr unsigned swizzle_row = 128;    // bytes of one swizzled row
inline constexpr unsigned swizzle_atom = 1024;  // 8 such rows

// A ring of `slots` shared-memory slots between one producer thread and `consumers` warpgroups.
// Per slot, `full` completes when the producer has announced the slot's bytes and they have
// landed; `empty` when every consumer warpgroup has released the slot. Both are arrays of 8-byte
// mbarriers at consecutive addresses.
struct SlotRing {
    unsigned slots = 0;
    Reg full, empty;  // shared addresses of full[0] and empty[0]

    // Lays the barriers out at `barriers` (8-byte aligned, 16 · slots bytes) and has `leader`'s
    // thread initialise them; the caller synchronises the block afterwards.
    static SlotRing make(Kernel& k, Reg barriers, unsigned slots, unsigned consumers, Reg leader);
    [[nodiscard]] Reg full_at(Kernel& k, Reg slot) const;
    [[nodiscard]] Reg empty_at(Kernel& k, Reg slot) const;
};

// A position in the ring, counted in k steps since the kernel began: slot = count % slots, and
// the parity of the slot's phase = (count / slots) % 2.
struct RingPosition {
    Reg count;  // .u32
    [[nodiscard]] Reg slot(Kernel& k, unsigned slots) const;
    [[nodiscard]] Reg parity(Kernel& k, unsigned slots) const;
    void advance(Kernel& k) const { k.add(count, count, 1); }
};

// wgmma's matrix descriptor for a 128-byte swizzled tile at a shared address: the start address
// in 16-byte units in bits 0-13, the leading and stride byte offsets (16-byte units) in 16-29 and
// 32-45, the swizzle mode (1: 128 bytes) in 62-63.
// K-major operands (a; b stored [n, k]): rows of 64 k values, 8-row atoms `stride_bytes` apart
// (1024); the leading offset is unused. MN-major operands (b stored [k, n]): rows of 64 n values
// (one per k), 8-k atoms `stride_bytes` apart (1024), the next 64 n `leading_bytes` apart.
[[nodiscard]] constexpr std::uint64_t descriptor_bits(unsigned leading_bytes, unsigned stride_bytes) noexcept {
    return (std::uint64_t{(leading_bytes >> 4) & 0x3fffu} << 16) |
           (std::uint64_t{(stride_bytes >> 4) & 0x3fffu} << 32) | (std::uint64_t{1} << 62);
}
// The descriptor (.b64) of the tile at `shared_address`: bits | (address >> 4). Adding n · 16 bytes
// to the tile's start adds n to the descriptor.
[[nodiscard]] Reg matrix_descriptor(Kernel& k, Reg shared_address, std::uint64_t bits);

// The output tiles of a batch of m × n products, tile_m × tile_n each, numbered product by product
// and within a product in groups of `group_m` tile rows, column by column (blocks running together
// share panels of a and b in L2).
struct TileCoordinates {
    Reg product, row0, col0;  // .u32
};
struct TileSchedule {
    unsigned tile_m = 0, tile_n = 0, group_m = 8;
    Reg tiles_m, tiles_n, per_product, total;  // .u32

    static TileSchedule make(Kernel& k, unsigned tile_m, unsigned tile_n, unsigned group_m, Reg m, Reg n, Reg batch);
    [[nodiscard]] TileCoordinates at(Kernel& k, Reg tile) const;
    // body(tile) for tile = first, first + stride, ... below total: a persistent block's work (first
    // ctaid.x and stride nctaid.x, or the same for its cluster).
    void for_each(Kernel& k, Reg first, Reg stride, std::function<void(TileCoordinates const&)> const& body) const;
};

}  // namespace rayo::ptx::kernels::warpgroup
