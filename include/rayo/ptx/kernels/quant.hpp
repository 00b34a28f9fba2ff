// Block-quant kernels (q4_k, q5_k, q6_k, q8_k, q8_0, q4_0; layouts in rayo/quant.hpp) as generated PTX:
//
//   * dequantize        blocks -> f32, bit for bit the CPU's floats (same f16 -> f32 conversion, the same
//                       f32 products and differences in the same order, no fused multiply-add);
//   * quantize_q8       f32 -> q8_k, byte for byte the CPU reference quantizer (also for ±inf and NaN);
//   * quantize_activations + quant_gemv
//                       linear(x, w) for a few rows of x (decoding): x is quantized on the device into int8
//                       records laid out for the GEMV's lanes, then every weight byte is read once and
//                       multiplied with dp4a (q4_k, q5_k, q6_k, q8_0, q4_0);
//   * quant_gemv_spanning
//                       linear(x, w) for one row of x: each thread's share of x loaded, quantized and
//                       held in registers, the weights loaded straight into registers (q4_k) or
//                       streamed through per-warp cp.async rings (q4_k, q6_k);
//   * gemm_activations + quant_gemm
//                       linear(x, w) for many rows of x: x converted to f16 once, weight tiles decoded to f16
//                       in shared memory, multiplied on tensor cores (mma.sync m16n8k16, f32 accumulation).
//
// Every function returns a ptx::Kernel that any target from sm_80 on can emit; none needs a GPU:
//
//   std::string text = rayo::ptx::kernels::quant_gemv({.weight = rayo::DType::q4_k, .rows = 1})
//                          .emit(rayo::ptx::Target::sm_90);
//
// Parameters are listed per kernel, in order: addresses are .u64 (generic, as the driver gives them),
// counts .u32. An invalid configuration throws ptx::BuildError.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rayo/dtype.hpp"
#include "rayo/export.hpp"
#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels {

// ---- dequantize ---------------------------------------------------------------------------------

// Parameters: (u64 blocks, u64 out, u32 count): `count` blocks of `type` -> count·256 (q8_0, q4_0:
// count·32) f32 values (or f16: each f32 value rounded to nearest). One warp decodes one 256-value
// block (each lane 8 values), or eight q8_0 / q4_0 blocks (four lanes a block);
// launch ceil(count / (dequantize_blocks_per_warp(type)·threads/32)) blocks of `threads` threads.
// `out` must be 16-byte aligned; q4_k and q5_k blocks 16-byte, q8_k 4-byte, q6_k, q8_0, q4_0 2-byte.
struct RAYO_API DequantizeConfig {
    DType type = DType::q4_k;  // q4_k, q5_k, q6_k, q8_k, q8_0 or q4_0
    unsigned threads = 256;    // a multiple of 32, at most 1024
    Type output = Type::f32;   // f32, or f16 (what the K-quant GEMM on Hopper multiplies)
};
[[nodiscard]] RAYO_API Kernel dequantize(DequantizeConfig const& config);
constexpr unsigned dequantize_blocks_per_warp(DType type) noexcept {
    return type == DType::q8_0 || type == DType::q4_0 ? 8 : 1;
}

// ---- q8_k quantization --------------------------------------------------------------------------

// Parameters: (u64 x, u64 out, u32 count): count·256 f32 values (16-byte aligned) -> `count` q8_k
// blocks, exactly the reference's bytes: max = the first value of largest magnitude, iscale =
// −127/max, q = min(127, round-half-even(iscale·x)) through the 1.5·2²³ trick, d = 1/iscale, bsums.
// Non-finite inputs give the x86 reference's bytes too (its NaN results are emulated). One warp per
// block; launch as dequantize.
struct RAYO_API QuantizeQ8Config {
    unsigned threads = 256;  // a multiple of 32, at most 1024
};
[[nodiscard]] RAYO_API Kernel quantize_q8(QuantizeQ8Config const& config = {});

// ---- the GEMV path ------------------------------------------------------------------------------

