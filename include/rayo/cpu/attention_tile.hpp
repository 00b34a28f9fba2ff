// The description of one tile of flash attention's online softmax, which the CPU's attention
// driver (src/cpu/ops/attention.cpp) hands to attention_tile_kernel (rayo/cpu/attention.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

namespace rayo::cpu {

struct AttentionTile {
    float* scores = nullptr;  // rows × cols, `ld` apart: q·kᵀ in, the weights exp(s − max) out
    std::size_t ld = 0, rows = 0, cols = 0;
    float scale = 1.0f;
    float const* mask = nullptr;  // the tile's first mask entry, rows `mask_row` apart; null: none
    std::size_t mask_row = 0;
    // Row r sees the tile's first visible + r·visible_step keys (none when that is ≤ 0, all when
    // ≥ cols): step 1 for rows at successive query positions, 0 for heads at one position.
    std::int64_t visible = std::numeric_limits<std::int64_t>::max() / 2;
    std::int64_t visible_step = 1;
    float* row_max = nullptr;  // the running maximum and sum of each row's weights
    float* row_sum = nullptr;
    float* out = nullptr;  // each row's running output (out_cols floats, `ld_out` apart), rescaled
    std::size_t ld_out = 0, out_cols = 0;
};

}  // namespace rayo::cpu
