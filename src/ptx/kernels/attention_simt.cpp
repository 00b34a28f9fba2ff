// The SIMT flash-attention kernel (rayo/ptx/kernels/attention.hpp, algorithm simt) and the
// combine kernel of its split-key form.
//
// Each warp is a worker of its own: no block-wide barrier, its shared memory its own: the q rows
// it serves (f32, prescaled by scale·log2 e), then one or two slots of (k tile, v tile) of 32 keys.
// Tile rows are head_dim elements and 16 padding bytes, so lane l reading 16 bytes of key row l
// (the scores) meets 8 different 16-byte bank groups in each quarter warp.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "ptx/kernels/attention_common.hpp"
#include "ptx/kernels/element_access.hpp"

namespace rayo::ptx::kernels {

namespace {

using namespace attention_detail;
using element_detail::is_16bit;

constexpr unsigned tile_keys = 32;

// A warp's shared memory and how its tiles are copied.
struct SimtLayout {
    unsigned element_bytes, words, chunks, padded_dim, stride, tile_bytes, word_steps, q_bytes, stages, warp_bytes;
    explicit SimtLayout(AttentionConfig const& c) {
        element_bytes = is_16bit(c.element) ? 2 : 4;
        chunks = (c.head_dim * element_bytes + 15) / 16;  // a row padded with zeros to whole chunks
        words = chunks * 4;
        padded_dim = words * 4 / element_bytes;
        stride = words * 4 + 16;
        tile_bytes = tile_keys * stride;
        word_steps = (words + 31) / 32;
        q_bytes = c.rows * padded_dim * 4;
        // P·V lanes read words up to 32·word_steps of a row: the last row's may pass the tile.
        unsigned const slack = std::max(word_steps * 128, stride) - stride;
        auto bytes = [&](unsigned s) { return (q_bytes + s * 2 * tile_bytes + slack + 15) / 16 * 16; };
        stages = c.aligned && bytes(2) <= attention_simt_block_budget ? 2 : 1;
        warp_bytes = bytes(stages);
    }
};

// A warp's copies of one tile (32 key rows of `chunks` 16-byte chunks): pieces (pass p, column
// step q) at row lane_row + p·rows_per_pass and chunk lane_chunk + 32·q.
struct WarpTileCopy {
    unsigned rows_per_pass = 1, passes = 0, column_steps = 1, stride = 0;
    Reg lane_row, lane_shared, lane_global, pass_bytes;
    Reg takes_part;  // the lane has a chunk (invalid: every lane has)
    bool last_pass_partial = false;

    WarpTileCopy(Kernel& k, Reg lane, SimtLayout const& layout, Reg row_bytes) {
        stride = layout.stride;
        unsigned const chunks = layout.chunks;
        Reg lane_chunk;
        if (chunks <= 32) {
            rows_per_pass = 32 / chunks;
            lane_row = k.div(lane, chunks);
            lane_chunk = k.rem(lane, chunks);
            if (32 % chunks != 0) takes_part = k.setp(Cmp::lt, lane, rows_per_pass * chunks);
        } else {
            column_steps = chunks / 32;
            lane_row = k.mov(Type::u32, 0u);
            lane_chunk = lane;
        }
        passes = (tile_keys + rows_per_pass - 1) / rows_per_pass;
        last_pass_partial = passes * rows_per_pass > tile_keys;
        lane_shared = k.add(k.mul(lane_row, stride), k.shl(lane_chunk, 4u));
        lane_global = k.add(k.mul_wide(lane_row, row_bytes), k.cvt(Type::u64, k.shl(lane_chunk, 4u)));
        pass_bytes = k.mul_wide(row_bytes, rows_per_pass);
    }