// The activation records quantize_activations writes and quant_gemv reads: one record per 256
// values of x (record r = row·blocks_per_row + block, so a row-major x [m, k] is simply count =
// m·k/256 consecutive records). x ≈ main + residual where main = q8_k(x) and residual =
// q8_k(x − d·main) exactly as the CPU's QuantActivation (the CPU's q8_k bytes), so ~15 bits of x
// reach the integer dot products; the int8 quants are stored in the order the GEMV's lanes read them:
//
// q4_k weights (640 bytes): lane j (0..7) of a block's eight lanes multiplies qs bytes
//   [16j, 16j+16): values 64c + 16s + t (low nibbles) and 64c + 32 + 16s + t (high), c = j/2, s = j%2.
//   [0, 512)    quants: piece p (0: main low, 1: main high, 2: residual low, 3: residual high),
//               lane j, 16 bytes at 128p + 16j
//   [512, 640)  lane j's slot at 512 + 16j: int16 sums of its main low / main high / residual low /
//               residual high 16 quants (the q4_k min term), f32 d_main, f32 d_residual
// q6_k weights (768 bytes): lane j (0..15) of a block's sixteen lanes takes values
//   128h + 32i + l0 + t (i, t = 0..3), h = j/8, l0 = 4·(j%8).
//   [0, 512)    quants: piece p (0: main, 1: residual), lane j, 16 bytes (i = 0..3) at 256p + 16j
//   [512, 768)  lane j's slot at 512 + 16j: f32 d_main, f32 d_residual, 8 bytes unused
// q5_k weights: q4_k's layout (the fifth bits change the codes, not which values a lane takes).
// q8_0 / q4_0 weights (640 bytes): lane j (0..7) takes values [32j, 32j+32), one weight block.
//   [0, 256)    main quants in value order (lane j's at 32j), [256, 512) residual quants
//   [512, 640)  lane j's slot at 512 + 16j: s32 Σ of its 32 main quants, s32 Σ of the residual
//               ones (q4_0's −8), f32 d_main, f32 d_residual
//   A row of x whose length (k, a multiple of 32) is not a multiple of 256 takes ceil(k/256) records,
//   its last one quantized from the values zero-padded to 256 (which changes neither scale nor codes).
// Without the residual, its quants are left unwritten (never read) and its sums and d are zero.
constexpr std::size_t activation_record_bytes(DType weight) noexcept { return weight == DType::q6_k ? 768 : 640; }
constexpr bool small_block_weights(DType weight) noexcept { return weight == DType::q8_0 || weight == DType::q4_0; }

// Parameters: (u64 x, u64 records, u32 count): count·256 f32 values (16-byte aligned) -> `count`
// records (16-byte aligned). One warp per record; launch as dequantize (one block per warp).
// q8_0 / q4_0 layouts take a fourth parameter, u32 k: x is rows of k values (k a multiple of 32)
// and record r is row r / ceil(k/256)'s chunk r % ceil(k/256), zero-padded past k.
struct RAYO_API QuantActivationsConfig {
    DType weight = DType::q4_k;  // the layout: q4_k (also q5_k's), q6_k, or q8_0 / q4_0 (one layout)
    bool residual = true;        // false: main only (ggml's single q8_k, ~0.5-5% error on linear)
    unsigned threads = 256;
};
[[nodiscard]] RAYO_API Kernel quantize_activations(QuantActivationsConfig const& config);

