// The Hopper GEMM: a persistent, warp-specialised kernel composed of the stages in
// warpgroup_stages.hpp. Warpgroup 0 produces: one thread walks the block's output tiles and their
// k steps, waits for a free slot, announces its bytes and starts the TMA copies of a's 128 × 64
// tile and b's (tile_n × 64, or 64 × tile_n) into it (f32 operands, read as tf32: 32 k values a
// row). Warpgroups 1 .. tile_m / 64 consume: each waits for the slot, issues four wgmma
// m64n<tile_n>k16 (k8 for tf32) over its 64 rows, keeps one group of MMAs
// in flight and releases the slot the group before read, then stores its f32 accumulators (plus
// the bias) straight from registers. Producer and consumers count k steps the same way, so slot
// and phase follow from one counter (RingPosition).
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ptx/kernels/gemm_addressing.hpp"
#include "ptx/kernels/warpgroup_stages.hpp"
#include "rayo/ptx/kernels/gemm.hpp"

namespace rayo::ptx::kernels {

namespace {

using warpgroup::RingPosition;
using warpgroup::SlotRing;
using warpgroup::TileCoordinates;
using warpgroup::TileSchedule;

// A k step is one 128-byte swizzled row per operand row: 64 16-bit values or 32 f32 (tf32) ones;
// wgmma's k spans 32 bytes of it (k16 of 16-bit values, k8 of tf32).
unsigned element_bytes(GemmConfig const& c) { return static_cast<unsigned>(bytes_of(c.a)); }
unsigned tile_k(GemmConfig const& c) { return warpgroup::swizzle_row / element_bytes(c); }
constexpr unsigned k_atom_bytes = 32;
// Registers per thread: the kernel starts at what 65536 allow its threads, then the producer
// gives back all but what a loop of copies needs and the consumers take the rest.
constexpr unsigned producer_registers = 40;

unsigned consumers_of(GemmConfig const& c) { return c.tile.m / 64; }
unsigned a_tile_bytes(GemmConfig const& c) { return c.tile.m * warpgroup::swizzle_row; }
unsigned b_tile_bytes(GemmConfig const& c) { return c.tile.n * warpgroup::swizzle_row; }
unsigned slot_bytes(GemmConfig const& c) { return a_tile_bytes(c) + b_tile_bytes(c); }

// What both roles read: parameters, the ring and the tile schedule.
struct WgmmaFrame {
    Reg a_map, b_map, out, bias;
    Reg m, n, k, batch, a_step, b_step, out_batch;
    Reg tid, k_steps;
    Reg slots_base;  // shared address of slot 0 (1024-byte aligned)
    SlotRing ring;
    TileSchedule schedule;
};

WgmmaFrame wgmma_frame(Kernel& kernel, GemmConfig const& c) {
    WgmmaFrame f;
    f.a_map = kernel.tensor_map_param("a_map");
    f.b_map = kernel.tensor_map_param("b_map");
    f.out = kernel.cvta_to_global(kernel.param(Type::u64, "out"));
    f.m = kernel.param(Type::u32, "m");
    f.n = kernel.param(Type::u32, "n");
    f.k = kernel.param(Type::u32, "k");
    if (c.batched) {
        f.batch = kernel.param(Type::u32, "batch");
        f.a_step = kernel.param(Type::u32, "a_step");
        f.b_step = kernel.param(Type::u32, "b_step");
        f.out_batch = kernel.param(Type::u64, "out_batch");
    } else {
        f.batch = kernel.mov(Type::u32, 1);
        f.a_step = f.b_step = kernel.mov(Type::u32, 0);
        f.out_batch = kernel.mov(Type::u64, 0);
    }
    if (c.bias) f.bias = kernel.cvta_to_global(kernel.param(Type::u64, "bias"));
    f.tid = kernel.special(Special::tid_x);
    f.k_steps = kernel.div(kernel.add(f.k, tile_k(c) - 1), tile_k(c));

    kernel.comment("shared memory: the slots from the first 1024-byte boundary, then the barriers");
    Reg const raw = kernel.shared_address(kernel.dynamic_shared(1024));
    f.slots_base = kernel.and_(kernel.add(raw, warpgroup::swizzle_atom - 1), ~(warpgroup::swizzle_atom - 1));
    Reg const leader = kernel.setp(Cmp::eq, f.tid, 0);
    // A slot is free once every consumer warpgroup has released it.
    f.ring =
        SlotRing::make(kernel, kernel.add(f.slots_base, c.stages * slot_bytes(c)), c.stages, consumers_of(c), leader);
    kernel.if_then(leader, [&] {
        kernel.prefetch_tensor_map(f.a_map);
        kernel.prefetch_tensor_map(f.b_map);
    });
    kernel.bar_sync();
    f.schedule = TileSchedule::make(kernel, c.tile.m, c.tile.n, c.group_m, f.m, f.n, f.batch);
    return f;
}

// ---- the producer: one thread's TMA copies, slot by slot

void produce(Kernel& kernel, GemmConfig const& c, WgmmaFrame const& f) {
    kernel.comment("producer: TMA copies of every k step of the block's tiles");
    RingPosition const position{kernel.mov(Type::u32, 0)};
    f.schedule.for_each(
        kernel, kernel.special(Special::ctaid_x), kernel.special(Special::nctaid_x), [&](TileCoordinates const& tile) {
            Reg const a_product = kernel.mul(tile.product, f.a_step), b_product = kernel.mul(tile.product, f.b_step);
            Reg const step = kernel.reg(Type::u32);
            kernel.for_range(step, 0, f.k_steps, 1, [&] {
                Reg const slot = position.slot(kernel, c.stages);
                // A fresh barrier's phase before the first counts as complete: the first round passes.
                kernel.mbarrier_wait(f.ring.empty_at(kernel, slot), kernel.xor_(position.parity(kernel, c.stages), 1));
                Reg const full = f.ring.full_at(kernel, slot);
                kernel.mbarrier_arrive_expect_tx(full, slot_bytes(c));
                Reg const a_tile = kernel.add(f.slots_base, kernel.mul(slot, slot_bytes(c)));
                Reg const b_tile = kernel.add(a_tile, a_tile_bytes(c));
                Reg const k0 = kernel.mul(step, tile_k(c));
                std::size_t const rank = c.batched ? 3 : 2;
                std::array const a_at{k0, tile.row0, a_product};
                kernel.tma_load(a_tile, f.a_map, std::span(a_at.data(), rank), full);
                if (c.b_transposed) {  // b [n, k]: tile_n rows of 64 k values
                    std::array const b_at{k0, tile.col0, b_product};
                    kernel.tma_load(b_tile, f.b_map, std::span(b_at.data(), rank), full);
                } else {  // b [k, n] (16-bit): per 64 columns, 64 k rows of 64 n values
                    for (unsigned q = 0; q < c.tile.n / 64; ++q) {
                        std::array const b_at{kernel.add(tile.col0, q * 64), k0, b_product};
                        kernel.tma_load(kernel.add(b_tile, q * 64 * warpgroup::swizzle_row), f.b_map,
                                        std::span(b_at.data(), rank), full);
                    }
                }
                position.advance(kernel);
            });
        });
}

// ---- a consumer: MMAs over the slots, then the epilogue

// The MMAs of one k step on the slot at `a_tile`: four wgmma k steps (k16, or k8 for tf32) of m64n<tile_n>.
void multiply_slot(Kernel& kernel, GemmConfig const& c, Reg a_tile, Reg b_tile, std::vector<Reg> const& acc,
                   Reg accumulate) {
    // a: this consumer's 64 rows, K-major; b: K-major ([n, k]) or N-major ([k, n], 64-column
    // blocks of 64 k rows, 8 KiB apart).
    std::uint64_t const k_major = warpgroup::descriptor_bits(warpgroup::swizzle_row, warpgroup::swizzle_atom);
    std::uint64_t const n_major = warpgroup::descriptor_bits(64 * warpgroup::swizzle_row, warpgroup::swizzle_atom);
    Reg const a_desc = warpgroup::matrix_descriptor(kernel, a_tile, k_major);
    Reg const b_desc = warpgroup::matrix_descriptor(kernel, b_tile, c.b_transposed ? k_major : n_major);
    kernel.wgmma_fence();
    for (unsigned kk = 0; kk < warpgroup::swizzle_row / k_atom_bytes; ++kk) {
        // Along k, a K-major step is 32 bytes into each row; an N-major (16-bit) one 16 rows down.
        Reg const a_k = kk == 0 ? a_desc : kernel.add(a_desc, kk * k_atom_bytes / 16);
        unsigned const b_advance = c.b_transposed ? kk * k_atom_bytes / 16 : kk * 16 * warpgroup::swizzle_row / 16;
        Reg const b_k = kk == 0 ? b_desc : kernel.add(b_desc, b_advance);
        kernel.wgmma(c.b, c.tile.n, acc, a_k, b_k, accumulate, false, !c.b_transposed);
    }
    kernel.wgmma_commit();
}

// Thread t of the consumer holds rows 16·(t / 32) + (t % 32) / 4 + {0, 8} of its 64 and, per 8
// columns j, columns 8j + 2·(t % 4) + {0, 1}: stored as pairs, with the bias, inside m × n.
void store_accumulators(Kernel& kernel, GemmConfig const& c, WgmmaFrame const& f, TileCoordinates const& tile,
                        Reg consumer, std::vector<Reg> const& acc) {
    kernel.comment("epilogue: f32 accumulators to out");
    Reg const t = kernel.rem(f.tid, warpgroup::threads);
    Reg const lane = kernel.and_(t, 31);
    Reg const row = kernel.add(tile.row0, kernel.add(kernel.mul(consumer, 64),
                                                     kernel.add(kernel.shl(kernel.shr(t, 5), 4), kernel.shr(lane, 2))));
    Reg const col = kernel.add(tile.col0, kernel.shl(kernel.and_(lane, 3), 1));
    Reg const product_base = kernel.add(f.out, kernel.mul(kernel.cvt(Type::u64, tile.product), f.out_batch));
    Reg const base = gemm_detail::address_2d(kernel, product_base, row, f.n, col, 4);
    std::vector<Reg> col_ok, bias;
    for (unsigned j = 0; j < c.tile.n / 8; ++j) {
        col_ok.push_back(kernel.setp(Cmp::lt, kernel.add(col, j * 8), f.n));
        if (c.bias) {
            std::array const ok{col_ok.back()};
            for (Reg v : gemm_detail::load_bias(kernel, f.bias, kernel.add(col, j * 8), 2, true, ok)) bias.push_back(v);
        }
    }
    for (unsigned h = 0; h < 2; ++h) {
        Reg const row_ok = kernel.setp(Cmp::lt, kernel.add(row, h * 8), f.m);
        Reg const at = h == 0 ? base : kernel.add(base, kernel.mul_wide(f.n, 8 * 4));
        for (unsigned j = 0; j < c.tile.n / 8; ++j) {
            std::vector<Reg> pair{acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]};
            if (c.bias) pair = {kernel.add(pair[0], bias[2 * j]), kernel.add(pair[1], bias[2 * j + 1])};
            kernel.predicated(kernel.and_pred(row_ok, col_ok[j]), true,
                              [&] { kernel.st_vector(Space::global, Type::f32, Address(at, j * 32), pair); });
        }
    }
}

void consume(Kernel& kernel, GemmConfig const& c, WgmmaFrame const& f, Reg consumer) {
    kernel.comment("consumer: 64 rows of each tile");
    RingPosition const position{kernel.mov(Type::u32, 0)};
    Reg const releaser = kernel.setp(Cmp::eq, kernel.rem(f.tid, warpgroup::threads), 0);
    // wgmma's scale-d as a predicate that always holds: each tile's accumulators start from zeros.
    Reg const accumulate = kernel.setp(Cmp::eq, f.tid, f.tid);
    std::vector<Reg> acc;
    for (unsigned i = 0; i < c.tile.n / 2; ++i) acc.push_back(kernel.reg(Type::f32));
    Reg const a_offset = kernel.mul(consumer, 64 * warpgroup::swizzle_row);
    f.schedule.for_each(kernel, kernel.special(Special::ctaid_x), kernel.special(Special::nctaid_x),
                        [&](TileCoordinates const& tile) {
                            for (Reg r : acc) kernel.mov(r, 0.0f);
                            Reg const previous = kernel.mov(Type::u32, 0);  // the slot the MMAs in flight read
                            Reg const step = kernel.reg(Type::u32);
                            kernel.for_range(step, 0, f.k_steps, 1, [&] {
                                Reg const slot = position.slot(kernel, c.stages);
                                kernel.mbarrier_wait(f.ring.full_at(kernel, slot), position.parity(kernel, c.stages));
                                Reg const a_tile = kernel.add(f.slots_base, kernel.mul(slot, slot_bytes(c)));
                                multiply_slot(kernel, c, kernel.add(a_tile, a_offset),
                                              kernel.add(a_tile, a_tile_bytes(c)), acc, accumulate);
                                // The previous k step's MMAs are done once at most this one's group is pending.
                                kernel.wgmma_wait(1);
                                kernel.if_then(kernel.and_pred(releaser, kernel.setp(Cmp::ne, step, 0)),
                                               [&] { kernel.mbarrier_arrive(f.ring.empty_at(kernel, previous)); });
                                kernel.mov(previous, slot);
                                position.advance(kernel);
                            });
                            kernel.wgmma_wait(0);
                            kernel.if_then(kernel.and_pred(releaser, kernel.setp(Cmp::ne, f.k_steps, 0)),
                                           [&] { kernel.mbarrier_arrive(f.ring.empty_at(kernel, previous)); });
                            store_accumulators(kernel, c, f, tile, consumer, acc);
                        });
}

}  // namespace