    // The tile whose first key row is at `first` into `shared`; rows at or past `rows_left` zero-filled.
    void issue(Kernel& k, Reg shared, Reg first, Reg rows_left, Reg base) const {
        Reg address = k.add(first, lane_global);
        Reg const at = k.add(shared, lane_shared);
        for (unsigned p = 0; p < passes; ++p) {
            if (p > 0) address = k.add(address, pass_bytes);
            Reg const row = k.add(lane_row, p * rows_per_pass);
            Reg const inside = k.setp(Cmp::lt, row, rows_left);
            auto const copy = [&, p] {
                for (unsigned q = 0; q < column_steps; ++q) {
                    Reg const from = k.selp(k.add(address, std::uint64_t{q * 512u}), base, inside, Type::u64);
                    k.cp_async(k.add(at, p * rows_per_pass * stride + q * 512), Address(from), 16,
                               k.selp(16u, 0u, inside, Type::u32));
                }
            };
            Reg guard = takes_part;
            if (last_pass_partial && p + 1 == passes) {
                Reg const in_tile = k.setp(Cmp::lt, row, tile_keys);
                guard = guard.valid() ? k.and_pred(guard, in_tile) : in_tile;
            }
            if (guard.valid())
                k.if_then(guard, copy);
            else
                copy();
        }
    }
};

// The 32-bit word `word` of a row as its 1 (f32) or 2 (16-bit) elements in f32.
std::vector<Reg> word_values(Kernel& k, DType element, Reg word) {
    if (!is_16bit(element)) return {k.bitcast(Type::f32, word)};
    auto const halves = k.split(word, Type::b16);
    return {element_detail::widen(k, element, halves[0]), element_detail::widen(k, element, halves[1])};
}

// A warp's tile loaded element by element (unaligned operands): row r of the tile from the row at
// `first` + r·row_bytes, zeros past `rows_left` rows and past head_dim.
void load_tile(Kernel& k, DType element, unsigned head_dim, SimtLayout const& layout, Reg lane, Reg shared, Reg first,
               Reg row_bytes, Reg rows_left) {
    Type const raw = element_detail::raw_type(element);
    Reg const row = k.reg(Type::u32);
    k.for_range(row, 0u, tile_keys, 1u, [&] {
        Reg const inside = k.setp(Cmp::lt, row, rows_left);
        Reg const source = k.add(first, k.mul_wide(row, row_bytes));
        Reg const target = k.add(shared, k.mul(row, layout.stride));
        for (unsigned step = 0; step * 32 < layout.padded_dim; ++step) {
            Reg const e = k.add(lane, step * 32);
            Reg const value = is_16bit(element) ? k.mov(Type::b16, 0u) : k.mov(Type::f32, 0.0f);
            Reg const ok = k.and_pred(inside, k.setp(Cmp::lt, e, head_dim));
            k.predicated(ok, true, [&] {
                k.ld(value, Space::global, raw, Address(k.add(source, k.mul_wide(e, layout.element_bytes))));
            });
            auto const store = [&] {
                k.st(Space::shared, raw, Address(k.add(target, k.mul(e, layout.element_bytes))), value);
            };
            if ((step + 1) * 32 > layout.padded_dim)
                k.if_then(k.setp(Cmp::lt, e, layout.padded_dim), store);
            else
                store();
        }
    });
}

}  // namespace

unsigned attention_simt_warp_bytes(AttentionConfig const& config) { return SimtLayout(config).warp_bytes; }

namespace {

// The kernel's stages, emitted in order by build(): the warp's work item and its rows, q into the
// warp's shared memory, the key tiles (copied, scored, softmaxed, multiplied into the accumulators),
// and the rows' results.
class SimtAttention {
public:
    SimtAttention(Kernel& kernel, AttentionConfig const& config)
        : k(kernel),
          c(config),
          layout(config),
          d(config.head_dim),
          rows(config.rows),
          values_per_word(layout.element_bytes == 2 ? 2 : 1) {}

    void build();

private:
    void declare_parameters();
    void locate_work();
    void place_rows();
    void q_into_shared();
    void set_up_tiles();
    void start_state();
    void run_tiles();
    void store_rows();

    [[nodiscard]] Reg slot_of(Reg tile);
    void issue(Reg tile);
    void compute(Reg tile);
    [[nodiscard]] std::vector<Reg> scores(Reg k_slot);
    [[nodiscard]] std::vector<Reg> softmax(Reg tile, std::vector<Reg>& score);
    void multiply_v(Reg v_slot, std::vector<Reg> const& p);

    Kernel& k;
    AttentionConfig const& c;
    SimtLayout const layout;
    unsigned const d, rows, values_per_word;