// q5_k weights take every form of q4_k's (lane j also loads qh bytes [16·(j%2), +16) and ORs each
// code's fifth bit in; codes up to 31 keep dp4a exact). q8_0 / q4_0 weights take the records form
// only (not fused): one lane a block (32 values, the 2-byte aligned bytes loaded as aligned words
// re-assembled by prmt, as q6_k's), 32 blocks a warp step, record b/8 slot b%8, dp4a s8×s8 (q8_0)
// or u8×s8 minus 8·Σx (q4_0), then f32 by d·d_x; blocks_per_row counts 32-value blocks.
// Parameters: (u64 w, u64 records, u64 out, u32 n, u32 blocks_per_row):
// out[a, r] = Σ_k x[a, k]·w[r, k] for a < rows, r < n, with w [n rows of blocks_per_row blocks of
// `weight`], records from quantize_activations (rows·blocks_per_row of them) and out f32 [rows, n].
// One warp per weight row; the lanes of a warp cover 4 q4_k blocks (8 lanes each, 16-byte loads) or
// 2 q6_k blocks (16 lanes each, aligned 4-byte loads: q6_k blocks are only 2-byte aligned), `unroll`
// such groups per step; integer sums by dp4a (weights u8 or, for q6_k, s8 q−32) with the q4_k min
// term from the records' sums, then f32 per block, and a shuffle reduction at the end. Launch
// ceil(n / warps) blocks of 32·warps threads. q4_k rows must be 16-byte aligned, q6_k 2-byte.
//
// fused: no records kernel. Parameters (u64 w, u64 x, u64 out, u32 n, u32 blocks_per_row) with x f32
// [rows, blocks_per_row·256] (16-byte aligned). Every block first starts its warps' first weight rows
// towards L2 (prefetch), then quantizes all of x into records in dynamic shared memory
// (quant_gemv_fused_shared_bytes; one warp per record, the same layout and residual scheme, but
// q = rni(x·127/amax) rather than the reference's bytes: the same accuracy), then its warps take weight
// rows ctaid·warps + warp + i·gridDim·warps. Launch any grid (a few blocks per multiprocessor: each
// block quantizes x once).
//
// fused with stages > 0 (streamed): each warp streams its weight rows through a ring of `stages`
// slots of 8 blocks in shared memory by cp.async, `stages` − 1 slots ahead of the one it multiplies,
// so the loads of later blocks are in flight while it computes (and while the block quantizes x:
// the first slots are requested before that). A warp's slots run on across its rows. The ring
// follows x's records in dynamic shared memory (quant_gemv_shared_bytes). Needs 16-byte aligned
// weight rows: q4_k always (144-byte blocks), q6_k when blocks_per_row is a multiple of 8.
struct RAYO_API QuantGemvConfig {
    DType weight = DType::q4_k;  // q4_k, q5_k, q6_k, q8_0 or q4_0 (the last two: not fused)
    unsigned rows = 1;           // rows of x, 1..8: each lane keeps one accumulator per row
    bool residual = true;        // must match the records
    unsigned warps = 4;          // warps per block (1..32)
    unsigned unroll = 2;         // block groups in flight per lane: 1, 2 or 4 (not streamed)
    bool fused = false;          // quantize x into shared memory in the GEMV itself (above)
    unsigned stages = 0;         // fused only: 0 loads weights into registers, 2..8 streams them (above)
};
[[nodiscard]] RAYO_API Kernel quant_gemv(QuantGemvConfig const& config);
constexpr std::size_t quant_gemv_fused_shared_bytes(DType weight, unsigned rows, std::size_t blocks_per_row) noexcept {
    return rows * blocks_per_row * activation_record_bytes(weight);
}
// Blocks per slot of the streamed GEMV's ring, and the slot's bytes.
constexpr unsigned quant_gemv_slot_blocks = 8;
constexpr std::size_t quant_gemv_slot_bytes(DType weight) noexcept {
    return quant_gemv_slot_blocks * static_cast<unsigned>(size_of(weight));
}
// The dynamic shared memory a fused GEMV launch needs: x's records, then (streamed) the warps' rings.
constexpr std::size_t quant_gemv_shared_bytes(QuantGemvConfig const& config, std::size_t blocks_per_row) noexcept {
    if (!config.fused) return 0;
    return quant_gemv_fused_shared_bytes(config.weight, config.rows, blocks_per_row) +
           std::size_t{config.warps} * config.stages * quant_gemv_slot_bytes(config.weight);
}

