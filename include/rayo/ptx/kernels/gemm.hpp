// The GEMM kernel generator: out[m, n] = a[m, k] · op(b) with f32 results, as a PTX kernel.
//
//   using namespace rayo::ptx;
//   kernels::GemmConfig const config{.a = Type::bf16, .b = Type::bf16, .b_transposed = true,
//                                    .tile = {128, 128, 32}, .warps = 4, .stages = 4};
//   std::string const ptx = kernels::gemm(config).emit(Target::sm_90);
//   kernels::GemmLaunch const launch = kernels::gemm_launch(config, m, n);  // grid, threads, shared bytes
//
// Three algorithms; simt and tensor_core need sm_80 (cp.async), wgmma sm_90a:
//   * simt: f32 × f32 on the CUDA cores (FFMA). A block tile of tile.m × tile.n is computed by
//     (tile.m / 32) · (tile.n / 64) warps, 8 × 8 outputs per thread (two 4-row and two 4-column
//     strips, so shared-memory reads are 16-byte loads that are broadcasts or conflict-free); each k
//     step is an outer product of 8 a values and 8 b values per thread. a (and a transposed b) is
//     copied into k-major shared memory by 4-byte cp.async (the copy does the transposition); b as
//     [k, n] by 16-byte cp.async; `stages` k steps are in flight.
//   * tensor_core: f16 or bf16 b on the tensor cores (mma.sync.m16n8k16, f32 accumulation). Tiles
//     of a and b are copied by a `stages`-deep cp.async pipeline into XOR-swizzled shared memory
//     (conflict-free ldmatrix) and fed to the warps by ldmatrix (.trans for a b that is not
//     transposed). An f32 a (f32 activations × 16-bit weights) is converted to b's type with
//     round-to-nearest on its way into shared memory: products then carry a's rounding error,
//     at most 2^-11 (f16) or 2^-8 (bf16) of |a·b| each; an f16 conversion of |a| > 65504 gives inf.
//     Operands that are not 16-byte aligned (GemmConfig::aligned = false) are loaded element by
//     element through registers instead of cp.async.
//   * wgmma: f16 × f16 or bf16 × bf16 on Hopper's warpgroup MMAs (wgmma.mma_async m64nNk16, f32
//     accumulation), or f32 × f32 as TF32 (m64nNk8.tf32, b stored [n, k]: the tensor cores use each
//     f32 value's sign, exponent and top 10 mantissa bits, so a product carries a relative error of
//     up to 2^-10 per operand; MatmulOptions::allow_tf32 opts in), a persistent, warp-specialised kernel: warpgroup 0
//     is the producer, one of its threads copying tiles of a and b with the tensor memory accelerator (TMA, 128-byte
//     swizzle) into a ring of `stages` shared-memory slots guarded by mbarriers; warpgroups 1 .. tile.m / 64 are
//     consumers, each multiplying 64 rows of the block tile by its tile.n columns, and releasing a slot once its MMAs
//     have read it. Each block walks the output tiles ctaid.x, ctaid.x + nctaid.x, ... (grouped as group_m says), so
//     the producer loads the next tile while the consumers store the last. Operands must be `aligned`; a is b's type.
//
// Kernel parameters (simt, tensor_core), in order: a, b, out (.u64 generic addresses of the first elements), then
// m, n, k (.u32). a is [m, k] row-major; b is [k, n] row-major, or [n, k] row-major when
// b_transposed (so linear(x, w) = x · wᵀ is b_transposed with b = w); out is [m, n] row-major f32.
// Any m, n, k below 2^32 (k may be 0: out becomes zeros); edge tiles are zero-filled on load and
// masked on store. The grid's x dimension covers the output's tiles (gemm_launch says how many).
// A batched kernel (GemmConfig::batched) takes three more .u64 parameters after k: a_batch,
// b_batch, out_batch, the bytes between the matrices of consecutive products (0: every product
// reads the same matrix), and computes product %ctaid.y of the batch: launch it with grid.y = batch.
// One with a bias (GemmConfig::bias) takes its address (.u64, f32 [n]) last.
//
// wgmma kernel parameters, in order: a_map, b_map (tensor maps, 128 bytes each, encoded from
// gemm_tensor_maps), out (.u64), m, n, k (.u32); batched: batch (.u32, the number of products),
// a_step, b_step (.u32: 1 where a / b has a matrix per product, 0 where every product reads the
// same one) and out_batch (.u64 bytes); then the bias (.u64) when it has one. Its grid is one
// dimension of at most `resident_blocks` blocks (gemm_launch), each of 128 · (1 + tile.m / 64) threads.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rayo/export.hpp"
#include "rayo/ptx/kernel.hpp"
#include "rayo/ptx/tensor_map.hpp"
#include "rayo/ptx/type.hpp"