std::uint32_t detail::wgmma_shared_bytes(GemmConfig const& c) {
    // The slots, the alignment slack of the dynamic window, the barriers.
    return c.stages * slot_bytes(c) + warpgroup::swizzle_atom + c.stages * 16;
}

std::array<TensorMapSpec, 2> gemm_tensor_maps(GemmConfig const& config, GemmOperands const& o) {
    GemmConfig const c = gemm_resolved(config);
    if (c.algorithm != GemmAlgorithm::wgmma)
        throw BuildError("gemm_tensor_maps: " + gemm_name(c) + " takes no tensor maps");
    unsigned const rank = c.batched ? 3 : 2;
    // Every product's matrix where it has one; else a batch dimension of 1 that step 0 stays in.
    auto const batch_dim = [&](std::uint64_t bytes) { return bytes != 0 ? o.batch : std::uint64_t{1}; };
    auto const batch_stride = [&](std::uint64_t bytes, std::uint64_t matrix_bytes) {
        return bytes != 0 ? bytes : matrix_bytes;
    };
    std::uint64_t const bytes = element_bytes(c);
    TensorMapSpec a{.address = o.a, .element = c.a, .rank = rank, .swizzle = TensorMapSwizzle::swizzle_128b};
    a.dims = {o.k, o.m, batch_dim(o.a_batch_bytes)};
    a.strides = {0, o.k * bytes, batch_stride(o.a_batch_bytes, o.m * o.k * bytes)};
    a.box = {tile_k(c), c.tile.m, 1};
    TensorMapSpec b{.address = o.b, .element = c.b, .rank = rank, .swizzle = TensorMapSwizzle::swizzle_128b};
    if (c.b_transposed) {
        b.dims = {o.k, o.n, batch_dim(o.b_batch_bytes)};
        b.strides = {0, o.k * bytes, batch_stride(o.b_batch_bytes, o.n * o.k * bytes)};
        b.box = {tile_k(c), c.tile.n, 1};
    } else {
        b.dims = {o.n, o.k, batch_dim(o.b_batch_bytes)};
        b.strides = {0, o.n * bytes, batch_stride(o.b_batch_bytes, o.n * o.k * bytes)};
        b.box = {64, tile_k(c), 1};
    }
    return {a, b};
}

Kernel detail::gemm_wgmma(GemmConfig const& c) {
    Kernel kernel(gemm_name(c));
    unsigned const threads = c.warps * 32;
    kernel.max_threads(threads);
    // setmaxnreg needs a cap at entry: what the multiprocessor's 65536 registers give each thread.
    kernel.max_registers(65536 / threads / 8 * 8);
    WgmmaFrame const f = wgmma_frame(kernel, c);
    Reg const role = kernel.div(f.tid, warpgroup::threads);
    unsigned const consumer_registers = std::min(
        256u, (65536 - producer_registers * warpgroup::threads) / (consumers_of(c) * warpgroup::threads) / 8 * 8);
    kernel.if_then_else(
        kernel.setp(Cmp::eq, role, 0),
        [&] {
            kernel.setmaxnreg(RegisterChange::decrease, producer_registers);
            kernel.if_then(kernel.setp(Cmp::eq, f.tid, 0), [&] { produce(kernel, c, f); });
        },
        [&] {
            kernel.setmaxnreg(RegisterChange::increase, consumer_registers);
            consume(kernel, c, f, kernel.sub(role, 1));
        });
    return kernel;
}

}  // namespace rayo::ptx::kernels
