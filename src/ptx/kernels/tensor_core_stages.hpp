// The stages a tensor-core kernel is composed of (mma.sync.m16n8k16 fed by ldmatrix from a
// cp.async pipeline): the swizzled shared-memory tile layout, the copy of an operand tile into it,
// and the warps' MMAs over one pipeline stage. gemm_tensor_core.cpp composes them into the GEMM;
// convolution_gemm.cpp into the implicit-GEMM convolution, with a gathering loader of its own for
// the image operand. Not part of the API.
//
// Shared memory, per stage: a as tile.m rows of tile.k elements, then b as tile.n rows of tile.k
// (b transposed, [n, k] in memory) or tile.k rows of tile.n (b as [k, n]); always 16-bit elements.
// Rows are made of 16-byte chunks whose index is XORed with bits of the row number, so the 8 rows
// one ldmatrix phase reads (and a warp's cp.async writes) fall on 8 different 16-byte bank groups.
#pragma once

#include <vector>

#include "rayo/ptx/kernel.hpp"
#include "rayo/ptx/kernels/gemm.hpp"

namespace rayo::ptx::kernels::gemm_detail {

// The XOR pattern of a tile whose rows have `chunks` 16-byte chunks: chunk ^ ((row >> shift) & mask).
// 8 consecutive rows then cover all 8 16-byte slots of a 128-byte bank line.
struct Swizzle {
    unsigned chunks = 0, shift = 0, mask = 0;
    explicit Swizzle(unsigned chunks_per_row);
    // Byte offset of (row, chunk) in the tile.
    [[nodiscard]] Reg offset(Kernel& k, Reg row, Reg chunk) const;
};

// What the stages of one block share: its tile, its threads and the shared-memory stage layout.
struct TensorCoreBlock {
    unsigned tile_m = 0, tile_n = 0, tile_k = 0;
    unsigned threads = 0;
    unsigned a_bytes = 0;      // a's tile in a stage; b's follows it
    unsigned stage_bytes = 0;  // a's and b's tiles
    Type element = Type::f16;  // what the tensor cores multiply: f16 or bf16
    detail::WarpGrid grid;     // how the warps tile the block tile
    Reg smem;                  // shared address of stage 0
    Reg tid, lane, warp_row, warp_col;
    // The block of a resolved tensor-core GemmConfig (tile, warps, b's type), its shared memory
    // and the thread's place in it.
    static TensorCoreBlock of(Kernel& k, GemmConfig const& resolved);
};

// One operand's copy of a tile into shared memory, per thread: `count` chunks of 8 elements,
// `row_step` rows apart (a multiple of 8, so they share a swizzle pattern).
struct TileLoader {
    bool k_rows = false;        // tile rows are k (b as [k, n]); else rows are m or n and run along k
    bool staged = false;        // through registers (f32 source or element-wise) instead of cp.async
    bool check_k = true;        // whether the last k step can be partial
    bool element_wise = false;  // loads element by element (operand not 16-byte aligned)
    Type source = Type::f16;    // element type in global memory
    unsigned count = 0, row_step = 0;
    unsigned row_step_bytes = 0;  // shared bytes between consecutive chunks
    Reg base;                     // the tensor (a valid address for zero-fill copies)
    Reg address;                  // .u64 global address of chunk 0 in the current k step
    Reg chunk_stride;             // .u64 global bytes between consecutive chunks
    Reg k_step;                   // .u64 global bytes to the next k step (k_rows; else immediate)
    unsigned k_step_bytes = 0;
    Reg shared;                            // shared address of chunk 0 in slot 0
    Reg index;                             // chunk 0's k offset in the tile: its column, or its row (k_rows)
    Reg column;                            // k_rows: chunk's first global column (element-wise checks)
    Reg columns;                           // k_rows: the matrix's columns (n), for element-wise checks
    bool check_columns = false;            // k_rows: whether columns past n can occur
    std::vector<Reg> fixed_ok;             // per chunk (or one, for k_rows): inside m / n
    std::vector<std::vector<Reg>> values;  // staged: per chunk, 8 values in flight
};

// A k-contiguous operand: `rows` rows of the tensor (a [m, k], or b transposed [n, k]) from
// `origin`, `extent` rows in all, `k` long, into the stage region `region` bytes in.
struct KContiguousOperand {
    Reg tensor;
    Type type = Type::f16;  // in global memory: f16, bf16, or f32 (converted on the way)
    Reg origin, extent, k;
    bool check_rows = true, check_k = true;
    bool aligned = true;  // rows 16-byte aligned: cp.async of whole chunks
    unsigned rows = 0, region = 0;
};
[[nodiscard]] TileLoader k_contiguous_loader(Kernel& k, TensorCoreBlock const& block, KContiguousOperand const& operand,
                                             Swizzle const& swizzle);

// The copy stages of a set of loaders, as gemm_pipeline's issue / store_staged / advance.
class TileCopies {
public:
    TileCopies(Kernel& k, TensorCoreBlock const& block, std::vector<TileLoader> loaders);
    // Starts one k step's copies (cp.async) or loads (staged) for `slot`; k_left = k − its first k > 0.
    void issue(unsigned slot, Reg k_left);
    // Converts / packs the staged values and stores them into `slot`.
    void store_staged(unsigned slot);
    void advance();
    [[nodiscard]] bool any_staged() const;
    [[nodiscard]] bool any_cp_async() const;

private:
    [[nodiscard]] Reg element_ok(TileLoader const& l, unsigned j, unsigned e, Reg k_left);
    Kernel* k_;
    TensorCoreBlock block_;
    std::vector<TileLoader> loaders_;
};

// The warps' share of the block tile and their MMAs over one stage: warp (row, col) of the warp
// grid owns warp_m × warp_n outputs as m_tiles × n_tiles mma tiles of 16 × 8, accumulated in f32.
// Each mma tile's lane holds rows lane / 4 and lane / 4 + 8, columns 2·(lane % 4) + {0, 1}:
// acc[(mt·n_tiles + nt)·4 + h·2 + e] is row mt·16 + h·8 + lane / 4, column nt·8 + 2·(lane % 4) + e.
class WarpMma {
public:
    WarpMma(Kernel& k, TensorCoreBlock const& block, bool b_k_rows, Swizzle const& a_swizzle, Swizzle const& b_swizzle);
    void multiply(unsigned slot);

    unsigned warp_m = 0, warp_n = 0, m_tiles = 0, n_tiles = 0;
    std::vector<Reg> acc;

private:
    Kernel* k_;
    TensorCoreBlock block_;
    bool b_k_rows_;
    std::vector<Reg> a_offsets_, b_offsets_;
};

}  // namespace rayo::ptx::kernels::gemm_detail
