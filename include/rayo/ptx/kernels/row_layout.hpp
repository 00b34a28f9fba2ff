// How rayo's row-wise kernels (softmax, log_softmax, layer_norm, rms_norm) spread one row of f32
// values over threads, and the layout rayo picks for a row length.
//
//   using namespace rayo::ptx::kernels;
//   RowConfig row = choose_row_config(4096, 4);   // block layout, 256 threads, 4 float4 per thread
//   unsigned blocks = row_grid(row, rows);        // launch: blocks × row.block threads
//
// Three layouts:
//   * group: `group` lanes of a warp per row (1 to 32, a power of two), the row held in registers
//     (`items` vectors per lane), `block / group` rows per block; reductions are warp shuffles
//     within the group. For short rows (up to 1024 floats).
//   * block: one block per row, the row held in registers (`items` vectors per thread); reductions
//     are warp shuffles, then one value per warp through shared memory. Up to 32768 floats.
//   * block_loop: one block per row, looping over the row `items` vectors per thread at a time.
//     For longer rows: the kernels read the row more than once (softmax twice, rms_norm twice,
//     layer_norm three times); a row in flight is small enough for the re-reads to hit L2.
// Either way the data is read once from DRAM and written once for every row the register layouts
// take. Accesses are `vector` floats wide (ld/st.global.v4.f32 for 4): 4 and 2 need every row
// start to be aligned to vector·4 bytes, so cols % vector == 0 and 16- or 8-byte aligned buffers.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rayo/export.hpp"
#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels {

enum class RowLayout : std::uint8_t { group, block, block_loop };

constexpr std::string_view to_string(RowLayout layout) noexcept {
    switch (layout) {
        case RowLayout::group: return "group";
        case RowLayout::block: return "block";
        case RowLayout::block_loop: return "loop";
    }
    return "?";
}

struct RAYO_API RowConfig {
    RowLayout layout = RowLayout::group;
    unsigned vector = 4;   // floats per access: 1, 2 or 4
    unsigned group = 32;   // lanes per row in the group layout (1, 2, 4, 8, 16, 32); 1 in the others
    unsigned block = 128;  // threads per block: a power of two, 32 to 1024 (64 to 1024 for block layouts)
    unsigned items = 1;    // vectors per thread: in registers (group, block; items·vector <= 32) or
                           // loaded per loop step (block_loop; 1, 2, 4 or 8)
    friend constexpr bool operator==(RowConfig const&, RowConfig const&) = default;
};

// Rows the register layouts take: group up to this many floats, block above it.
inline constexpr std::size_t max_group_row = 1024;
inline constexpr std::size_t max_register_row = 32768;

// The access width rayo uses: 4 (16-byte accesses) when `cols` is a multiple of 4 and the
// buffers' alignment allows it (`max_vector`: the alignment in floats), else 1. The generators
// also take 2; rayo does not pick it, so the kernels it may load stay few.
constexpr unsigned row_vector(std::size_t cols, unsigned max_vector) noexcept {
    return max_vector >= 4 && cols % 4 == 0 ? 4 : 1;
}

// The layout rayo uses for rows of `cols` floats (cols >= 1), given the widest access width the
// buffers' alignment allows (4: every buffer 16-byte aligned, else 1). Items are powers of two, so
// a few dozen kernels serve every row length (the tail of a row is predicated off).
constexpr RowConfig choose_row_config(std::size_t cols, unsigned max_vector) noexcept {
    unsigned const v = row_vector(cols, max_vector);
    std::size_t const vectors = (cols + v - 1) / v;
    auto items_for = [&](std::size_t threads) {
        return static_cast<unsigned>(std::bit_ceil((vectors + threads - 1) / threads));
    };
    if (cols <= max_group_row) {
        // At least two vectors per lane where the row allows: more bytes in flight per thread.
        if (vectors <= 64) {
            auto const group = static_cast<unsigned>(std::bit_ceil((vectors + 1) / 2));
            return {RowLayout::group, v, group, 128, vectors == 1 ? 1u : 2u};
        }
        return {RowLayout::group, v, 32, 128, items_for(32)};
    }
    if (cols <= max_register_row) {
        // The smallest block that keeps a thread at 16 floats or fewer, else 32 (registers).
        for (unsigned threads : {128u, 256u, 512u})
            if (items_for(threads) * v <= 16) return {RowLayout::block, v, 1, threads, items_for(threads)};
        if (items_for(512) * v <= 32) return {RowLayout::block, v, 1, 512, items_for(512)};
        return {RowLayout::block, v, 1, 1024, items_for(1024)};
    }
    return {RowLayout::block_loop, v, 1, 512, 4};
}

// Every config choose_row_config returns (for any cols and alignment): the kernels rayo may load,
// which the tests assemble and a warm-up could build ahead of time.
inline std::vector<RowConfig> chosen_row_configs() {
    std::vector<RowConfig> all;
    // Past max_register_row the choice no longer depends on cols beyond its divisibility by 4.
    for (std::size_t cols = 1; cols <= 2 * max_register_row + 4; ++cols)
        for (unsigned max_vector : {1u, 4u}) {
            RowConfig const c = choose_row_config(cols, max_vector);
            if (std::find(all.begin(), all.end(), c) == all.end()) all.push_back(c);
        }
    return all;
}

// Rows one block handles.
constexpr unsigned rows_per_block(RowConfig const& config) noexcept {
    return config.layout == RowLayout::group ? config.block / config.group : 1;
}

// Blocks for `rows` rows (grid.x).
constexpr std::size_t row_grid(RowConfig const& config, std::size_t rows) noexcept {
    std::size_t const per_block = rows_per_block(config);
    return (rows + per_block - 1) / per_block;
}

// The config spelled for kernel names and cache keys, e.g. "block_v4_g1_t256_i4".
inline std::string to_string(RowConfig const& config) {
    return std::string(to_string(config.layout)) + "_v" + std::to_string(config.vector) + "_g" +
           std::to_string(config.group) + "_t" + std::to_string(config.block) + "_i" + std::to_string(config.items);
}

// Throws BuildError naming the field when the generators cannot build `config`.
inline void validate(RowConfig const& config, std::string_view kernel) {
    auto fail = [&](std::string const& why) {
        throw BuildError("ptx kernel generator '" + std::string(kernel) + "' (" + to_string(config) + "): " + why);
    };
    if (config.vector != 1 && config.vector != 2 && config.vector != 4) fail("vector must be 1, 2 or 4");
    if (!std::has_single_bit(config.block) || config.block < 32 || config.block > 1024)
        fail("block must be a power of two from 32 to 1024");
    if (!std::has_single_bit(config.items)) fail("items must be a power of two");
    if (config.layout == RowLayout::group) {
        if (!std::has_single_bit(config.group) || config.group > 32) fail("group must be 1, 2, 4, 8, 16 or 32 lanes");
    } else {
        if (config.group != 1) fail("group must be 1 outside the group layout");
        if (config.block < 64) fail("the block layouts need at least 64 threads");
    }
    if (config.layout == RowLayout::block_loop) {
        if (config.items > 8) fail("block_loop loads 1, 2, 4 or 8 vectors per step");
    } else if (config.items * config.vector > 32) {
        fail("a thread holds at most 32 floats in registers (items · vector)");
    }
}

}  // namespace rayo::ptx::kernels
