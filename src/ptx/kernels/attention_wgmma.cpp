// The Hopper flash-attention kernel (rayo/ptx/kernels/attention.hpp, algorithm wgmma), composed of
// the stages in warpgroup_stages.hpp. A block owns 128 query rows of one (batch, head) and has
// three warpgroups. Warpgroup 0 produces: one thread copies the block's q tile once, then every key
// block's k tile (128 keys) into a ring of two slots by TMA, and a thread of another warp the v
// tiles into a ring of their own, each tile announced on its own barrier. Warpgroups 1 and 2
// consume, 64 rows each: S = q·kᵀ as d / 16 wgmma m64n128k16 from shared memory, the online
// softmax in registers, and O += P·V with P rounded to the element type and fed from registers
// (wgmma's A) against v's slot read N-major. A consumer issues block j's scores with block j − 1's
// P·V and runs block j's softmax while that P·V computes; the two consumers take turns at issuing
// MMAs, so one's softmax also overlaps the other's MMAs.
//
// Tiles are 16-bit rows of 64 elements stored with the 128-byte swizzle: a tile of r rows × d
// columns is d / 64 boxes of r × 128 bytes, column block after column block.
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "ptx/kernels/attention_common.hpp"
#include "ptx/kernels/warpgroup_stages.hpp"