    AttentionFrame f;
    Reg batch, splits, split_keys, partials, tid, lane, warp;
    Label finished;
    Reg split, hk, b, key_begin, key_end, tiles;
    // Rows r: (query i, head hk·group + g) for rg = row_block·rows + r = i·group + g.
    std::vector<Reg> query, head, valid, row_end, out_row;
    Reg q_shared, kv_shared;
    Reg row_bytes, k_head, v_head;
    std::optional<WarpTileCopy> copy;
    std::vector<Reg> m, l, acc, mask_rows;  // the online softmax's state, and the rows' mask addresses
};

void SimtAttention::build() {
    declare_parameters();
    locate_work();
    place_rows();
    q_into_shared();
    set_up_tiles();
    start_state();
    run_tiles();
    store_rows();
    k.place(finished);
}

void SimtAttention::declare_parameters() {
    k.max_threads(c.warps * 32);
    f = attention_frame(k);
    batch = k.param(Type::u32, "batch");
    splits = k.param(Type::u32, "splits");
    split_keys = k.param(Type::u32, "split_keys");
    partials = k.cvta_to_global(k.param(Type::u64, "partials"));
    tid = k.special(Special::tid_x);
    lane = k.and_(tid, 31u);
    warp = k.shr(tid, 5u);
}

// The warp's work: (batch, kv head, row block, split), and the rows it serves.
void SimtAttention::locate_work() {
    k.comment("work item: batch, kv head, rows, split");
    Reg const group = k.div(f.heads, f.kv_heads);
    Reg const row_blocks = k.div(k.add(k.mul(f.q_len, group), rows - 1), rows);
    Reg const items = k.mul(k.mul(k.mul(batch, f.kv_heads), row_blocks), splits);
    Reg const item = k.add(k.mul(k.special(Special::ctaid_x), c.warps), warp);
    finished = k.label();
    k.bra_if(k.setp(Cmp::ge, item, items), finished);
    split = k.rem(item, splits);
    Reg const rest = k.div(item, splits);
    Reg const row_block = k.rem(rest, row_blocks), pair = k.div(rest, row_blocks);
    hk = k.rem(pair, f.kv_heads);
    b = k.div(pair, f.kv_heads);
    key_begin = k.mul(split, split_keys);
    key_end = k.min(f.kv_len, k.add(key_begin, split_keys));

    query.resize(rows), head.resize(rows), valid.resize(rows), row_end.resize(rows), out_row.resize(rows);
    Reg last_query = k.mov(Type::u32, 0u);
    for (unsigned r = 0; r < rows; ++r) {
        Reg const rg = k.add(k.mul(row_block, rows), r);
        query[r] = k.div(rg, group);
        head[r] = k.add(k.mul(hk, group), k.rem(rg, group));
        valid[r] = k.setp(Cmp::lt, query[r], f.q_len);
        last_query = k.selp(query[r], last_query, valid[r], Type::u32);
        out_row[r] = k.add(k.mul(k.add(k.mul(b, f.q_len), query[r]), f.heads), head[r]);
    }
    // Keys a row sees end at min(key_end, its last visible key + 1); none for a row past q_len.
    for (unsigned r = 0; r < rows; ++r) {
        Reg const end = k.min(k.bitcast(Type::s32, key_end), k.add(last_visible_key(k, f, query[r]), 1));
        row_end[r] = k.selp(end, 0, valid[r], Type::s32);
    }
    key_end =
        k.bitcast(Type::u32, k.max(k.min(k.bitcast(Type::s32, key_end), k.add(last_visible_key(k, f, last_query), 1)),
                                   k.bitcast(Type::s32, key_begin)));
    tiles = k.div(k.add(k.sub(key_end, key_begin), tile_keys - 1), tile_keys);
}

// The warp's shared memory: its q rows, then its tile slots.
void SimtAttention::place_rows() {
    Reg const region = k.add(k.shared_address(k.dynamic_shared(16)), k.mul(warp, layout.warp_bytes));
    q_shared = region;
    kv_shared = k.add(region, layout.q_bytes);
}

Reg SimtAttention::slot_of(Reg tile) {
    return layout.stages == 1 ? kv_shared : k.add(kv_shared, k.mul(k.and_(tile, 1u), 2 * layout.tile_bytes));
}

void SimtAttention::q_into_shared() {
    k.comment("q rows, prescaled, into shared memory");
    for (unsigned r = 0; r < rows; ++r)
        for (unsigned step = 0; step * 32 < layout.padded_dim; ++step) {
            Reg const dim = k.add(lane, step * 32);
            Reg const inside = (step + 1) * 32 > layout.padded_dim ? k.setp(Cmp::lt, dim, layout.padded_dim) : Reg{};
            Reg const ok = (step + 1) * 32 > d ? k.and_pred(valid[r], k.setp(Cmp::lt, dim, d)) : valid[r];
            Reg const raw = is_16bit(c.element) ? k.mov(Type::b16, 0u) : k.mov(Type::f32, 0.0f);
            Reg const at = k.element_address(f.q, k.add(k.mul(out_row[r], d), dim), layout.element_bytes);
            k.predicated(ok, true, [&] { k.ld(raw, Space::global, element_detail::raw_type(c.element), Address(at)); });
            Reg const value = k.mul(element_detail::widen(k, c.element, raw), f.scale_log2);
            auto const store = [&] {
                k.st(Space::shared, Type::f32, Address(k.add(q_shared, k.shl(k.add(dim, r * layout.padded_dim), 2u))),
                     value);
            };
            if (inside.valid())
                k.predicated(inside, true, store);
            else
                store();
        }
    k.bar_warp_sync();
}

// The key and value rows of the warp's kv head, and (aligned operands) the lanes' cp.async copies.
void SimtAttention::set_up_tiles() {
    row_bytes = k.mul(f.kv_heads, d * layout.element_bytes);
    Reg const kv_head = k.mul_wide(k.add(k.mul(k.mul(b, f.kv_len), f.kv_heads), hk), d * layout.element_bytes);
    k_head = k.add(f.k, kv_head);
    v_head = k.add(f.v, kv_head);
    if (c.aligned) copy.emplace(k, lane, layout, row_bytes);
}

// Tile `tile`'s keys and values into its slot: by cp.async (committed as one group), or element by
// element where the operands are not aligned.
void SimtAttention::issue(Reg tile) {
    Reg const first_key = k.add(key_begin, k.mul(tile, tile_keys));
    Reg const offset = k.mul_wide(first_key, row_bytes);
    Reg const left = k.sub(key_end, first_key);
    Reg const slot = slot_of(tile);
    if (!c.aligned) {
        load_tile(k, c.element, d, layout, lane, slot, k.add(k_head, offset), row_bytes, left);
        load_tile(k, c.element, d, layout, lane, k.add(slot, layout.tile_bytes), k.add(v_head, offset), row_bytes,
                  left);
        return;
    }
    copy->issue(k, slot, k.add(k_head, offset), left, f.k);
    copy->issue(k, k.add(slot, layout.tile_bytes), k.add(v_head, offset), left, f.v);
    k.cp_async_commit();
}

// The running maxima, sums and accumulators, and the rows' mask addresses.
void SimtAttention::start_state() {
    m.resize(rows), l.resize(rows), acc.resize(rows * layout.word_steps * values_per_word);
    for (unsigned r = 0; r < rows; ++r) m[r] = k.mov(Type::f32, minus_infinity), l[r] = k.mov(Type::f32, 0.0f);
    for (Reg& a : acc) a = k.mov(Type::f32, 0.0f);
    if (c.mask)
        for (unsigned r = 0; r < rows; ++r)
            mask_rows.push_back(mask_row_address(k, f, b, head[r], k.min(query[r], k.sub(k.max(f.q_len, 1u), 1u))));
}

void SimtAttention::compute(Reg tile) {
    Reg const k_slot = slot_of(tile), v_slot = k.add(k_slot, layout.tile_bytes);
    std::vector<Reg> score = scores(k_slot);
    std::vector<Reg> const p = softmax(tile, score);
    multiply_v(v_slot, p);
}

// Each row's score of key `lane` of the tile.
std::vector<Reg> SimtAttention::scores(Reg k_slot) {
    k.comment("scores: lane l against key l of the tile");
    std::vector<Reg> score(rows);
    for (Reg& s : score) s = k.mov(Type::f32, 0.0f);
    Reg const key_row = k.add(k_slot, k.mul(lane, layout.stride));
    unsigned const per_chunk = 4 * values_per_word;
    for (unsigned ch = 0; ch < layout.chunks; ++ch) {
        std::vector<Reg> key_values;
        for (Reg w : k.ld_vector(Space::shared, Type::b32, 4, Address(key_row, static_cast<std::int64_t>(ch * 16))))
            for (Reg v : word_values(k, c.element, w)) key_values.push_back(v);
        for (unsigned r = 0; r < rows; ++r)
            for (unsigned quad = 0; quad < per_chunk / 4; ++quad) {
                auto const qv = k.ld_vector(
                    Space::shared, Type::f32, 4,
                    Address(q_shared,
                            static_cast<std::int64_t>((r * layout.padded_dim + ch * per_chunk + quad * 4) * 4)));
                for (unsigned e = 0; e < 4; ++e) k.fma(score[r], qv[e], key_values[quad * 4 + e], score[r]);
            }
    }
    return score;
}

// The mask and the rows' visible keys applied to the scores, the online softmax's step: each row's
// probability of key `lane`, its maximum, sum and accumulators rescaled.
std::vector<Reg> SimtAttention::softmax(Reg tile, std::vector<Reg>& score) {
    Reg const key = k.bitcast(Type::s32, k.add(k.add(key_begin, k.mul(tile, tile_keys)), lane));
    std::vector<Reg> p(rows);
    for (unsigned r = 0; r < rows; ++r) {
        Reg const seen = k.setp(Cmp::lt, key, row_end[r]);
        if (c.mask) {
            Reg const at = k.add(mask_rows[r], k.shl(k.cvt(Type::u64, k.bitcast(Type::u32, key)), 2u));
            k.predicated(seen, true,
                         [&] { k.fma(score[r], k.ld(Space::global, Type::f32, Address(at)), log2e, score[r]); });
        }
        k.selp(score[r], score[r], minus_infinity, seen);
        SoftmaxStep const step = softmax_step(k, m[r], butterfly_max(k, score[r], 16));
        p[r] = k.ex2_approx(k.sub(score[r], step.subtract));
        k.fma(l[r], l[r], step.alpha, p[r]);
        for (unsigned i = 0; i < layout.word_steps * values_per_word; ++i) {
            Reg const a = acc[r * layout.word_steps * values_per_word + i];
            k.mul(a, a, step.alpha);
        }
    }
    return p;
}

// acc += P·V, the lanes along head_dim.
void SimtAttention::multiply_v(Reg v_slot, std::vector<Reg> const& p) {
    k.comment("P v: lanes along head_dim");
    Reg const v_lane = k.add(v_slot, k.shl(lane, 2u));
    for (unsigned j = 0; j < tile_keys; ++j) {
        std::vector<Reg> pj(rows);
        for (unsigned r = 0; r < rows; ++r) pj[r] = k.shfl(ShuffleMode::idx, p[r], j);
        for (unsigned step = 0; step < layout.word_steps; ++step) {
            Reg const word = k.ld(Space::shared, Type::b32,
                                  Address(v_lane, static_cast<std::int64_t>(j * layout.stride + step * 128)));
            std::vector<Reg> const values = word_values(k, c.element, word);
            for (unsigned r = 0; r < rows; ++r)
                for (unsigned e = 0; e < values_per_word; ++e) {
                    Reg const a = acc[(r * layout.word_steps + step) * values_per_word + e];
                    k.fma(a, pj[r], values[e], a);
                }
        }
    }
}

// The tiles in order: two slots, the next tile's copies in flight during this one's work, or one.
void SimtAttention::run_tiles() {
    Reg const tile = k.reg(Type::u32);
    if (layout.stages == 2) {
        k.if_then(k.setp(Cmp::gt, tiles, 0u), [&] { issue(k.mov(Type::u32, 0u)); });
        k.for_range(tile, 0u, tiles, 1u, [&] {
            k.bar_warp_sync();  // the warp is done with the slot the next tile goes to
            Reg const next = k.add(tile, 1u);
            k.if_then_else(
                k.setp(Cmp::lt, next, tiles), [&] { issue(next); }, [&] { k.cp_async_commit(); });
            k.cp_async_wait(1);
            k.bar_warp_sync();
            compute(tile);
        });
    } else {
        k.for_range(tile, 0u, tiles, 1u, [&] {
            k.bar_warp_sync();
            issue(tile);
            if (c.aligned) k.cp_async_wait(0);
            k.bar_warp_sync();
            compute(tile);
        });
    }
    if (c.aligned) k.cp_async_wait(0);
}

// The rows' results: out = acc / l, or (split keys) the partial states m, l and acc.
void SimtAttention::store_rows() {
    k.comment(c.partial ? "partial states: m, l, acc" : "out = acc / l");
    Reg const total_rows = k.mul(k.mul(batch, f.q_len), f.heads);
    Reg const acc_base = k.add(partials, k.mul(k.mul_wide(total_rows, splits), std::uint64_t{8}));
    for (unsigned r = 0; r < rows; ++r) {
        Reg const sum = butterfly_sum(k, l[r], 16);
        Reg const inverse = c.partial ? Reg{} : inverse_sum(k, sum);
        Reg const state = k.add(k.mul_wide(out_row[r], splits), k.cvt(Type::u64, split));  // .u64 (row, split)
        k.if_then(valid[r], [&] {
            if (c.partial)
                k.if_then(k.setp(Cmp::eq, lane, 0u), [&] {
                    std::vector<Reg> const ml{m[r], sum};
                    k.st_vector(Space::global, Type::f32, Address(k.add(partials, k.mul(state, std::uint64_t{8}))), ml);
                });
            Reg const base = c.partial ? k.add(acc_base, k.mul(state, std::uint64_t{d * 4u}))
                                       : k.add(f.out, k.mul_wide(out_row[r], d * layout.element_bytes));
            for (unsigned step = 0; step < layout.word_steps; ++step)
                for (unsigned e = 0; e < values_per_word; ++e) {
                    Reg const value = acc[(r * layout.word_steps + step) * values_per_word + e];
                    Reg const dim = k.add(k.mul(k.add(lane, step * 32), values_per_word), e);
                    auto const store = [&] {
                        if (c.partial)
                            k.st(Space::global, Type::f32, Address(k.add(base, k.mul_wide(dim, 4u))), value);
                        else
                            element_detail::store(k, c.element,
                                                  Address(k.add(base, k.mul_wide(dim, layout.element_bytes))),
                                                  k.mul(value, inverse));
                    };
                    if ((step * 32 + 31) * values_per_word + e >= d)
                        k.if_then(k.setp(Cmp::lt, dim, d), store);
                    else
                        store();
                }
        });
    }
}

}  // namespace

namespace detail {

Kernel attention_simt(AttentionConfig const& c) {
    Kernel k(attention_name(c));
    SimtAttention(k, c).build();
    return k;
}

}  // namespace detail

Kernel attention_combine(DType element, unsigned head_dim) {
    constexpr unsigned warps = attention_combine_threads / 32, unroll = 4;
    unsigned const d = head_dim, steps = (d + 31) / 32;
    element_detail::check_floating("rayo_attention_combine", element);
    Kernel k("rayo_attention_combine" + element_detail::element_suffix(element) + "_d" + std::to_string(d));
    k.max_threads(attention_combine_threads);
    Reg const partials = k.cvta_to_global(k.param(Type::u64, "partials"));
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const rows = k.param(Type::u32, "rows");
    Reg const splits = k.param(Type::u32, "splits");
    Symbol const shared = k.shared_array("states", Type::f32, warps * (2 + d), 16);
    Reg const tid = k.special(Special::tid_x);
    Reg const lane = k.and_(tid, 31u), warp = k.shr(tid, 5u);
    Reg const row = k.special(Special::ctaid_x);
    Reg const states = k.add(partials, k.mul(k.mul_wide(row, splits), std::uint64_t{8}));
    Reg const acc_rows = k.add(k.add(partials, k.mul(k.mul_wide(rows, splits), std::uint64_t{8})),
                               k.mul(k.mul_wide(row, splits), std::uint64_t{d * 4u}));
    std::vector<Reg> inside(steps);
    for (unsigned i = 0; i < steps; ++i)
        if ((i + 1) * 32 > d) inside[i] = k.setp(Cmp::lt, k.add(lane, i * 32), d);
    Reg const lane_bytes = k.cvt(Type::u64, k.shl(lane, 2u));

    k.comment("each warp: splits warp, warp + 8, ..., `unroll` at a time, under a running max");
    Reg const m = k.mov(Type::f32, minus_infinity), l = k.mov(Type::f32, 0.0f);
    std::vector<Reg> acc(steps);
    for (Reg& a : acc) a = k.mov(Type::f32, 0.0f);
    Reg const s = k.reg(Type::u32);
    k.for_range(s, warp, splits, warps * unroll, [&] {
        std::vector<Reg> ms(unroll), ls(unroll);
        std::vector<std::vector<Reg>> values(unroll, std::vector<Reg>(steps));
        for (unsigned u = 0; u < unroll; ++u) {
            Reg const split = k.add(s, u * warps);
            Reg const valid = k.setp(Cmp::lt, split, splits);
            ms[u] = k.mov(Type::f32, minus_infinity);
            ls[u] = k.mov(Type::f32, 0.0f);
            std::vector<Reg> const pair{ms[u], ls[u]};
            k.predicated(valid, true, [&] {
                k.ld_vector(pair, Space::global, Type::f32, Address(k.add(states, k.mul_wide(split, 8u))));
            });
            Reg const at = k.add(k.add(acc_rows, k.mul_wide(split, d * 4)), lane_bytes);
            for (unsigned i = 0; i < steps; ++i) {
                values[u][i] = k.mov(Type::f32, 0.0f);
                Reg const ok = inside[i].valid() ? k.and_pred(valid, inside[i]) : valid;
                k.predicated(ok, true, [&] {
                    k.ld(values[u][i], Space::global, Type::f32, Address(at, static_cast<std::int64_t>(i * 128)));
                });
            }
        }
        Reg top = m;
        for (Reg x : ms) top = k.max(top, x);
        SoftmaxStep const step = softmax_step(k, m, top);
        k.mul(l, l, step.alpha);
        for (Reg a : acc) k.mul(a, a, step.alpha);
        for (unsigned u = 0; u < unroll; ++u) {
            Reg const weight = k.ex2_approx(k.sub(ms[u], step.subtract));
            k.fma(l, ls[u], weight, l);
            for (unsigned i = 0; i < steps; ++i) k.fma(acc[i], values[u][i], weight, acc[i]);
        }
    });

    k.comment("the warps' states meet in shared memory: m and l of warp w at w, w + 8, acc after");
    Reg const base = k.shared_address(shared);
    Reg const acc_at = k.add(base, 2 * warps * 4);
    k.if_then(k.setp(Cmp::eq, lane, 0u), [&] {
        k.st(Space::shared, Type::f32, Address(k.add(base, k.shl(warp, 2u))), m);
        k.st(Space::shared, Type::f32, Address(k.add(base, k.shl(k.add(warp, warps), 2u))), l);
    });
    for (unsigned i = 0; i < steps; ++i) {
        auto const store = [&] {
            k.st(Space::shared, Type::f32,
                 Address(k.add(acc_at, k.shl(k.add(k.mul(warp, d), k.add(lane, i * 32)), 2u))), acc[i]);
        };
        if (inside[i].valid())
            k.if_then(inside[i], store);
        else
            store();
    }
    k.bar_sync();
    k.if_then(k.setp(Cmp::lt, tid, d), [&] {
        std::vector<Reg> wm(warps);
        Reg top = k.mov(Type::f32, minus_infinity);
        for (unsigned w = 0; w < warps; ++w)
            top = k.max(top, wm[w] = k.ld(Space::shared, Type::f32, Address(base, w * 4)));
        Reg const subtract = k.selp(0.0f, top, k.setp(Cmp::eq, top, minus_infinity), Type::f32);
        Reg total = k.mov(Type::f32, 0.0f), sum = k.mov(Type::f32, 0.0f);
        for (unsigned w = 0; w < warps; ++w) {
            Reg const weight = k.ex2_approx(k.sub(wm[w], subtract));
            total = k.fma(k.ld(Space::shared, Type::f32, Address(base, (warps + w) * 4)), weight, total);
            sum = k.fma(k.ld(Space::shared, Type::f32, Address(k.add(acc_at, k.shl(tid, 2u)), w * d * 4)), weight, sum);
        }
        Reg const at = k.add(out, k.mul_wide(k.add(k.mul(row, d), tid), static_cast<unsigned>(bytes_for(element, 1))));
        element_detail::store(k, element, Address(at), k.mul(sum, inverse_sum(k, total)));
    });
    return k;
}

}  // namespace rayo::ptx::kernels