namespace rayo::ptx::kernels {

enum class GemmAlgorithm : std::uint8_t {
    automatic,    // tensor_core when b is f16 or bf16, simt when it is f32
    simt,         // a and b f32
    tensor_core,  // b f16 or bf16; a the same type or f32 (converted to b's type)
    wgmma,        // a and b both f16, both bf16 or both f32 (read as tf32, b_transposed), aligned; sm_90a
};

// A block's tile of the output (m × n) and the depth of one k step of the main loop. A zero field
// takes the algorithm's default: 128 × 128 × 8 (simt), 128 × 128 × 32 (tensor_core), 128 × 256 × 64
// (wgmma: m 64, 128 or 192 — one consumer warpgroup per 64 rows —, n a multiple of 64 up to 256,
// k the values of one 128-byte swizzled row: 64 16-bit ones, 32 tf32 ones).
struct RAYO_API GemmTile {
    unsigned m = 0, n = 0, k = 0;
};

struct RAYO_API GemmConfig {
    // Problem sizes baked into the kernel as constants; 0 leaves the size to the kernel's m/n/k
    // parameter (which must then be passed; a baked size ignores its parameter). A baked size that
    // is a multiple of its tile dimension also drops that dimension's edge checks.
    std::uint32_t m = 0, n = 0, k = 0;
    Type a = Type::f32;  // f32, f16 or bf16
    Type b = Type::f32;  // f32, f16 or bf16; a is b's type or f32
    bool b_transposed = false;
    GemmAlgorithm algorithm = GemmAlgorithm::automatic;
    GemmTile tile = {};
    // Warps per block. simt: fixed by the tile, (tile.m / 32) · (tile.n / 64) (0 or that number);
    // tensor_core: 1, 2, 4 or 8 (0: 4), laid out 1×1, 2×1/1×2, 2×2, 4×2/2×4 over the tile; wgmma:
    // fixed by the tile, 4 · (1 + tile.m / 64).
    unsigned warps = 0;
    // Shared-memory buffers in flight (the cp.async pipeline depth, or the TMA ring's slots), 2 to 8.
    // 0: 3 (simt), 4 (tensor_core, wgmma).
    unsigned stages = 0;
    // 16-byte global accesses (vector loads, 16-byte cp.async, vector stores). The caller
    // guarantees that a, b and out start on 16-byte boundaries and that every row of a, b and out
    // is a multiple of 16 bytes long (k·sizeof(a), k or n·sizeof(b), n·4). false: element-wise
    // accesses (any sizes and 4-byte-aligned f32 / 2-byte-aligned 16-bit data), slower.
    bool aligned = true;
    // A batch of products, one per block row of the grid (grid.y), their matrices a_batch, b_batch
    // and out_batch bytes apart (parameters after k).
    bool batched = false;
    // out = a·op(b) + bias, bias f32 [n] added to every row in the epilogue (a .u64 parameter after
    // the others).
    bool bias = false;
    // Block tiles are visited `group_m` tile rows at a time, column by column within a group, so
    // blocks running together share panels of a and b in L2. 0: 8.
    unsigned group_m = 0;
};

// The launch shape of a gemm kernel for an m × n output.
struct RAYO_API GemmLaunch {
    std::uint32_t grid = 0;          // blocks, along x (0 when m or n is 0: nothing to launch)
    std::uint32_t threads = 0;       // per block, along x
    std::uint32_t shared_bytes = 0;  // dynamic shared memory per block
    // grid.y: the batch for a batched simt/tensor_core kernel; 1 for wgmma, whose blocks walk
    // every product's tiles.
    std::uint32_t grid_y = 1;
};

// The configuration with every default filled in and checked: throws BuildError for a type pair,
// tile, warp count or stage count the generators do not support.
[[nodiscard]] RAYO_API GemmConfig gemm_resolved(GemmConfig const& config);

// The kernel. Its name spells every generator parameter (e.g.
// gemm_tc_bf16_bf16_nt_128x128x32_w4_s4_v_g8), so equal names mean equal kernels.
[[nodiscard]] RAYO_API Kernel gemm(GemmConfig const& config);

// The kernel's name (see gemm()), without building it.
[[nodiscard]] RAYO_API std::string gemm_name(GemmConfig const& config);

// How to launch gemm(config) for a batch of m × n outputs (m and n as passed, or as baked). A
// wgmma kernel is persistent: one block per output tile up to `resident_blocks` (0: no limit;
// rayo passes the multiprocessor count, one block fitting on each).
[[nodiscard]] RAYO_API GemmLaunch gemm_launch(GemmConfig const& config, std::uint32_t m, std::uint32_t n,
                                              std::uint32_t batch = 1, std::uint32_t resident_blocks = 0);

// The tensor maps a wgmma kernel takes (a_map, b_map) for a[m, k] and op(b) at device addresses
// `a` and `b`, with batch_bytes the bytes between consecutive products' matrices (0: shared by
// every product), as TensorMapSpecs for the runtime to encode.
struct RAYO_API GemmOperands {
    std::uint64_t a = 0, b = 0;
    std::uint64_t m = 0, n = 0, k = 0;
    std::uint64_t batch = 1;
    std::uint64_t a_batch_bytes = 0, b_batch_bytes = 0;
};
[[nodiscard]] RAYO_API std::array<TensorMapSpec, 2> gemm_tensor_maps(GemmConfig const& config,
                                                                     GemmOperands const& operands);

// The variant rayo's CUDA matmul runs for out[m, n] = a[m, k] · op(b), with `aligned` as
// GemmConfig::aligned requires (the caller checks addresses and row lengths), on a GPU with
// `multiprocessors` SMs of `target`: f32 × f32 on the CUDA cores; anything with a 16-bit b on the
// tensor cores. On sm_90, where the runtime can encode tensor maps (`tensor_maps`), aligned
// f16 × f16 and bf16 × bf16 products of 32 rows or more run the wgmma kernel (and f32 × f32 ones
// with b [n, k] where `tf32` allows TF32): 128 × 256 tiles in
// 4 slots where there are two such tiles per SM, 128 × 128 in 6 where there is one such tile for
// every eighth SM. Otherwise large outputs
// take 128x128 tiles (f32 on sm_90: k steps of 16 in two stages, else 8 in three); outputs with
// fewer such tiles than SMs take 64x64; a few rows (m ≤ 32) take 32x64.
// The sizes stay kernel parameters (none is baked). For a batch of `batch` such products (a
// batched kernel), the tiles of all of them count towards filling the SMs.
[[nodiscard]] RAYO_API GemmConfig choose_gemm_config(std::uint64_t m, std::uint64_t n, std::uint64_t k, Type a, Type b,
                                                     bool b_transposed, bool aligned, int multiprocessors,
                                                     Target target, std::uint64_t batch = 1, bool tensor_maps = true,
                                                     bool tf32 = false);

// Every configuration choose_gemm_config returns for `target`, for any problem.
[[nodiscard]] RAYO_API std::vector<GemmConfig> chosen_gemm_configs(Target target);

namespace detail {

// Pieces the two generator files share; not part of the API.
struct RAYO_API GemmFrame {
    Reg a, b, out;        // global addresses
    Reg bias;             // global address of the bias (GemmConfig::bias), else invalid
    Reg m, n, k;          // sizes (.u32): parameters or baked constants
    Reg row0, col0;       // the block tile's first output row and column
    bool check_m = true;  // whether rows past m can occur in this kernel
    bool check_n = true;
    bool check_k = true;  // whether the last k step can be partial
};
// Declares the parameters and finds the block's tile (grouped rasterisation).
RAYO_API GemmFrame gemm_frame(Kernel& kernel, GemmConfig const& resolved);
// How a block's warps tile its output: m warps down, n warps across.
struct RAYO_API WarpGrid {
    unsigned m = 1, n = 1;
};
RAYO_API WarpGrid gemm_warp_grid(GemmConfig const& resolved);
// The k loop both algorithms run: `stages` shared-memory slots, stages − 1 k steps in flight, one
// barrier per step; unrolled `stages` times so every slot offset is an immediate.
struct RAYO_API GemmPipeline {
    std::function<void(unsigned slot, Reg k_left)> issue;  // start loading the next k step (k_left > 0)
    std::function<void(unsigned slot)> store_staged;       // register-staged loads → slot (may be empty)
    std::function<void(unsigned slot)> multiply;           // the MMAs / FMAs of one k step
    std::function<void()> advance;                         // global addresses to the next k step
    bool cp_async = true;  // whether issue() starts cp.async copies (else no groups to commit and wait for)
};
RAYO_API void gemm_pipeline(Kernel& kernel, GemmFrame const& frame, unsigned tile_k, unsigned stages,
                            GemmPipeline const& steps);
Kernel gemm_simt(GemmConfig const& resolved);                  // gemm.cpp
Kernel gemm_tensor_core(GemmConfig const& resolved);           // gemm_tensor_core.cpp
Kernel gemm_wgmma(GemmConfig const& resolved);                 // gemm_wgmma.cpp
std::uint32_t wgmma_shared_bytes(GemmConfig const& resolved);  // gemm_wgmma.cpp

}  // namespace detail

}  // namespace rayo::ptx::kernels