namespace rayo::ptx::kernels {

namespace {

using namespace attention_detail;
using warpgroup::RingPosition;
using warpgroup::SlotRing;

constexpr unsigned block_rows = 128;  // query rows a block: 64 a consumer warpgroup
constexpr unsigned key_block = 128;   // keys a k or v tile
constexpr unsigned slots = 2;         // slots of each ring
constexpr unsigned consumers = 2;
constexpr unsigned box_columns = 64;  // 16-bit values of one 128-byte swizzled row
// Registers per thread: the producers' two threads need few; the consumers hold S (64), O
// (d / 2) and P (32) at once. 24·128 + 240·256 fill the multiprocessor's 65536.
constexpr unsigned producer_registers = 24;
constexpr unsigned consumer_registers = 240;

unsigned q_bytes(unsigned d) { return block_rows * d * 2; }
unsigned tile_bytes(unsigned d) { return key_block * d * 2; }
unsigned box_bytes(unsigned rows) { return rows * warpgroup::swizzle_row; }

// What both roles read: the parameters, the block's place and the shared-memory layout.
struct WgmmaAttentionFrame {
    Reg q_map, k_map, v_map, out;
    AttentionFrame sizes;  // q_len, kv_len, heads, kv_heads, query_offset, causal, scale_log2
    Reg tid, h, hk, b, row0, blocks;
    Reg q_smem, k_smem, v_smem, q_full;
    SlotRing k_ring, v_ring;
};

WgmmaAttentionFrame frame(Kernel& k, AttentionConfig const& c) {
    WgmmaAttentionFrame f;
    f.q_map = k.tensor_map_param("q_map");
    f.k_map = k.tensor_map_param("k_map");
    f.v_map = k.tensor_map_param("v_map");
    f.out = k.cvta_to_global(k.param(Type::u64, "out"));
    AttentionFrame& s = f.sizes;
    attention_sizes(k, s);
    f.tid = k.special(Special::tid_x);

    // Blocks walk the heads in groups of `group_heads` (a parameter): within a group the heads run
    // fastest and the row blocks last to first, so the longest causal blocks of a group start first
    // and the blocks resident together read the k and v of a group's heads.
    k.comment("block: rows (last block first) and head from ctaid.x in groups of heads; batch");
    Reg const group_heads = k.param(Type::u32, "group_heads");
    Reg const row_blocks = k.div(k.add(s.q_len, block_rows - 1), block_rows);
    Reg const id = k.special(Special::ctaid_x);
    Reg const group_size = k.mul(row_blocks, group_heads);
    Reg const group = k.div(id, group_size);
    Reg const first_head = k.mul(group, group_heads);
    Reg const group_width = k.min(k.sub(s.heads, first_head), group_heads);  // the last group may be narrower
    Reg const in_group = k.sub(id, k.mul(group, group_size));
    f.h = k.add(first_head, k.rem(in_group, group_width));
    f.row0 = k.mul(k.sub(k.sub(row_blocks, 1u), k.div(in_group, group_width)), block_rows);
    f.b = k.special(Special::ctaid_y);
    f.hk = k.div(f.h, k.div(s.heads, s.kv_heads));
    Reg const last_row = k.sub(k.min(k.add(f.row0, block_rows), s.q_len), 1u);
    Reg const keys_seen = k.max(k.add(last_visible_key(k, s, last_row), 1), 0);
    f.blocks = k.div(k.add(k.bitcast(Type::u32, keys_seen), key_block - 1), key_block);

    k.comment("shared memory from the first 1024-byte boundary: q, the k slots, the v slots, the barriers");
    Reg const raw = k.shared_address(k.dynamic_shared(1024));
    f.q_smem = k.and_(k.add(raw, warpgroup::swizzle_atom - 1), ~(warpgroup::swizzle_atom - 1));
    f.k_smem = k.add(f.q_smem, q_bytes(c.head_dim));
    f.v_smem = k.add(f.k_smem, slots * tile_bytes(c.head_dim));
    f.q_full = k.add(f.v_smem, slots * tile_bytes(c.head_dim));
    Reg const leader = k.setp(Cmp::eq, f.tid, 0);
    k.if_then(leader, [&] { k.mbarrier_init(f.q_full, 1); });
    f.k_ring = SlotRing::make(k, k.add(f.q_full, 8), slots, consumers, leader);
    f.v_ring = SlotRing::make(k, k.add(f.q_full, 8 + 16 * slots), slots, consumers, leader);
    k.if_then(leader, [&] {
        k.prefetch_tensor_map(f.q_map);
        k.prefetch_tensor_map(f.k_map);
        k.prefetch_tensor_map(f.v_map);
    });
    k.bar_sync();
    return f;
}

// ---- the producers: two threads' TMA copies

// The d / 64 boxes of `rows` rows of the tile at `at`, from (column 64·j, head, row, batch).
void load_tile(Kernel& k, unsigned d, Reg at, Reg map, Reg head, Reg row, Reg batch, Reg barrier, unsigned rows) {
    for (unsigned j = 0; j < d / box_columns; ++j) {
        std::array const coordinates{k.mov(Type::u32, j * box_columns), head, row, batch};
        k.tma_load(k.add(at, j * box_bytes(rows)), map, coordinates, barrier);
    }
}

// Waits for the slot of key block `jb` to be free, then copies the block's tile of `map` into it.
void load_key_block(Kernel& k, unsigned d, WgmmaAttentionFrame const& f, SlotRing const& ring, Reg tiles, Reg map,
                    Reg jb) {
    // Key block jb is the rings' position jb.
    RingPosition const at{jb};
    Reg const slot = at.slot(k, slots);
    // A fresh barrier's phase before the first counts as complete: the first round passes.
    k.mbarrier_wait(ring.empty_at(k, slot), k.xor_(at.parity(k, slots), 1));
    Reg const full = ring.full_at(k, slot);
    k.mbarrier_arrive_expect_tx(full, tile_bytes(d));
    load_tile(k, d, k.add(tiles, k.mul(slot, tile_bytes(d))), map, f.hk, k.mul(jb, key_block), f.b, full, key_block);
}

// Two producer threads, each a ring to itself, so that a k tile is never queued behind a v slot
// still in use: warp 0's first lane copies q, then the k tiles; warp 1's first lane the v tiles.
void produce_keys(Kernel& k, AttentionConfig const& c, WgmmaAttentionFrame const& f) {
    unsigned const d = c.head_dim;
    k.comment("producer of q and the k tiles");
    k.mbarrier_arrive_expect_tx(f.q_full, q_bytes(d));
    load_tile(k, d, f.q_smem, f.q_map, f.h, f.row0, f.b, f.q_full, block_rows);
    Reg const jb = k.reg(Type::u32);
    k.for_range(jb, 0u, f.blocks, 1u, [&] { load_key_block(k, d, f, f.k_ring, f.k_smem, f.k_map, jb); });
}

void produce_values(Kernel& k, AttentionConfig const& c, WgmmaAttentionFrame const& f) {
    k.comment("producer of the v tiles");
    Reg const jb = k.reg(Type::u32);
    k.for_range(jb, 0u, f.blocks, 1u, [&] { load_key_block(k, c.head_dim, f, f.v_ring, f.v_smem, f.v_map, jb); });
}

// ---- a consumer: 64 query rows

// Thread t of the consumer holds, per key or column block j of 8, elements 4j + 2h + e at row
// 16·(t / 32) + (t % 32) / 4 + 8h of its 64 and column 8j + 2·(t % 4) + e (wgmma's d layout).
struct ConsumerRows {
    Reg first;     // the consumer's first query row
    Reg lane_row;  // the thread's row for h = 0
    Reg key_col;   // .s32 2·(t % 4)
};

// Issues S = q·kᵀ over key block jb once its k tile has landed: d / 16 MMAs, one group.
void issue_scores(Kernel& k, AttentionConfig const& c, WgmmaAttentionFrame const& f, std::vector<Reg> const& q_desc,
                  Reg jb, std::vector<Reg> const& s, Reg zero_first) {
    unsigned const d = c.head_dim;
    Type const input = element_detail::mma_type(c.element);
    RingPosition const at{jb};
    Reg const slot = at.slot(k, slots);
    k.mbarrier_wait(f.k_ring.full_at(k, slot), at.parity(k, slots));
    std::uint64_t const k_major = warpgroup::descriptor_bits(warpgroup::swizzle_row, warpgroup::swizzle_atom);
    Reg const k_desc = warpgroup::matrix_descriptor(k, k.add(f.k_smem, k.mul(slot, tile_bytes(d))), k_major);
    Reg const accumulate = k.not_pred(zero_first);
    k.wgmma_fence();
    for (unsigned kk = 0; kk < d / 16; ++kk) {
        // Along d, a k16 step is 32 bytes into each row of a box (2 descriptor units).
        unsigned const box = kk / 4, step = (kk % 4) * 2;
        Reg const a = k.add(q_desc[box], step);
        Reg const b = k.add(k_desc, box * box_bytes(key_block) / 16 + step);
        k.wgmma(input, key_block, s, a, b, kk == 0 ? zero_first : accumulate);
    }
    k.wgmma_commit();
}

// Issues O += P·V over key block jb once its v tile has landed: P (the packed probabilities) from
// registers, v's slot read N-major; 8 MMAs, one group.
void issue_values(Kernel& k, AttentionConfig const& c, WgmmaAttentionFrame const& f,
                  std::vector<std::array<Reg, 4>> const& p, Reg jb, std::vector<Reg> const& o, Reg always) {
    unsigned const d = c.head_dim;
    Type const input = element_detail::mma_type(c.element);
    RingPosition const at{jb};
    Reg const slot = at.slot(k, slots);
    k.mbarrier_wait(f.v_ring.full_at(k, slot), at.parity(k, slots));
    // v: per 64 columns a box of 128 keys; 8-key atoms 1024 bytes apart, the next 64 columns a box on.
    Reg const v_desc =
        warpgroup::matrix_descriptor(k, k.add(f.v_smem, k.mul(slot, tile_bytes(d))),
                                     warpgroup::descriptor_bits(box_bytes(key_block), warpgroup::swizzle_atom));
    k.wgmma_fence();
    for (unsigned kk = 0; kk < key_block / 16; ++kk) {
        // Along the keys, a k16 step is 16 rows of 128 bytes.
        Reg const b = kk == 0 ? v_desc : k.add(v_desc, kk * 16 * warpgroup::swizzle_row / 16);
        k.wgmma(input, d, o, p[kk], b, always, true);
    }
    k.wgmma_commit();
}

// The consumer's arrival on the slot of key block jb: the warpgroup's MMAs reading it are done.
void release(Kernel& k, SlotRing const& ring, Reg jb, Reg releaser) {
    k.if_then(releaser, [&] { k.mbarrier_arrive(ring.empty_at(k, RingPosition{jb}.slot(k, slots))); });
}

// Scores to the exp2 domain; keys past a row's causal limit or the keys' end to −Inf where the
// block reaches past the consumer's first row's limit.
void scale_and_hide(Kernel& k, WgmmaAttentionFrame const& f, ConsumerRows const& rows, Reg jb,
                    std::vector<Reg> const& s) {
    AttentionFrame const& sizes = f.sizes;
    Reg const block_key = k.bitcast(Type::s32, k.mul(jb, key_block));
    auto const scale = [&] {
        for (Reg r : s) k.mul(r, r, sizes.scale_log2);
    };
    auto const hide = [&] {
        scale();
        Reg const lane_key = k.add(block_key, rows.key_col);
        std::array<Reg, 2> ends;
        for (unsigned h = 0; h < 2; ++h) ends[h] = last_visible_key(k, sizes, k.add(rows.lane_row, h * 8));
        for (unsigned j = 0; j < key_block / 8; ++j)
            for (unsigned e = 0; e < 4; ++e) {
                Reg const key = k.add(lane_key, static_cast<int>(j * 8 + e % 2));
                Reg const r = s[4 * j + e];
                k.selp(r, r, minus_infinity, k.setp(Cmp::le, key, ends[e / 2]));
            }
    };
    Reg const first_end = last_visible_key(k, sizes, rows.first);
    k.if_then_else(k.setp(Cmp::gt, k.add(block_key, static_cast<int>(key_block - 1)), first_end), hide, scale);
}

// The online softmax of the thread's two rows over key block jb's scores: S becomes P = 2^(S −
// max) in place; per row the factor for the old O and l, and P's sum.
struct RowUpdate {
    Reg alpha, sum;
};
// The values combined pairwise: a tree of depth log2(n) instead of a chain of n − 1 dependent
// instructions.
template <class Combine>
Reg combine_tree(std::vector<Reg> values, Combine combine) {
    while (values.size() > 1) {
        std::vector<Reg> next;
        for (std::size_t i = 0; i + 1 < values.size(); i += 2) next.push_back(combine(values[i], values[i + 1]));
        if (values.size() % 2 != 0) next.push_back(values.back());
        values = std::move(next);
    }
    return values.front();
}

std::array<RowUpdate, 2> exponentiate(Kernel& k, std::vector<Reg> const& s, std::array<Reg, 2> const& m) {
    std::array<RowUpdate, 2> updates;
    for (unsigned h = 0; h < 2; ++h) {
        std::vector<Reg> row;  // the thread's scores of row h
        for (unsigned j = 0; j < key_block / 8; ++j)
            for (unsigned e = 0; e < 2; ++e) row.push_back(s[4 * j + 2 * h + e]);
        Reg const block_max = combine_tree(row, [&](Reg a, Reg b) { return k.max(a, b); });
        SoftmaxStep const step = softmax_step(k, m[h], butterfly_max(k, block_max, 2));
        for (Reg r : row) k.mov(r, k.ex2_approx(k.sub(r, step.subtract)));
        updates[h] = {step.alpha, combine_tree(row, [&](Reg a, Reg b) { return k.add(a, b); })};
    }
    return updates;
}

// O and l rescaled to the new row maxima, l grown by P's sums, and P rounded into `p` (the A
// operands of the next P·V, k16 step by k16 step).
void absorb(Kernel& k, DType element, std::array<RowUpdate, 2> const& updates, std::vector<Reg> const& s,
            std::vector<Reg> const& o, std::array<Reg, 2> const& l, std::vector<std::array<Reg, 4>> const& p) {
    for (unsigned h = 0; h < 2; ++h) {
        k.fma(l[h], l[h], updates[h].alpha, updates[h].sum);
        for (std::size_t j = 0; j < o.size() / 4; ++j)
            for (unsigned e = 0; e < 2; ++e) k.mul(o[4 * j + 2 * h + e], o[4 * j + 2 * h + e], updates[h].alpha);
    }
    for (unsigned kk = 0; kk < key_block / 16; ++kk) {
        Reg const* q = s.data() + 8 * kk;
        for (unsigned r = 0; r < 4; ++r) k.mov(p[kk][r], pack_pair(k, element, q[2 * r], q[2 * r + 1]));
    }
}

// O / l rounded to the element type, to out's rows inside q_len.
void store_rows(Kernel& k, AttentionConfig const& c, WgmmaAttentionFrame const& f, ConsumerRows const& rows,
                std::vector<Reg> const& o, std::array<Reg, 2> const& l) {
    unsigned const d = c.head_dim;
    k.comment("epilogue: O / l, rounded to the element type");
    Reg const t = k.rem(f.tid, warpgroup::threads);
    Reg const row_bytes = k.mul_wide(f.sizes.heads, d * 2);
    Reg const first = k.add(k.mul(k.add(k.mul(f.b, f.sizes.q_len), rows.lane_row), f.sizes.heads), f.h);
    Reg const lane_out = k.add(k.add(f.out, k.mul_wide(first, d * 2)), k.cvt(Type::u64, k.shl(k.and_(t, 3u), 2u)));
    for (unsigned h = 0; h < 2; ++h) {
        Reg const inverse = inverse_sum(k, butterfly_sum(k, l[h], 2));
        Reg const at = h == 0 ? lane_out : k.add(lane_out, k.mul(row_bytes, std::uint64_t{8}));
        std::vector<Reg> words;
        for (unsigned j = 0; j < d / 8; ++j)
            words.push_back(
                pack_pair(k, c.element, k.mul(o[4 * j + 2 * h], inverse), k.mul(o[4 * j + 2 * h + 1], inverse)));
        k.if_then(k.setp(Cmp::lt, k.add(rows.lane_row, h * 8), f.sizes.q_len), [&] {
            for (unsigned j = 0; j < d / 8; ++j) k.st(Space::global, Type::b32, Address(at, j * 16), words[j]);
        });
    }
}

// The two consumers take turns at the tensor cores (ping-pong): each issues its MMAs once the other
// has issued its own, so that one's softmax runs while the other's MMAs compute. Named barrier 1 + c
// is consumer c's turn; the other consumer's bar.arrive opens it.
struct Turns {
    Reg first_consumer;  // .pred: consumer 0
    static constexpr unsigned threads = 2 * warpgroup::threads;