// The spanning GEMV: one row of x, q4_k, q5_k, q6_k, q8_0 or q4_0 weights. Parameters (u64 w, u64 x, u64 out, u32 n):
// out[r] = Σ_k x[k]·w[r, k] for r < n, w [n rows of blocks_per_row blocks] (16-byte aligned), x f32
// [blocks_per_row·256] (16-byte aligned). A group of quant_gemv_spanning_group_threads threads spans
// a weight row, eight threads a block and each thread the same 32 values of every row, so its share
// of x stays in registers, quantized to int16 with one scale per 256 values (~15 bits, the accuracy
// of the residual records): share_x quantizes x once per block into shared memory, whence each
// thread loads its words; otherwise each thread loads its 32 values from global memory and
// quantizes them itself, the block's scale found among its 8 threads by shuffles (no shared x, no
// barrier before the first product; the better choice with one group a block). Products are dp2a
// (int16 pairs × u8 codes, q8_0's s8). The "blocks" of a row here are its 256-value groups: a q4_k,
// q5_k or q6_k block, or eight q8_0 / q4_0 blocks, of which thread j of the eight takes block j. Each block holds
// `groups` groups and takes groups·batch rows per step, striding over the rows by gridDim·groups·batch; the warps' sums
// of all steps are added up in a fixed order after the last (no barrier between steps).
//
// How the weights arrive: stages = 0 (q4_k, q5_k): per row a thread loads the block's 16-byte header
// and its 16 qs bytes (q5_k: and 16 qh bytes) from global memory into registers (pipelined: a step
// ahead). stages ≥ 2:
// each warp streams the bytes its four blocks of a row span through a ring of `stages` slots in
// shared memory by cp.async, stages − 1 steps ahead of the one it multiplies, so many more bytes
// are in flight than registers could hold; q6_k, q8_0 and q4_0 (2-byte aligned blocks) need this
// form, q6_k rows of a multiple of 8 blocks (16-byte aligned). bulk (sm_90, with stages ≥ 2): the block's steps
// come instead through a ring of `stages` slots of whole steps (groups·batch contiguous rows, 16-byte
// aligned), each filled by one bulk copy that one thread issues stages − 1 steps ahead, its landing
// awaited on an mbarrier and its slot released by every thread on another. Launch a persistent grid of any size,
// groups·group_threads threads, dynamic shared memory quant_gemv_spanning_shared_bytes.
constexpr unsigned quant_gemv_spanning_max_blocks = 128;  // a group of at most 1024 threads
constexpr unsigned quant_gemv_spanning_max_stages = 16;
constexpr unsigned quant_gemv_spanning_max_prefetch_steps = 16;
enum class GemvInput : std::uint8_t { x, swiglu, rms_norm };
struct RAYO_API QuantGemvSpanningConfig {
    DType weight = DType::q4_k;   // q4_k, q5_k, q6_k, q8_0 or q4_0
    unsigned blocks_per_row = 1;  // 1..quant_gemv_spanning_max_blocks, baked into the kernel
    unsigned groups = 1;          // row groups per block
    unsigned batch = 2;           // rows per group per step: 1, 2 or 4
    bool pipelined = true;        // stages = 0: load the next step's rows into registers during this one's work
    unsigned stages = 0;          // 0, or 2..quant_gemv_spanning_max_stages slots of each warp's ring
    bool share_x = true;          // x quantized once per block into shared memory (above)
    // .maxnreg: 24..255 with block threads · max_registers ≤ 65536, or 0 for ptxas's choice (which
    // may keep the kernel to fewer registers by issuing the next step's loads late).
    unsigned max_registers = 0;
    // sm_90 only. The rows of the CTA's first prefetch_steps (≤ quant_gemv_spanning_max_prefetch_steps)
    // steps are prefetched into L2 first thing, one cp.async.bulk.prefetch a step; early_start then
    // lets the next kernel launch (griddepcontrol.launch_dependents) and waits for the previous one
    // (griddepcontrol.wait) before the kernel reads x or anything else, so that it may be launched
    // to start early (LaunchDims::starts_early in the CUDA backend).
    unsigned prefetch_steps = 0;
    bool early_start = false;
    bool bulk = false;  // stages ≥ 2 slots of whole steps filled by bulk copies (above)
    // early_start only: the weights of the first steps (at most the form's first requests: stages − 1
    // for a ring, 1 pipelined) are requested before the wait, so that they stream in while the kernels
    // before finish. Only for weights that no kernel which may still be running writes.
    unsigned weight_steps_before_wait = 0;
    // early_start only: x is read before the wait (after the weights above): quantized into shared
    // memory there (share_x), or loaded there and quantized after it. Only for an x that no kernel
    // which may still be running writes.
    bool x_before_wait = false;
    // A fifth parameter, bias (.u64, f32 [n]): row r's result gets bias[r] added (linear's bias,
    // e.g. the residual stream of a decode step) instead of a separate add kernel.
    bool bias = false;
    // What is multiplied (GemvInput): x, or an input formed from x and the parameter `second` (.u64,
    // f32 [k], after bias) as x is loaded: silu(x)·second (swiglu), or x·second scaled by
    // 1/sqrt(mean(x²) + eps) (rms_norm, `eps` .f32 the last parameter; the scale, common to every
    // row, is applied to the row sums).
    GemvInput input = GemvInput::x;
};
[[nodiscard]] RAYO_API Kernel quant_gemv_spanning(QuantGemvSpanningConfig const& config);
constexpr unsigned quant_gemv_spanning_group_threads(unsigned blocks_per_row) noexcept {
    return (8 * blocks_per_row + 31) / 32 * 32;
}
// Bytes of 256 values of a row: one K-quant block, or eight q8_0 / q4_0 blocks.
constexpr unsigned quant_gemv_spanning_group_bytes(DType weight) noexcept {
    return small_block_weights(weight) ? 8 * static_cast<unsigned>(size_of(weight))
                                       : static_cast<unsigned>(size_of(weight));
}
// One row of a warp's slot: its four 256-value groups, q6_k from the 16-byte boundary below them.
constexpr unsigned quant_gemv_spanning_slot_row_bytes(DType weight) noexcept {
    return weight == DType::q6_k ? 848 : (4 * quant_gemv_spanning_group_bytes(weight) + 15) / 16 * 16;
}
// Dynamic shared memory for a launch whose blocks take at most `steps` steps each
// (ceil(n / (gridDim·groups·batch))): (share_x) x and its scales, the warps' rings, and every
// step's warp sums.
constexpr std::size_t quant_gemv_spanning_shared_bytes(QuantGemvSpanningConfig const& config,
                                                       std::size_t steps) noexcept {
    std::size_t const group_warps = quant_gemv_spanning_group_threads(config.blocks_per_row) / 32;
    std::size_t const rows = std::size_t{config.groups} * config.batch;
    std::size_t const x =
        config.share_x ? 512 * std::size_t{config.blocks_per_row} + 16 * ((config.blocks_per_row + 3) / 4) : 0;
    // rms_norm: each warp's Σx² and Σ(x·2^-96)² after everything else.
    std::size_t const squares = config.input == GemvInput::rms_norm ? 8 * config.groups * group_warps : 0;
    if (config.bulk) {
        std::size_t const row_bytes =
            std::size_t{config.blocks_per_row} * quant_gemv_spanning_group_bytes(config.weight);
        // x, the slots (16-byte aligned, 16 bytes apart), two mbarriers a slot, the warps' sums.
        return (x + 15) / 16 * 16 + config.stages * (rows * row_bytes + 16) + 16 * config.stages +
               steps * rows * group_warps * 4 + squares;
    }
    return x +
           group_warps * config.groups * config.stages * config.batch *
               quant_gemv_spanning_slot_row_bytes(config.weight) +
           steps * rows * group_warps * 4 + squares;
}

