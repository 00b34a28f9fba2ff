// The GEMM generator's front: configuration defaults and checks, names, launch shapes, the frame
// both algorithms share (parameters, block tile), and the f32 SIMT kernel.
#include "rayo/ptx/kernels/gemm.hpp"
#include "ptx/kernels/gemm_addressing.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rayo::ptx::kernels {

namespace {

bool is_half_type(Type t) { return t == Type::f16 || t == Type::bf16; }

[[noreturn]] void reject(std::string const& why) { throw BuildError("gemm: " + why); }

std::string tile_text(GemmTile t) {
    return std::to_string(t.m) + "x" + std::to_string(t.n) + "x" + std::to_string(t.k);
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// Shared-memory bytes per block of a resolved configuration.
std::uint32_t shared_bytes(GemmConfig const& c) {
    if (c.algorithm == GemmAlgorithm::wgmma) return detail::wgmma_shared_bytes(c);
    if (c.algorithm == GemmAlgorithm::simt) {
        std::uint32_t const a_stride = c.tile.m + 4, b_stride = c.b_transposed ? c.tile.n + 4 : c.tile.n;
        return c.stages * c.tile.k * (a_stride + b_stride) * 4;
    }
    return c.stages * (c.tile.m + c.tile.n) * c.tile.k * 2;
}

// The most dynamic shared memory a block may have on sm_80 .. sm_90 (sm_86/sm_89 allow less:
// the runtime refuses a launch that asks for more than the device has).
constexpr std::uint32_t max_shared_bytes = 227 * 1024;

}  // namespace

namespace detail {

WarpGrid gemm_warp_grid(GemmConfig const& c) {
    if (c.algorithm == GemmAlgorithm::simt) return {c.tile.m / 32, c.tile.n / 64};
    switch (c.warps) {
        case 1: return {1, 1};
        case 2: return c.tile.m >= c.tile.n ? WarpGrid{2, 1} : WarpGrid{1, 2};
        case 4: return {2, 2};
        default: return c.tile.m >= c.tile.n ? WarpGrid{4, 2} : WarpGrid{2, 4};
    }
}

}  // namespace detail

GemmConfig gemm_resolved(GemmConfig const& config) {
    GemmConfig c = config;
    auto const operand_type = [](Type t) { return t == Type::f32 || is_half_type(t); };
    if (!operand_type(c.a) || !operand_type(c.b))
        reject("a and b must be f32, f16 or bf16, got a ." + std::string(name_of(c.a)) + " and b ." +
               std::string(name_of(c.b)));
    if (c.a != c.b && c.a != Type::f32)
        reject("a must have b's type, or be f32 with an f16/bf16 b; got a ." + std::string(name_of(c.a)) + " and b ." +
               std::string(name_of(c.b)));
    if (c.algorithm == GemmAlgorithm::automatic)
        c.algorithm = is_half_type(c.b) ? GemmAlgorithm::tensor_core : GemmAlgorithm::simt;
    if (c.group_m == 0) c.group_m = 8;

    if (c.algorithm == GemmAlgorithm::wgmma) {
        if (c.a != c.b)
            reject("the wgmma algorithm multiplies f16 by f16, bf16 by bf16 or f32 by f32 (as tf32), got a ." +
                   std::string(name_of(c.a)) + " and b ." + std::string(name_of(c.b)));
        if (c.b == Type::f32 && !c.b_transposed)
            reject(
                "the wgmma algorithm reads f32 (tf32) operands K-major only: b must be stored [n, k] (b_transposed)");
        if (!c.aligned) reject("the wgmma algorithm copies tiles with the TMA: its operands must be aligned");
        if (c.m != 0 || c.n != 0 || c.k != 0) reject("the wgmma algorithm takes its sizes as parameters (none baked)");
        // A k step is one 128-byte row: 64 16-bit values or 32 f32 ones.
        unsigned const row_values = 128 / static_cast<unsigned>(bytes_of(c.b));
        if (c.tile.m == 0) c.tile.m = 128;
        if (c.tile.n == 0) c.tile.n = 256;
        if (c.tile.k == 0) c.tile.k = row_values;
        if ((c.tile.m != 64 && c.tile.m != 128 && c.tile.m != 192) || c.tile.n % 64 != 0 || c.tile.n > 256 ||
            c.tile.n == 0 || c.tile.k != row_values)
            reject("wgmma tiles are 64, 128 or 192 rows by a multiple of 64 columns up to 256, k steps of " +
                   std::to_string(row_values) + " ." + std::string(name_of(c.b)) + " values; got " + tile_text(c.tile));
        unsigned const warps = 4 * (1 + c.tile.m / 64);
        if (c.warps != 0 && c.warps != warps)
            reject("a wgmma tile of " + tile_text(c.tile) + " takes " + std::to_string(warps) +
                   " warps (a producer warpgroup and one per 64 rows), not " + std::to_string(c.warps));
        c.warps = warps;
        if (c.stages == 0) c.stages = 4;
        if (c.stages < 2 || c.stages > 8) reject("wgmma rings have 2 to 8 slots, got " + std::to_string(c.stages));
    } else if (c.algorithm == GemmAlgorithm::simt) {
        if (c.b != Type::f32)
            reject("the simt algorithm multiplies f32 by f32; a ." + std::string(name_of(c.b)) +
                   " b runs on the tensor cores (GemmAlgorithm::tensor_core)");
        if (c.tile.m == 0) c.tile.m = 128;
        if (c.tile.n == 0) c.tile.n = 128;
        if (c.tile.k == 0) c.tile.k = 8;
        if (c.tile.m % 32 != 0 || c.tile.n % 64 != 0 || (c.tile.m / 32) * (c.tile.n / 64) > 8)
            reject(
                "simt tiles are multiples of 32 rows by multiples of 64 columns, at most 8 such pieces (one "
                "warp each), got " +
                tile_text(c.tile));
        if (c.tile.k != 8 && c.tile.k != 16 && c.tile.k != 32)
            reject("simt k steps are 8, 16 or 32, got " + std::to_string(c.tile.k));
        unsigned const warps = (c.tile.m / 32) * (c.tile.n / 64);
        if (c.warps != 0 && c.warps != warps)
            reject("a simt tile of " + tile_text(c.tile) + " takes " + std::to_string(warps) +
                   " warps (one per 32x64 of output), not " + std::to_string(c.warps));
        c.warps = warps;
        if (c.stages == 0) c.stages = 3;
        if (c.stages < 2 || c.stages > 8)
            reject("simt pipelines are 2 to 8 stages deep, got " + std::to_string(c.stages));
        unsigned const threads = warps * 32;
        if ((c.tile.m * c.tile.k / 4) % threads != 0 || (c.tile.n * c.tile.k / 4) % threads != 0)
            reject("a simt tile of " + tile_text(c.tile) + " does not split into whole 16-byte loads over " +
                   std::to_string(threads) + " threads; use a deeper k step");
    } else {
        if (!is_half_type(c.b))
            reject("the tensor_core algorithm needs an f16 or bf16 b, got ." + std::string(name_of(c.b)));
        if (c.tile.m == 0) c.tile.m = 128;
        if (c.tile.n == 0) c.tile.n = 128;
        if (c.tile.k == 0) c.tile.k = 32;
        if (c.warps == 0) c.warps = 4;
        if (c.stages == 0) c.stages = 4;
        if (c.tile.k != 16 && c.tile.k != 32 && c.tile.k != 64)
            reject("tensor_core k steps are 16, 32 or 64, got " + std::to_string(c.tile.k));
        if (c.warps != 1 && c.warps != 2 && c.warps != 4 && c.warps != 8)
            reject("tensor_core blocks have 1, 2, 4 or 8 warps, got " + std::to_string(c.warps));
        if (c.stages < 2 || c.stages > 8)
            reject("tensor_core pipelines are 2 to 8 stages deep, got " + std::to_string(c.stages));
        if (c.tile.m > 256 || c.tile.n > 256) reject("tensor_core tiles are at most 256x256, got " + tile_text(c.tile));
        auto const grid = detail::gemm_warp_grid(c);
        unsigned const warp_m = c.tile.m / grid.m, warp_n = c.tile.n / grid.n;
        if (c.tile.m % (grid.m * 16) != 0 || c.tile.n % (grid.n * 16) != 0)
            reject("a tensor_core tile of " + tile_text(c.tile) + " does not split into " + std::to_string(grid.m) +
                   "x" + std::to_string(grid.n) + " warp tiles of whole 16x16 blocks");
        if (warp_m * warp_n > 64 * 64)
            reject("a tensor_core warp tile of " + std::to_string(warp_m) + "x" + std::to_string(warp_n) +
                   " needs more than 128 accumulator registers per thread; use more warps");
        // Loads: each thread copies whole 16-byte chunks (8 elements), and the rows one thread's
        // chunks step by are a multiple of 8 so they share one swizzle pattern.
        unsigned const threads = c.warps * 32;
        auto const splits = [&](unsigned rows, unsigned row_elements) {
            unsigned const per_row = row_elements / 8;
            if (threads % per_row != 0) return false;
            unsigned const row_step = threads / per_row;
            return row_step % 8 == 0 && rows % row_step == 0;
        };
        bool const b_k_rows = !c.b_transposed;  // b's tile is k rows of tile.n elements
        if (!splits(c.tile.m, c.tile.k) || !(b_k_rows ? splits(c.tile.k, c.tile.n) : splits(c.tile.n, c.tile.k)))
            reject("a tensor_core tile of " + tile_text(c.tile) + " does not split into 16-byte copies over " +
                   std::to_string(threads) + " threads (try another warp count or k step)");
    }
    if (shared_bytes(c) > max_shared_bytes)
        reject("tile " + tile_text(c.tile) + " with " + std::to_string(c.stages) + " stages needs " +
               std::to_string(shared_bytes(c)) + " bytes of shared memory, more than the " +
               std::to_string(max_shared_bytes) + " a block can have");
    return c;
}

std::string gemm_name(GemmConfig const& config) {
    GemmConfig const c = gemm_resolved(config);
    std::string name = c.algorithm == GemmAlgorithm::simt          ? "gemm_simt_"
                       : c.algorithm == GemmAlgorithm::tensor_core ? "gemm_tc_"
                                                                   : "gemm_wgmma_";
    // The wgmma kernel reads f32 operands as tf32, and says so.
    auto const operand = [&](Type t) {
        return c.algorithm == GemmAlgorithm::wgmma && t == Type::f32 ? std::string("tf32") : std::string(name_of(t));
    };
    name += operand(c.a) + "_" + operand(c.b) + (c.b_transposed ? "_nt_" : "_nn_");
    name += tile_text(c.tile) + "_w" + std::to_string(c.warps) + "_s" + std::to_string(c.stages);
    name += c.aligned ? "_v" : "_e";
    name += "_g" + std::to_string(c.group_m);
    if (c.m != 0) name += "_m" + std::to_string(c.m);
    if (c.n != 0) name += "_n" + std::to_string(c.n);
    if (c.k != 0) name += "_k" + std::to_string(c.k);
    if (c.batched) name += "_batched";
    if (c.bias) name += "_bias";
    return name;
}

GemmLaunch gemm_launch(GemmConfig const& config, std::uint32_t m, std::uint32_t n, std::uint32_t batch,
                       std::uint32_t resident_blocks) {
    GemmConfig const c = gemm_resolved(config);
    std::uint64_t const rows = c.m != 0 ? c.m : m, cols = c.n != 0 ? c.n : n;
    std::uint64_t blocks = ceil_div(rows, c.tile.m) * ceil_div(cols, c.tile.n);
    if (c.algorithm == GemmAlgorithm::wgmma) {
        blocks *= batch;  // persistent blocks walk every product's tiles
        if (blocks > 0xffffffffu)
            reject(std::to_string(batch) + " products of " + std::to_string(rows) + "x" + std::to_string(cols) +
                   " have 2^32 tiles of " + tile_text(c.tile) + " or more");
        if (resident_blocks != 0) blocks = std::min<std::uint64_t>(blocks, resident_blocks);
        return {static_cast<std::uint32_t>(blocks), c.warps * 32, shared_bytes(c), 1};
    }
    if (blocks > 0x7fffffffu)
        reject(std::to_string(rows) + "x" + std::to_string(cols) + " output needs " + std::to_string(blocks) +
               " blocks of " + tile_text(c.tile) + ", more than a grid holds");
    return {static_cast<std::uint32_t>(blocks), c.warps * 32, shared_bytes(c), c.batched ? batch : 1};
}

namespace {

enum class TileClass : std::uint8_t { large, small, few_rows };

// The tile, warps and stages of each class, per algorithm. Element-wise tensor-core variants and
// f32 a (staged through registers) use 8 warps on the large tile to stay clear of spills.
GemmConfig tile_config(TileClass size, Type a, Type b, bool b_transposed, bool aligned, Target target) {
    GemmConfig c{.a = a, .b = b, .b_transposed = b_transposed, .aligned = aligned};
    bool const simt = b == Type::f32;
    c.algorithm = simt ? GemmAlgorithm::simt : GemmAlgorithm::tensor_core;
    switch (size) {
        case TileClass::large:
            if (simt) {
                // sm_90: k steps of 16 in two stages, which run faster there than 8 in three
                // (docs/backends/cuda.md, "Tuning decisions"); for sm_80 ptxas spills that tile.
                bool const deep_k = compute_capability(target) >= 90;
                c.tile = {128, 128, deep_k ? 16u : 8u};
                c.stages = deep_k ? 2 : 3;
            } else {
                c.tile = {128, 128, 32};
                c.warps = a == Type::f32 || !aligned ? 8 : 4;
                c.stages = 4;
            }
            break;
        case TileClass::small:
            c.tile = simt ? GemmTile{64, 64, 8} : GemmTile{64, 64, 32};
            c.warps = simt ? 0 : 4;
            c.stages = simt ? 3 : 4;
            break;
        case TileClass::few_rows:
            c.tile = simt ? GemmTile{32, 64, 8} : GemmTile{32, 64, 32};
            c.warps = simt ? 0 : 2;
            c.stages = simt ? 3 : 4;
            break;
    }
    return gemm_resolved(c);
}

// The wgmma kernel's configurations: 128 × 256 tiles in 4 slots, 128 × 128 in 6 (the most that fit
// in shared memory; docs/backends/cuda.md, "Tuning decisions"). f32 (tf32) slots hold the same
// bytes: half the k values.
GemmConfig wgmma_config(Type t, bool b_transposed, bool wide) {
    return gemm_resolved({.a = t,
                          .b = t,
                          .b_transposed = b_transposed,
                          .algorithm = GemmAlgorithm::wgmma,
                          .tile = {128, wide ? 256u : 128u, 0},
                          .stages = wide ? 4u : 6u});
}

}  // namespace

GemmConfig choose_gemm_config(std::uint64_t m, std::uint64_t n, std::uint64_t, Type a, Type b, bool b_transposed,
                              bool aligned, int multiprocessors, Target target, std::uint64_t batch, bool tensor_maps,
                              bool tf32) {
    // Hopper's warpgroup MMAs: 128x256 tiles once there are two for every SM, 128x128 ones once
    // there is one for every eighth SM (a multiprocessor's wgmma runs about twice mma.sync's rate
    // and its TMA copies stream b at the memory's rate, so a mostly idle GPU still finishes first);
    // fewer than 32 rows stay on the narrow mma.sync tiles.
    auto const sms = static_cast<std::uint64_t>(std::max(multiprocessors, 1));
    bool const tensor_core_types = a == b && (is_half_type(b) || (tf32 && b == Type::f32 && b_transposed));
    if (compute_capability(target) >= 90 && tensor_maps && aligned && tensor_core_types && m >= 32) {
        std::uint64_t const wide_tiles = batch * ceil_div(m, 128) * ceil_div(n, 256);
        std::uint64_t const tiles = batch * ceil_div(m, 128) * ceil_div(n, 128);
        if (wide_tiles >= 2 * sms || 8 * tiles >= sms) {
            GemmConfig config = wgmma_config(b, b_transposed, wide_tiles >= 2 * sms);
            config.batched = batch > 1;
            return config;
        }
    }
    TileClass size = TileClass::large;
    if (m <= 32)
        size = TileClass::few_rows;
    else if (batch * ceil_div(m, 128) * ceil_div(n, 128) < static_cast<std::uint64_t>(std::max(multiprocessors, 1)))
        size = TileClass::small;
    GemmConfig config = tile_config(size, a, b, b_transposed, aligned, target);
    config.batched = batch > 1;
    return config;
}

std::vector<GemmConfig> chosen_gemm_configs(Target target) {
    std::vector<GemmConfig> configs;
    std::pair<Type, Type> const types[] = {{Type::f32, Type::f32},
                                           {Type::f16, Type::f16},
                                           {Type::bf16, Type::bf16},
                                           {Type::f32, Type::f16},
                                           {Type::f32, Type::bf16}};
    for (auto [a, b] : types)
        for (bool b_transposed : {false, true})
            for (bool aligned : {true, false})
                for (TileClass size : {TileClass::large, TileClass::small, TileClass::few_rows})
                    configs.push_back(tile_config(size, a, b, b_transposed, aligned, target));
    if (compute_capability(target) >= 90)
        for (Type t : {Type::f16, Type::bf16, Type::f32})
            for (bool b_transposed : {false, true})
                for (bool batched : {false, true})
                    for (bool wide : {false, true}) {
                        if (t == Type::f32 && !b_transposed) continue;  // tf32 reads b [n, k] only
                        GemmConfig config = wgmma_config(t, b_transposed, wide);
                        config.batched = batched;
                        configs.push_back(config);
                    }
    return configs;
}

Kernel gemm(GemmConfig const& config) {
    GemmConfig const c = gemm_resolved(config);
    switch (c.algorithm) {
        case GemmAlgorithm::simt: return detail::gemm_simt(c);
        case GemmAlgorithm::wgmma: return detail::gemm_wgmma(c);
        default: return detail::gemm_tensor_core(c);
    }
}

namespace detail {

GemmFrame gemm_frame(Kernel& kernel, GemmConfig const& c) {
    GemmFrame f;
    f.a = kernel.cvta_to_global(kernel.param(Type::u64, "a"));
    f.b = kernel.cvta_to_global(kernel.param(Type::u64, "b"));
    f.out = kernel.cvta_to_global(kernel.param(Type::u64, "out"));
    Reg const m = kernel.param(Type::u32, "m"), n = kernel.param(Type::u32, "n"), k = kernel.param(Type::u32, "k");
    // A baked size is a constant ptxas folds through the index arithmetic.
    f.m = c.m != 0 ? kernel.mov(Type::u32, c.m) : m;
    f.n = c.n != 0 ? kernel.mov(Type::u32, c.n) : n;
    f.k = c.k != 0 ? kernel.mov(Type::u32, c.k) : k;
    f.check_m = !(c.m != 0 && c.m % c.tile.m == 0);
    f.check_n = !(c.n != 0 && c.n % c.tile.n == 0);
    f.check_k = !(c.k != 0 && c.k % c.tile.k == 0);
    if (c.batched) {
        kernel.comment("product %ctaid.y of the batch");
        Reg const product = kernel.cvt(Type::u64, kernel.special(Special::ctaid_y));
        for (auto [base, name] :
             {std::pair{&f.a, "a_batch"}, std::pair{&f.b, "b_batch"}, std::pair{&f.out, "out_batch"}})
            *base = kernel.add(*base, kernel.mul(product, kernel.param(Type::u64, name)));
    }
    if (c.bias) f.bias = kernel.cvta_to_global(kernel.param(Type::u64, "bias"));

    // Grouped rasterisation: block ids run down group_m tile rows, then to the next tile column.
    kernel.comment("block tile: groups of " + std::to_string(c.group_m) + " tile rows, column by column");
    Reg const id = kernel.special(Special::ctaid_x);
    Reg const tiles_m = kernel.add(kernel.div(kernel.sub(f.m, 1), c.tile.m), 1);  // m >= 1 when launched
    Reg const tiles_n = kernel.add(kernel.div(kernel.sub(f.n, 1), c.tile.n), 1);
    Reg const group_width = kernel.mul(tiles_n, c.group_m);
    Reg const group = kernel.div(id, group_width);
    Reg const first_m = kernel.mul(group, c.group_m);
    Reg const group_rows = kernel.min(kernel.sub(tiles_m, first_m), c.group_m);
    Reg const in_group = kernel.sub(id, kernel.mul(group, group_width));
    Reg const tile_m = kernel.add(first_m, kernel.rem(in_group, group_rows));
    Reg const tile_n = kernel.div(in_group, group_rows);
    f.row0 = kernel.mul(tile_m, c.tile.m);
    f.col0 = kernel.mul(tile_n, c.tile.n);
    return f;
}

void gemm_pipeline(Kernel& kernel, GemmFrame const& f, unsigned tile_k, unsigned stages, GemmPipeline const& steps) {
    // load_left: k − the first k of the next step to load (0 once all are loaded);
    // compute_left: k − the first k of the step being multiplied.
    Reg const load_left = kernel.mov(Type::u32, f.k), compute_left = kernel.mov(Type::u32, f.k);
    auto const next_load = [&] {
        steps.advance();
        kernel.max(load_left, load_left, tile_k);  // saturating subtraction
        kernel.sub(load_left, load_left, tile_k);
    };
    Label const done = kernel.label();
    if (f.check_k) kernel.bra_if(kernel.setp(Cmp::eq, f.k, 0), done);  // k = 0: out is zeros

    kernel.comment("prologue: " + std::to_string(stages - 1) + " k steps in flight");
    for (unsigned slot = 0; slot + 1 < stages; ++slot) {
        kernel.if_then(kernel.setp(Cmp::ne, load_left, 0), [&] {
            steps.issue(slot, load_left);
            if (steps.store_staged) steps.store_staged(slot);
        });
        if (steps.cp_async) kernel.cp_async_commit();
        next_load();
    }

    Label const top = kernel.label();
    kernel.place(top);
    for (unsigned slot = 0; slot < stages; ++slot) {
        unsigned const free_slot = (slot + stages - 1) % stages;  // read by the previous step
        kernel.comment("k step in slot " + std::to_string(slot));
        if (steps.cp_async) kernel.cp_async_wait(static_cast<int>(stages) - 2);  // this step's copies have landed
        kernel.bar_sync();  // ... for every thread, and the previous step's reads are done
        Reg const has_load = kernel.setp(Cmp::ne, load_left, 0);
        kernel.if_then(has_load, [&] { steps.issue(free_slot, load_left); });
        if (steps.cp_async) kernel.cp_async_commit();
        steps.multiply(slot);
        if (steps.store_staged) kernel.if_then(has_load, [&] { steps.store_staged(free_slot); });
        next_load();
        kernel.bra_if(kernel.setp(Cmp::le, compute_left, tile_k), done);
        kernel.sub(compute_left, compute_left, tile_k);
    }
    kernel.bra(top);
    kernel.place(done);
    if (steps.cp_async) kernel.cp_async_wait(0);
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// SIMT (f32 FFMA) kernel.
//
// Shared memory per stage: a as [tile.k][tile.m + 4] (k-major, so a thread's 8 rows are two
// 16-byte reads), b as [tile.k][tile.n] (+4 when b arrives transposed). Both arrive by cp.async:
// a (and a transposed b) element by element, transposing on the way (4-byte copies; pairs of
// threads read the two halves of a row's 32-byte sector, and the 4-float pad puts the 32 stores
// of a warp in 32 different banks); b as [k, n] in 16-byte copies as it lies.
// Warps are 32x64 of output: lanes 4 (rows) x 8 (columns), each lane 8x8 as rows
// {4·lane_row + i, 16 + 4·lane_row + i} and columns {4·lane_col + j, 32 + 4·lane_col + j}, so the 8
// lanes of a quarter-warp read one a address (broadcast) and 8 consecutive 16-byte b pieces.
// ---------------------------------------------------------------------------------------------

namespace {

using gemm_detail::address_2d;
using gemm_detail::both;
using gemm_detail::load_bias;

// cp.async of `bytes` from `from` to `to`; when `ok` is a predicate and false, 0 bytes are read
// (from the tensor's base, a valid address) and the destination is zero-filled.
void copy_or_zero(Kernel& k, Reg to, Reg from, int bytes, Reg ok, Reg base) {
    if (!ok.valid()) {
        k.cp_async(to, Address(from), bytes);
        return;
    }
    k.cp_async(to, Address(k.selp(from, base, ok, Type::u64)), bytes, k.selp(bytes, 0, ok, Type::u32));
}

// One thread's share of an operand tile per k step: `pieces` runs of 4 floats.
struct SimtLoader {
    bool k_contiguous = true;   // rows run along k (a, transposed b): stored transposed
    unsigned stride = 0;        // bytes between k rows of the operand's shared tile
    Reg base;                   // the tensor
    std::vector<Reg> address;   // per piece: .u64 global address in the current k step
    std::vector<Reg> fixed_ok;  // per piece: the row (k-contiguous) or the run (aligned b) is inside
    std::vector<Reg> index;     // per piece: k offset in the tile (column for k-contiguous, row otherwise)
    std::vector<Reg> column;    // per piece, n-contiguous only: the first output column of the run
    std::vector<Reg> shared;    // per piece: shared address of its first float in slot 0
    Reg step;                   // .u64 bytes to the next k step (n-contiguous only; else an immediate)
};

// gemm_simt's body, one stage per member function. The builder allocates registers as it emits,
// so the stages run in the order the kernel lists them (their numbering follows that order).
struct SimtGemmBuilder {
    SimtGemmBuilder(Kernel& k, GemmConfig const& config)
        : kernel(k),
          c(config),
          tile_m(config.tile.m),
          tile_n(config.tile.n),
          tile_k(config.tile.k),
          threads(config.warps * 32),
          warps_m(tile_m / 32),
          a_stride(tile_m + 4),
          b_stride(config.b_transposed ? tile_n + 4 : tile_n),
          b_region(tile_k * a_stride * 4),
          stage_bytes(b_region + tile_k * b_stride * 4) {}

    // The whole kernel body after the kernel's declaration and thread bound.
    void emit() {
        place_thread();
        make_loaders();
        start_accumulators();
        detail::gemm_pipeline(kernel, f, tile_k, c.stages,
                              {.issue = [this](unsigned slot, Reg k_left) { issue(slot, k_left); },
                               .store_staged = {},
                               .multiply = [this](unsigned slot) { multiply(slot); },
                               .advance = [this] { advance(); }});
        epilogue();
    }

    // The block's frame and tile, shared memory, and the thread's warp and lane coordinates.
    void place_thread() {
        f = detail::gemm_frame(kernel, c);
        smem = kernel.shared_address(kernel.dynamic_shared(16));
        tid = kernel.special(Special::tid_x);
        lane = kernel.and_(tid, 31);
        warp = kernel.shr(tid, 5);
        warp_row = kernel.rem(warp, warps_m);
        warp_col = kernel.div(warp, warps_m);
        lane_row = kernel.shr(lane, 3);
        lane_col = kernel.and_(lane, 7);
    }

    // ---- loaders
    // k-contiguous source (a; b when transposed): rows of `extent` (m or n) starting at `origin`.
    SimtLoader k_contiguous_loader(Reg source, Reg origin, Reg extent, bool check_rows, unsigned rows, unsigned region,
                                   unsigned stride) {
        SimtLoader l;
        l.k_contiguous = true;
        l.stride = stride * 4;
        l.base = source;
        unsigned const pieces = rows * tile_k / 4 / threads;
        Reg const pair = kernel.shr(tid, 1), half = kernel.and_(tid, 1);
        Reg const region_base = kernel.add(smem, region);
        for (unsigned j = 0; j < pieces; ++j) {
            Reg const slot = kernel.add(pair, j * threads / 2);
            Reg const row = kernel.rem(slot, rows);
            Reg const k4 = kernel.add(kernel.mul(kernel.div(slot, rows), 2), half);  // which 4 of the k step
            Reg const col = kernel.shl(k4, 2);
            Reg const global_row = kernel.add(origin, row);
            l.address.push_back(address_2d(kernel, source, global_row, f.k, col, 4));
            l.fixed_ok.push_back(check_rows ? kernel.setp(Cmp::lt, global_row, extent) : Reg{});
            l.index.push_back(col);
            l.shared.push_back(kernel.add(kernel.mul(col, stride * 4), kernel.add(kernel.shl(row, 2), region_base)));
        }
        return l;
    }

    // n-contiguous b: tile_k rows of tile_n floats, 16-byte runs stored as they are.
    SimtLoader n_contiguous_loader() {
        SimtLoader l;
        l.k_contiguous = false;
        l.base = f.b;
        unsigned const pieces = tile_n * tile_k / 4 / threads, runs = tile_n / 4;
        Reg const b_base = kernel.add(smem, b_region);
        for (unsigned j = 0; j < pieces; ++j) {
            Reg const piece = kernel.add(tid, j * threads);
            Reg const k_row = kernel.div(piece, runs);
            Reg const col = kernel.add(f.col0, kernel.shl(kernel.rem(piece, runs), 2));
            l.address.push_back(address_2d(kernel, f.b, k_row, f.n, col, 4));
            l.fixed_ok.push_back(f.check_n && c.aligned ? kernel.setp(Cmp::lt, col, f.n) : Reg{});
            l.index.push_back(k_row);
            l.column.push_back(col);
            Reg const run_offset = kernel.shl(kernel.rem(piece, runs), 4);
            l.shared.push_back(kernel.add(kernel.mul(k_row, b_stride * 4), kernel.add(run_offset, b_base)));
        }
        l.step = kernel.mul_wide(f.n, tile_k * 4);
        return l;
    }

    // The loaders of a and b.
    void make_loaders() {
        kernel.comment("loaders: a" + std::string(c.b_transposed ? " and b" : "") +
                       " transposed into k-major shared memory");
        loaders.push_back(k_contiguous_loader(f.a, f.row0, f.m, f.check_m, tile_m, 0, a_stride));
        loaders.push_back(c.b_transposed ? k_contiguous_loader(f.b, f.col0, f.n, f.check_n, tile_n, b_region, b_stride)
                                         : n_contiguous_loader());
    }

    // The copies of one k step into `slot`; `k_left` = k − (first k of the step) > 0.
    void issue(unsigned slot, Reg k_left) {
        unsigned const slot_offset = slot * stage_bytes;
        for (auto& l : loaders)
            for (std::size_t j = 0; j < l.address.size(); ++j) {
                Reg const to = kernel.add(l.shared[j], slot_offset);
                if (l.k_contiguous)
                    issue_k_contiguous(l, j, to, k_left);
                else
                    issue_n_contiguous(l, j, to, k_left);
            }
    }

    // Piece j of a k-contiguous loader: four 4-byte copies, transposing on the way to `to`.
    void issue_k_contiguous(SimtLoader const& l, std::size_t j, Reg to, Reg k_left) {
        // aligned (k % 4 == 0): a run of 4 is wholly inside or outside k
        Reg const run_ok = c.aligned && f.check_k ? kernel.setp(Cmp::lt, l.index[j], k_left) : Reg{};
        for (unsigned e = 0; e < 4; ++e) {
            Reg k_ok = run_ok;
            if (!c.aligned && f.check_k) k_ok = kernel.setp(Cmp::lt, kernel.add(l.index[j], e), k_left);
            Reg const from = e == 0 ? l.address[j] : kernel.add(l.address[j], e * 4);
            copy_or_zero(kernel, e == 0 ? to : kernel.add(to, e * l.stride), from, 4, both(kernel, l.fixed_ok[j], k_ok),
                         l.base);
        }
    }

    // Piece j of the n-contiguous loader: one 16-byte copy when aligned, else four 4-byte ones.
    void issue_n_contiguous(SimtLoader const& l, std::size_t j, Reg to, Reg k_left) {
        Reg const k_ok = f.check_k ? kernel.setp(Cmp::lt, l.index[j], k_left) : Reg{};
        if (c.aligned) {
            copy_or_zero(kernel, to, l.address[j], 16, both(kernel, l.fixed_ok[j], k_ok), l.base);
        } else {
            for (unsigned e = 0; e < 4; ++e) {
                Reg const n_ok = f.check_n ? kernel.setp(Cmp::lt, kernel.add(l.column[j], e), f.n) : Reg{};
                Reg const from = e == 0 ? l.address[j] : kernel.add(l.address[j], e * 4);
                copy_or_zero(kernel, e == 0 ? to : kernel.add(to, e * 4), from, 4, both(kernel, n_ok, k_ok), l.base);
            }
        }
    }

    // Moves every loader's global addresses on to the next k step.
    void advance() {
        for (auto& l : loaders)
            for (Reg& address : l.address) {
                if (l.k_contiguous)
                    kernel.add(address, address, tile_k * 4);
                else
                    kernel.add(address, address, l.step);
            }
    }

    // ---- accumulators and the thread's shared-memory read addresses (slot 0)
    void start_accumulators() {
        acc.resize(64);
        for (Reg& r : acc) r = kernel.mov(Type::f32, 0.0f);
        a_read = kernel.add(smem, kernel.add(kernel.shl(warp_row, 7), kernel.shl(lane_row, 4)));
        b_read = kernel.add(smem, kernel.add(kernel.add(kernel.shl(warp_col, 8), kernel.shl(lane_col, 4)), b_region));
    }

    // The FMAs of one k step in `slot`: per k, the thread's 8 a and 8 b values into its 8x8 outputs.
    void multiply(unsigned slot) {
        for (unsigned kk = 0; kk < tile_k; ++kk) {
            unsigned const a_at = slot * stage_bytes + kk * a_stride * 4, b_at = slot * stage_bytes + kk * b_stride * 4;
            std::vector<Reg> const a_lo = kernel.ld_vector(Space::shared, Type::f32, 4, Address(a_read, a_at));
            std::vector<Reg> const a_hi = kernel.ld_vector(Space::shared, Type::f32, 4, Address(a_read, a_at + 64));
            std::vector<Reg> const b_lo = kernel.ld_vector(Space::shared, Type::f32, 4, Address(b_read, b_at));
            std::vector<Reg> const b_hi = kernel.ld_vector(Space::shared, Type::f32, 4, Address(b_read, b_at + 128));
            for (unsigned i = 0; i < 8; ++i) {
                Reg const av = i < 4 ? a_lo[i] : a_hi[i - 4];
                for (unsigned j = 0; j < 8; ++j) {
                    Reg const bv = j < 4 ? b_lo[j] : b_hi[j - 4];
                    kernel.fma(acc[i * 8 + j], av, bv, acc[i * 8 + j]);
                }
            }
        }
    }

    // ---- epilogue: rows {4·lane_row + i, 16 + 4·lane_row + i}, columns {4·lane_col, 32 + 4·lane_col} + j
    void epilogue() {
        kernel.comment("epilogue: 8 rows x two 4-column runs per thread");
        Reg const row_t = kernel.add(f.row0, kernel.add(kernel.shl(warp_row, 5), kernel.shl(lane_row, 2)));
        col_t = kernel.add(f.col0, kernel.add(kernel.shl(warp_col, 6), kernel.shl(lane_col, 2)));
        Reg const base = address_2d(kernel, f.out, row_t, f.n, col_t, 4);
        check_columns();
        load_bias_columns();
        for (unsigned i = 0; i < 8; ++i) {
            unsigned const row_offset = i < 4 ? i : 12 + i;
            Reg const row_ok = f.check_m ? kernel.setp(Cmp::lt, kernel.add(row_t, row_offset), f.m) : Reg{};
            Reg const at = row_offset == 0 ? base : kernel.add(base, kernel.mul_wide(f.n, row_offset * 4));
            for (unsigned g = 0; g < 2; ++g) store_run(i, g, row_ok, at);
        }
    }

    // Which of the thread's columns lie inside n (when some may not).
    void check_columns() {
        if (f.check_n)
            for (unsigned g = 0; g < 2; ++g) {
                if (c.aligned) {
                    col_ok.push_back(kernel.setp(Cmp::lt, kernel.add(col_t, g * 32), f.n));
                } else {
                    for (unsigned e = 0; e < 4; ++e)
                        col_ok.push_back(kernel.setp(Cmp::lt, kernel.add(col_t, g * 32 + e), f.n));
                }
            }
    }

    // The bias of the thread's 8 columns, loaded once for its 8 rows.
    void load_bias_columns() {
        if (c.bias)
            for (unsigned g = 0; g < 2; ++g) {
                std::span<Reg const> const ok =
                    f.check_n ? std::span<Reg const>(col_ok).subspan(c.aligned ? g : g * 4, c.aligned ? 1 : 4)
                              : std::span<Reg const>{};
                for (Reg v : load_bias(kernel, f.bias, kernel.add(col_t, g * 32), 4, c.aligned, ok)) bias.push_back(v);
            }
    }

    // Run g (4 columns) of the thread's output row i, plus the bias, stored at `at` where inside.
    void store_run(unsigned i, unsigned g, Reg row_ok, Reg at) {
        std::vector<Reg> run(acc.begin() + i * 8 + g * 4, acc.begin() + i * 8 + g * 4 + 4);
        if (c.bias)
            for (unsigned e = 0; e < 4; ++e) run[e] = kernel.add(run[e], bias[g * 4 + e]);
        if (c.aligned) {
            Reg const ok = both(kernel, row_ok, f.check_n ? col_ok[g] : Reg{});
            auto const store = [&] { kernel.st_vector(Space::global, Type::f32, Address(at, g * 128), run); };
            if (ok.valid())
                kernel.predicated(ok, true, store);
            else
                store();
        } else {
            for (unsigned e = 0; e < 4; ++e) {
                Reg const ok = both(kernel, row_ok, f.check_n ? col_ok[g * 4 + e] : Reg{});
                auto const store = [&] { kernel.st(Space::global, Type::f32, Address(at, g * 128 + e * 4), run[e]); };
                if (ok.valid())
                    kernel.predicated(ok, true, store);
                else
                    store();
            }
        }
    }

    Kernel& kernel;
    GemmConfig const& c;
    unsigned const tile_m, tile_n, tile_k;
    unsigned const threads, warps_m;
    unsigned const a_stride, b_stride;     // floats
    unsigned const b_region, stage_bytes;  // bytes
    detail::GemmFrame f;
    Reg smem, tid, lane, warp, warp_row, warp_col, lane_row, lane_col;
    std::vector<SimtLoader> loaders;
    std::vector<Reg> acc;     // the thread's 8x8 outputs, row by row
    Reg a_read, b_read;       // the thread's shared-memory read addresses in slot 0
    Reg col_t;                // the thread's first output column
    std::vector<Reg> col_ok;  // aligned: per run; element-wise: per run and element
    std::vector<Reg> bias;    // the bias of the thread's 8 columns
};

}  // namespace

Kernel detail::gemm_simt(GemmConfig const& c) {
    unsigned const threads = c.warps * 32;
    Kernel kernel(gemm_name(c));
    // For 256-thread blocks, an upper bound of 512 threads makes ptxas keep to 128 registers
    // (65536 / 512), so two blocks share an SM and one block's barrier stalls are covered by the
    // other's FMAs. Smaller blocks fit several to an SM anyway and keep what ptxas chooses.
    kernel.max_threads(threads == 256 ? 512 : threads);
    SimtGemmBuilder(kernel, c).emit();
    return kernel;
}

}  // namespace rayo::ptx::kernels