    void take(Kernel& k) const {
        k.if_then_else(
            first_consumer, [&] { k.bar_sync(1, threads); }, [&] { k.bar_sync(2, threads); });
    }
    void pass(Kernel& k) const {
        k.if_then_else(
            first_consumer, [&] { k.bar_arrive(2, threads); }, [&] { k.bar_arrive(1, threads); });
    }
    // After its last turn consumer 1 passes no more: no turn of consumer 0 is left to open.
    void pass_last(Kernel& k) const {
        k.if_then(first_consumer, [&] { k.bar_arrive(2, threads); });
    }
};

// The consumer's loop keeps the tensor cores busy through its softmax: block j's scores and block
// j − 1's P·V are issued together, and block j's softmax runs while that P·V is computed.
void consume(Kernel& k, AttentionConfig const& c, WgmmaAttentionFrame const& f, Reg consumer) {
    unsigned const d = c.head_dim;
    k.comment("consumer: 64 query rows against every key block");
    Reg const t = k.rem(f.tid, warpgroup::threads);
    ConsumerRows rows;
    rows.first = k.add(f.row0, k.mul(consumer, 64));
    rows.lane_row = k.add(rows.first, k.add(k.shl(k.shr(t, 5), 4), k.shr(k.and_(t, 31), 2)));
    rows.key_col = k.bitcast(Type::s32, k.shl(k.and_(t, 3), 1));
    Reg const releaser = k.setp(Cmp::eq, t, 0);
    Reg const always = k.setp(Cmp::eq, f.tid, f.tid);
    Reg const zero_first = k.not_pred(always);  // wgmma's scale-d for S's first k step

    // q's descriptors, one per box of 64 columns: the consumer's 64 rows of it.
    std::uint64_t const k_major = warpgroup::descriptor_bits(warpgroup::swizzle_row, warpgroup::swizzle_atom);
    std::vector<Reg> q_desc;
    for (unsigned box = 0; box < d / box_columns; ++box)
        q_desc.push_back(warpgroup::matrix_descriptor(
            k, k.add(k.add(f.q_smem, box * box_bytes(block_rows)), k.mul(consumer, 64 * warpgroup::swizzle_row)),
            k_major));

    std::vector<Reg> s(key_block / 2), o(d / 2);
    // S starts defined though its first MMA of a block ignores it (scale-d false).
    for (Reg& r : s) r = k.mov(Type::f32, 0.0f);
    for (Reg& r : o) r = k.mov(Type::f32, 0.0f);
    std::vector<std::array<Reg, 4>> p(key_block / 16);
    for (auto& fragment : p)
        for (Reg& r : fragment) r = k.reg(Type::b32);
    std::array<Reg, 2> const m{k.mov(Type::f32, minus_infinity), k.mov(Type::f32, minus_infinity)};
    std::array<Reg, 2> const l{k.mov(Type::f32, 0.0f), k.mov(Type::f32, 0.0f)};
    k.mbarrier_wait(f.q_full, 0);

    Turns const turns{k.setp(Cmp::eq, consumer, 0u)};
    k.if_then(k.setp(Cmp::gt, f.blocks, 0u), [&] {
        k.if_then(k.not_pred(turns.first_consumer), [&] { k.bar_arrive(1, Turns::threads); });  // consumer 0 goes first
        k.comment("key block 0: S, softmax, P");
        Reg const first = k.mov(Type::u32, 0u);
        turns.take(k);
        issue_scores(k, c, f, q_desc, first, s, zero_first);
        turns.pass(k);
        k.wgmma_wait(0);
        release(k, f.k_ring, first, releaser);
        scale_and_hide(k, f, rows, first, s);
        absorb(k, c.element, exponentiate(k, s, m), s, o, l, p);

        Reg const jb = k.reg(Type::u32);
        k.for_range(jb, 1u, f.blocks, 1u, [&] {
            k.comment("S of block j and P v of block j - 1 issued; softmax of block j under the P v");
            Reg const previous = k.sub(jb, 1u);
            turns.take(k);
            issue_scores(k, c, f, q_desc, jb, s, zero_first);
            issue_values(k, c, f, p, previous, o, always);
            turns.pass(k);
            k.wgmma_wait(1);
            release(k, f.k_ring, jb, releaser);
            scale_and_hide(k, f, rows, jb, s);
            std::array<RowUpdate, 2> const updates = exponentiate(k, s, m);
            k.wgmma_wait(0);
            release(k, f.v_ring, previous, releaser);
            absorb(k, c.element, updates, s, o, l, p);
        });
        k.comment("P v of the last block");
        Reg const last = k.sub(f.blocks, 1u);
        turns.take(k);
        issue_values(k, c, f, p, last, o, always);
        turns.pass_last(k);
        k.wgmma_wait(0);
        release(k, f.v_ring, last, releaser);
    });
    store_rows(k, c, f, rows, o, l);
}

}  // namespace

namespace detail {

unsigned attention_wgmma_shared_bytes(AttentionConfig const& c) {
    // q, the slots, the alignment slack of the dynamic window, the barriers.
    return q_bytes(c.head_dim) + 2 * slots * tile_bytes(c.head_dim) + warpgroup::swizzle_atom + 8 + 32 * slots;
}

Kernel attention_wgmma(AttentionConfig const& c) {
    Kernel k(attention_name(c));
    unsigned const threads = (1 + consumers) * warpgroup::threads;
    k.max_threads(threads);
    // setmaxnreg needs a cap at entry: what the multiprocessor's 65536 registers give each thread.
    k.max_registers(65536 / threads / 8 * 8);
    WgmmaAttentionFrame const f = frame(k, c);
    Reg const role = k.div(f.tid, warpgroup::threads);
    k.if_then_else(
        k.setp(Cmp::eq, role, 0),
        [&] {
            k.setmaxnreg(RegisterChange::decrease, producer_registers);
            k.if_then(k.setp(Cmp::eq, f.tid, 0), [&] { produce_keys(k, c, f); });
            k.if_then(k.setp(Cmp::eq, f.tid, 32), [&] { produce_values(k, c, f); });
        },
        [&] {
            k.setmaxnreg(RegisterChange::increase, consumer_registers);
            consume(k, c, f, k.sub(role, 1));
        });
    return k;
}

}  // namespace detail

std::array<TensorMapSpec, 3> attention_tensor_maps(AttentionConfig const& c, AttentionOperands const& o) {
    if (c.algorithm != AttentionAlgorithm::wgmma)
        throw BuildError("attention_tensor_maps: " + attention_name(c) + " takes no tensor maps");
    Type const element = element_detail::mma_type(c.element);
    std::uint64_t const d = c.head_dim, row = d * 2;
    // [batch, rows, heads, head_dim] as (column, head, row, batch); boxes of 64 columns of one head.
    auto const map = [&](std::uint64_t address, std::uint64_t rows, std::uint64_t heads, std::uint32_t box_rows) {
        TensorMapSpec s{.address = address, .element = element, .rank = 4, .swizzle = TensorMapSwizzle::swizzle_128b};
        s.dims = {d, heads, rows, o.batch};
        s.strides = {0, row, heads * row, rows * heads * row};
        s.box = {box_columns, 1, box_rows, 1};
        return s;
    };
    return {map(o.q, o.q_len, o.heads, block_rows), map(o.k, o.kv_len, o.kv_heads, key_block),
            map(o.v, o.kv_len, o.kv_heads, key_block)};
}

}  // namespace rayo::ptx::kernels