// ---- the GEMM path ------------------------------------------------------------------------------

// Parameters: (u64 x, u64 out, u32 count): count f32 values (16-byte aligned, count a multiple of 8)
// -> f16 (round to nearest even). Each thread converts 8 values; launch ceil(count / (8·threads))
// blocks.
struct RAYO_API GemmActivationsConfig {
    unsigned threads = 256;
};
[[nodiscard]] RAYO_API Kernel gemm_activations(GemmActivationsConfig const& config = {});

// Parameters: (u64 x_f16, u64 w, u64 out, u32 m, u32 n, u32 k): out[m, n] = x[m, k] · w[n, k]ᵀ with
// x f16 (from gemm_activations), w rows of k/256 blocks of `weight`, out f32.
// Block tile block_m × block_n × 64 with 8 warps (2 × 4): per 64-value step of k the f16 x tile comes
// in by cp.async while the weight tile's raw bytes are loaded into registers, decoded in f32
// (value = d·sc·q − dmin·m, or d·sc·(q − 32)), rounded to f16 into shared memory; fragments by
// ldmatrix from XOR-swizzled tiles, mma.sync m16n8k16 f16 x f16 -> f32. Two stages, one barrier per
// step. Launch grid (ceil(n / block_n), ceil(m / block_m)), 256 threads, dynamic shared memory
// quant_gemm_shared_bytes(config) (opted in above 48 KiB). Accuracy: x and the decoded weights are
// rounded to f16 (relative 2^-11 each): ~3e-4 relative error on linear, against 1e-3 promised;
// |x|, |w| must stay below 65504 (f16's range).
struct RAYO_API QuantGemmConfig {
    DType weight = DType::q4_k;  // q4_k or q6_k
    unsigned block_m = 128;      // rows of x per block: 64 or 128
    unsigned block_n = 128;      // weight rows per block: 64 or 128
};
[[nodiscard]] RAYO_API Kernel quant_gemm(QuantGemmConfig const& config);
constexpr unsigned quant_gemm_k_step = 64;
constexpr unsigned quant_gemm_threads = 256;
constexpr unsigned quant_gemm_shared_bytes(QuantGemmConfig const& config) noexcept {
    return 2 * (config.block_m + config.block_n) * quant_gemm_k_step * 2;
}

}  // namespace rayo::ptx::kernels
