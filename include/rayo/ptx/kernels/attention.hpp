// The attention kernels: softmax(q·kᵀ·scale [+ mask]) · v per batch and head without storing the
// score matrix (flash attention), as PTX.
//
//   using namespace rayo::ptx;
//   kernels::AttentionConfig const c{.algorithm = kernels::AttentionAlgorithm::tensor_core,
//                                    .element = DType::f16, .head_dim = 128};
//   std::string const ptx = kernels::attention(c).emit(Target::sm_90);
//
// Operands, as op::Attention (src/dispatch/op_descriptor.hpp) documents them: q [batch, q_len,
// heads, head_dim], k and v [batch, kv_len, kv_heads, head_dim], out like q, contiguous, one
// element type; query head h reads key/value head h / (heads / kv_heads); query row i sees key j
// when !causal or j ≤ query_offset + i; the optional mask is f32, its element (b, h, i, j) at
// b·mask_batch + h·mask_head + i·mask_row + j. Scores, softmax and sums are f32; a row that sees
// no key (or only −Inf scores) gives zeros. The tensor-core and wgmma kernels need 16-byte
// aligned operands; the simt kernel too unless built with `aligned` false.
//
// Four algorithms, the first three needing sm_80 (cp.async), wgmma sm_90a:
//   * tensor_core (f16, bf16): a block owns `warps` × 16 · warp_tiles query rows of one (batch,
//     head); each warp takes its rows as mma fragments (kept in registers while they fit) and walks the key blocks of
//     64 keys, which cp.async brings into shared memory one block ahead of use; S = q·kᵀ on mma.sync.m16n8k16 (f32), an
//     online softmax in registers (exp2 of log2e-prescaled scores), P rounded to the element type and fed straight back
//     as the A operand of O += P·V (V through ldmatrix.trans). Key blocks past the causal limit of the block's last row
//     are never visited; only blocks that cross the diagonal, the end of the keys, or a mask take the masked path; one
//     barrier a key block. Grid: x = heads, y = ⌈q_len / (16·warps·warp_tiles)⌉ (row blocks taken last to first, so the
//     longest causal blocks of every head start first), z = batch; 32·warps threads.
//   * wgmma (f16, bf16, head_dim 64 or 128, no mask; sm_90a): Hopper's warp-specialised flash
//     attention. A block owns 128 query rows of one (batch, head) and has 3 warpgroups: in the first,
//     one thread copies q once and each key block's k tile (128 keys) by TMA into a ring of two
//     slots, another thread the v tiles into a ring of their own (tensor maps from
//     attention_tensor_maps); the other two take 64 rows each: S = q·kᵀ on wgmma m64n128k16 from
//     shared memory, the online softmax in registers, and O += P·V with P from registers, block
//     j's softmax running under block j − 1's P·V, the two consumers taking turns at the tensor
//     cores. Grid: x = ⌈q_len / 128⌉ · heads (in groups of group_heads heads, within a group heads
//     fastest and row blocks last to first), y = batch; 384 threads.
//   * simt (any element type): every warp is an independent worker over `rows` query rows of one
//     (batch, key/value head) — the rows are (query i, head of the group) pairs, i·group + g, so one
//     warp serves all query heads that share a key/value head — and one split of the keys. Tiles
//     of 32 keys are copied by cp.async into the warp's own shared memory, double-buffered; lane l
//     scores key l against every row (q, prescaled, broadcast from shared memory), the tile's
//     softmax update is done across lanes, and P·V with lanes along head_dim. With `partial` the
//     warp writes its unnormalised state (row max m, sum l in the exp2 domain, acc[head_dim]) for
//     attention_combine to merge; else the normalised row to out.
//   * decode (f16, bf16, the tensor_core head_dims, no mask): a block owns one split of
//     32·warps keys of one (batch, key/value head) and every query row of its group (q_len ·
//     heads / kv_heads ≤ 16, padded to one m16 tile), so every key is read once and the whole GPU
//     streams the cache. All its k/v rows arrive by cp.async at once; each warp scores its 32 keys
//     and adds P·V on mma.sync; the warps' states merge in shared memory into one a row: with
//     `partial` a partial state for attention_combine (split = ctaid.x), else the normalised row.
//
// tensor_core parameters, in order: q, k, v, out, mask (.u64), q_len, kv_len, heads, kv_heads
// (.u32), query_offset (.s32), query_position (.u64: where not 0, the address of an s32 read in
// place of query_offset, clamped to [0, kv_len]), causal (.u32, 0 or 1), scale_log2 (.f32:
// scale·log2(e)), mask_batch, mask_head, mask_row (.u64 elements). simt: the same, then batch, splits, split_keys
// (.u32: keys a split, a multiple of 32) and partials (.u64: the m/l pairs of every (output row,
// split), then their acc rows; see attention_partial_bytes). Grid: x = ⌈batch · kv_heads ·
// ⌈q_len·group / rows⌉ · splits / warps⌉, 32·warps threads. decode: the frame, then batch, splits
// (.u32) and partials (.u64); grid: x = splits (⌈keys seen / (32·warps)⌉, or of kv_len with query_position), y =
// kv_heads, z = batch; 32·warps threads. wgmma: q_map, k_map, v_map (tensor maps), out (.u64), q_len, kv_len, heads,
// kv_heads (.u32), query_offset (.s32), query_position (.u64), causal (.u32), scale_log2
// (.f32), group_heads (.u32, 1 to heads).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "rayo/dtype.hpp"
#include "rayo/export.hpp"
#include "rayo/ptx/kernel.hpp"
#include "rayo/ptx/tensor_map.hpp"

namespace rayo::ptx::kernels {

enum class AttentionAlgorithm : std::uint8_t { tensor_core, simt, decode, wgmma };

struct RAYO_API AttentionConfig {
    AttentionAlgorithm algorithm = AttentionAlgorithm::tensor_core;
    DType element = DType::f16;  // tensor_core, decode: f16 or bf16; simt: f32, f16 or bf16
    unsigned head_dim = 128;     // tensor_core, decode: 64, 80, 96, 128 or 256; wgmma: 64 or 128; simt: 1 to 256
    bool mask = false;           // an additive f32 mask is read (not decode)
    unsigned warps = 4;          // tensor_core: 4 or 8; simt: 1 to 8; decode: 4; wgmma: 12
    unsigned rows = 4;           // simt: query rows a warp, 1 to 8
    unsigned warp_tiles = 1;     // tensor_core: m16 tiles of query rows a warp, 1 or 2
    bool partial = false;        // simt, decode: write partial states instead of out
    // simt: tiles copied by 16-byte cp.async (q, k, v and out 16-byte aligned, rows of a multiple
    // of 16 bytes); false: element by element through registers (2-byte aligned 16-bit data).
    bool aligned = true;
};

// Throws BuildError for a configuration the generator does not take.
RAYO_API void check_attention_config(AttentionConfig const& config);

// The kernel's name, which spells every field (equal names, equal kernels).
[[nodiscard]] RAYO_API std::string attention_name(AttentionConfig const& config);

[[nodiscard]] RAYO_API Kernel attention(AttentionConfig const& config);

// What a simt block may hold of shared memory (every sm_80+ device has it): a warp's two
// tile slots when they fit in it (with its q rows), else one.
inline constexpr unsigned attention_combine_threads = 256;
inline constexpr unsigned attention_simt_block_budget = 96 * 1024;
// A simt warp's shared bytes, and the warps a simt block of that config should have (≤ 4, within
// the budget).
[[nodiscard]] RAYO_API unsigned attention_simt_warp_bytes(AttentionConfig const& config);
[[nodiscard]] RAYO_API unsigned attention_simt_warps(DType element, unsigned head_dim, unsigned rows);

// Dynamic shared memory a block of attention(config) needs.
[[nodiscard]] RAYO_API unsigned attention_shared_bytes(AttentionConfig const& config);

// The tensor maps a wgmma kernel takes (q_map, k_map, v_map) for q, k and v at device addresses
// `q`, `k` and `v` (16-byte aligned) of the shapes op::Attention gives them, as TensorMapSpecs for
// the runtime to encode.
struct RAYO_API AttentionOperands {
    std::uint64_t q = 0, k = 0, v = 0;
    std::uint64_t batch = 1, q_len = 0, kv_len = 0, heads = 1, kv_heads = 1;
};
[[nodiscard]] RAYO_API std::array<TensorMapSpec, 3> attention_tensor_maps(AttentionConfig const& config,
                                                                          AttentionOperands const& operands);

// Bytes of the partial states of `rows` output rows ([batch, q_len, heads] rows) in `splits` splits.
[[nodiscard]] RAYO_API std::uint64_t attention_partial_bytes(std::uint64_t rows, unsigned splits, unsigned head_dim);

// Merges the partial states of a simt or decode kernel with `partial`: out row r = Σ_s
// acc_s·2^(m_s − M) / Σ_s l_s·2^(m_s − M), M = max_s m_s (zeros where every l_s is 0). A block a
// row: its 8 warps take every 8th split, 4 at a time, with a running max, then meet in shared
// memory. Parameters: partials, out (.u64), rows, splits (.u32). Grid: x = rows, 256 threads.
[[nodiscard]] RAYO_API Kernel attention_combine(DType element, unsigned head_dim);

// Every configuration rayo's CUDA attention may run on a device of `target` (for the assembly
// tests): on sm_90 also the wgmma kernels.
[[nodiscard]] RAYO_API std::vector<AttentionConfig> attention_configs(Target target);

}  // namespace rayo::ptx::kernels
