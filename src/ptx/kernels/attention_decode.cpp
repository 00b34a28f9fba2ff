// The split-key decode kernel (rayo/ptx/kernels/attention.hpp, algorithm decode): a block owns one
// split of `warps` × 32 keys of one (batch, key/value head) and every query row of that head's
// group (at most 16), so the whole GPU streams the cache and every key is read once.
//
// Shared memory: the group's q rows as one 16-row tile, then per warp its own (k tile, v tile) of
// 32 keys, every row head_dim 16-bit elements and 16 padding bytes (conflict-free ldmatrix). All
// copies are issued at once by cp.async, so a block keeps its whole split in flight. Each warp
// scores its 32 keys on mma.sync (q padded to an m16 tile), takes their softmax in registers and
// adds P·V on mma.sync; the warps' (max, sum, O) then meet in shared memory (over the k/v tiles)
// and the block writes one merged state a row: the normalised row with one split, else a partial
// state for attention_combine.
#include <algorithm>
#include <string>
#include <vector>

#include "ptx/kernels/attention_common.hpp"
#include "ptx/kernels/element_access.hpp"

namespace rayo::ptx::kernels {

namespace {

using namespace attention_detail;

constexpr unsigned warp_keys = 32;
constexpr unsigned tile_rows = 16;  // q rows a block (one m16 tile)

struct DecodeLayout {
    unsigned stride, q_bytes, warp_bytes, bytes;
    explicit DecodeLayout(AttentionConfig const& c) {
        stride = c.head_dim * 2 + 16;
        q_bytes = tile_rows * stride;
        warp_bytes = 2 * warp_keys * stride;
        bytes = q_bytes + c.warps * warp_bytes;
    }
};

// cp.async of `rows` rows of `chunks` 16-byte chunks by `threads` threads (thread `index`): row
// r from `row_address(r)` (.u64) into `shared` + r·stride, zero-filled where `inside(r)` fails.
template <class RowAddress, class Inside>
void copy_rows(Kernel& k, Reg index, unsigned threads, unsigned rows, unsigned chunks, unsigned stride, Reg shared,
               Reg base, RowAddress row_address, Inside inside) {
    unsigned const per_pass = threads / chunks, passes = (rows + per_pass - 1) / per_pass;
    Reg const row0 = k.div(index, chunks), chunk = k.rem(index, chunks);
    Reg const at = k.add(shared, k.add(k.mul(row0, stride), k.shl(chunk, 4u)));
    Reg const chunk_bytes = k.cvt(Type::u64, k.shl(chunk, 4u));
    for (unsigned p = 0; p < passes; ++p) {
        auto const copy = [&, p] {
            Reg const row = k.add(row0, p * per_pass);
            Reg const ok = inside(row);
            Reg const from = k.selp(k.add(row_address(row), chunk_bytes), base, ok, Type::u64);
            k.cp_async(k.add(at, p * per_pass * stride), Address(from), 16, k.selp(16u, 0u, ok, Type::u32));
        };
        bool const all = threads % chunks == 0 && (p + 1) * per_pass <= rows;
        if (all)
            copy();
        else
            k.if_then(k.setp(Cmp::lt, row0, std::min(per_pass, rows - p * per_pass)), copy);
    }
}

// Emits one attention_decode kernel into `k`, stage by stage (build); the members are what more
// than one stage uses, set by the stage that emits them.
struct DecodeBuilder {
    DecodeBuilder(Kernel& kernel, AttentionConfig const& config) : k(kernel), c(config), layout(config) {}

    Kernel& k;
    AttentionConfig const& c;
    DecodeLayout const layout;
    unsigned const d = c.head_dim, warps = c.warps, threads = warps * 32, stride = layout.stride, chunks = d / 8;
    unsigned const k_steps = d / 16, o_tiles = d / 8;
    Type const input = element_detail::mma_type(c.element);

    // Set by read_parameters: the frame and parameters, shared memory, the thread's lane and warp.
    AttentionFrame f;
    Reg batch, splits, partials, smem;
    Reg tid, lane, warp;
    Reg g, t;  // the lane's row (lane / 4) and column pair (lane % 4) within an mma fragment
    // Set by place_block.
    Reg split, hk, b;  // the block's split, kv head and batch
    Reg group, rows;   // q heads per kv head; the block's rows, q_len · group
    Reg keys_end;      // .s32: one past the last key any row of the block sees
    Reg warp_begin;    // .s32: the warp's first key
    // Set by copy_tiles: the warp's k and v tiles in shared memory.
    Reg k_slot, v_slot;
    // Set by score_keys, then softmax_keys: the scores, then the probabilities, of the warp's keys
    // (the lane's parts of m16n8 fragments).
    std::vector<Reg> s;
    // Set by softmax_keys: the max and sum over the warp's keys of each of the lane's two rows.
    std::vector<Reg> m, l;
    // Set by multiply_values: the lane's part of the warp's O rows.
    std::vector<Reg> o;
    // Set by share_states: where the warps' max, sum and O rows are in shared memory.
    Reg max_at, sum_at, o_at;

    // All the stages, in emission order.
    void build() {
        read_parameters();
        place_block();
        copy_tiles();
        score_keys();
        softmax_keys();
        multiply_values();
        share_states();
        write_rows();
    }

    // The parameters, shared memory, and the thread's lane and warp.
    void read_parameters() {
        k.max_threads(threads);
        f = attention_frame(k);
        batch = k.param(Type::u32, "batch");
        splits = k.param(Type::u32, "splits");
        partials = k.cvta_to_global(k.param(Type::u64, "partials"));
        smem = k.shared_address(k.dynamic_shared(128));
        tid = k.special(Special::tid_x);
        lane = k.and_(tid, 31u);
        warp = k.shr(tid, 5u);
        g = k.shr(lane, 2u);
        t = k.and_(lane, 3u);
    }

    // The block's split, kv head and batch, its rows and the keys its warps see.
    void place_block() {
        k.comment("block: split, kv head, batch; its rows are (query i, head of the group) = i*group + g");
        split = k.special(Special::ctaid_x);
        hk = k.special(Special::ctaid_y);
        b = k.special(Special::ctaid_z);
        group = k.div(f.heads, f.kv_heads);
        rows = k.mul(f.q_len, group);  // at most 16
        Reg const last_query = k.sub(k.max(f.q_len, 1u), 1u);
        Reg const split_begin = k.mul(split, threads);  // warps · 32 keys a split
        keys_end = k.min(k.bitcast(Type::s32, f.kv_len), k.add(last_visible_key(k, f, last_query), 1));
        warp_begin = k.bitcast(Type::s32, k.add(split_begin, k.mul(warp, warp_keys)));
    }

    // [batch, q_len, heads] index of row r
    Reg out_row(Reg r) {
        return k.add(k.mul(k.add(k.mul(b, f.q_len), k.div(r, group)), f.heads),
                     k.add(k.mul(hk, group), k.rem(r, group)));
    }

    // cp.async of the block's q rows and the warp's k and v tiles, then waits for all of them.
    void copy_tiles() {
        k.comment("copies: q rows into the shared tile, then the warp's 32 keys of k and v");
        Reg const kv_row_bytes = k.mul(f.kv_heads, d * 2);
        Reg const kv_head = k.mul_wide(k.add(k.mul(k.mul(b, f.kv_len), f.kv_heads), hk), d * 2);
        Reg const k_head = k.add(f.k, kv_head), v_head = k.add(f.v, kv_head);
        copy_rows(
            k, tid, threads, tile_rows, chunks, stride, smem, f.q,
            [&](Reg r) { return k.add(f.q, k.mul_wide(out_row(r), d * 2)); },
            [&](Reg r) { return k.setp(Cmp::lt, r, rows); });
        Reg const warp_smem = k.add(smem, k.add(k.mul(warp, layout.warp_bytes), layout.q_bytes));
        k_slot = warp_smem;
        v_slot = k.add(warp_smem, warp_keys * stride);
        auto copy_keys = [&](Reg slot, Reg head, Reg base) {
            copy_rows(
                k, lane, 32, warp_keys, chunks, stride, slot, base,
                [&](Reg r) {
                    return k.add(head, k.mul_wide(k.add(k.bitcast(Type::u32, warp_begin), r), kv_row_bytes));
                },
                [&](Reg r) { return k.setp(Cmp::lt, k.add(warp_begin, k.bitcast(Type::s32, r)), keys_end); });
        };
        copy_keys(k_slot, k_head, f.k);
        copy_keys(v_slot, v_head, f.v);
        k.cp_async_commit();
        k.cp_async_wait(0);
        k.bar_sync();
    }

    // S = q k^T over the warp's keys on mma.sync, into s.
    void score_keys() {
        k.comment("S = q k^T over the warp's 32 keys");
        Reg const q_offset = k.add(smem, k.add(k.mul(k.and_(lane, 15u), stride), k.shl(k.shr(lane, 4u), 4u)));
        Reg const k_offset = k.add(k_slot, k.add(k.mul(k.add(k.and_(lane, 7u), k.shl(k.shr(lane, 4u), 3u)), stride),
                                                 k.shl(k.and_(k.shr(lane, 3u), 1u), 4u)));
        s.resize(warp_keys / 2);
        for (Reg& r : s) r = k.mov(Type::f32, 0.0f);
        for (unsigned ks = 0; ks < k_steps; ++ks) {
            std::vector<Reg> const a = k.ldmatrix(4, false, k.add(q_offset, ks * 32));
            for (unsigned np = 0; np < warp_keys / 16; ++np) {
                std::vector<Reg> const kf = k.ldmatrix(4, false, k.add(k_offset, np * 16 * stride + ks * 32));
                for (unsigned e = 0; e < 2; ++e) {
                    std::span<Reg const> const acc(s.data() + (np * 2 + e) * 4, 4);
                    std::vector<Reg> const bf{kf[e * 2], kf[e * 2 + 1]};
                    k.mma_m16n8k16(input, acc, a, bf, acc);
                }
            }
        }
    }

    // The softmax of the warp's keys in registers: s becomes exp2 of the scaled scores less the row max.
    void softmax_keys() {
        k.comment("softmax of the warp's keys: hidden keys -Inf, row max over the quad");
        Reg const lane_key = k.add(warp_begin, k.bitcast(Type::s32, k.shl(t, 1u)));
        m.resize(2);
        l.resize(2);
        for (unsigned half = 0; half < 2; ++half) {
            Reg const r = k.add(g, half * 8);
            Reg const end = k.selp(last_visible_key(k, f, k.div(r, group)), -1, k.setp(Cmp::lt, r, rows), Type::s32);
            Reg const row_end = k.min(end, k.sub(keys_end, 1));
            Reg block_max = k.mov(Type::f32, minus_infinity);
            for (unsigned nt = 0; nt < warp_keys / 8; ++nt)
                for (unsigned e = 0; e < 2; ++e) {
                    Reg const x = s[nt * 4 + half * 2 + e];
                    Reg const seen = k.setp(Cmp::le, k.add(lane_key, static_cast<int>(nt * 8 + e)), row_end);
                    k.selp(x, k.mul(x, f.scale_log2), minus_infinity, seen);
                    block_max = k.max(block_max, x);
                }
            m[half] = butterfly_max(k, block_max, 2);
            Reg const subtract = k.selp(0.0f, m[half], k.setp(Cmp::eq, m[half], minus_infinity), Type::f32);
            Reg sum = k.mov(Type::f32, 0.0f);
            for (unsigned nt = 0; nt < warp_keys / 8; ++nt)
                for (unsigned e = 0; e < 2; ++e) {
                    Reg const x = s[nt * 4 + half * 2 + e];
                    k.mov(x, k.ex2_approx(k.sub(x, subtract)));
                    sum = k.add(sum, x);
                }
            l[half] = butterfly_sum(k, sum, 2);
        }
    }

    // O = P v on mma.sync, into o.
    void multiply_values() {
        k.comment("O = P v");
        o.resize(o_tiles * 4);
        for (Reg& r : o) r = k.mov(Type::f32, 0.0f);
        Reg const v_offset = k.add(v_slot, k.add(k.mul(k.and_(lane, 15u), stride), k.shl(k.shr(lane, 4u), 4u)));
        for (unsigned kk = 0; kk < warp_keys / 16; ++kk) {
            Reg const* p = s.data() + kk * 8;
            std::vector<Reg> const a{pack_pair(k, c.element, p[0], p[1]), pack_pair(k, c.element, p[2], p[3]),
                                     pack_pair(k, c.element, p[4], p[5]), pack_pair(k, c.element, p[6], p[7])};
            for (unsigned np = 0; np < d / 16; ++np) {
                std::vector<Reg> const vf = k.ldmatrix(4, true, k.add(v_offset, kk * 16 * stride + np * 32));
                for (unsigned e = 0; e < 2; ++e) {
                    std::span<Reg const> const acc(o.data() + (np * 2 + e) * 4, 4);
                    std::vector<Reg> const bf{vf[e * 2], vf[e * 2 + 1]};
                    k.mma_m16n8k16(input, acc, a, bf, acc);
                }
            }
        }
    }

    // Each warp's (max, sum, O) rows into shared memory, over the k/v tiles.
    void share_states() {
        k.comment("the warps' states into shared memory (over the k/v tiles): max, sum, O rows");
        Reg const merge = k.add(smem, layout.q_bytes);
        max_at = merge;
        sum_at = k.add(merge, warps * tile_rows * 4);
        o_at = k.add(merge, 2 * warps * tile_rows * 4);
        k.bar_sync();  // every warp is done with its tiles
        for (unsigned half = 0; half < 2; ++half) {
            Reg const slot = k.add(k.mul(warp, tile_rows), k.add(g, half * 8));
            k.if_then(k.setp(Cmp::eq, t, 0u), [&] {
                k.st(Space::shared, Type::f32, Address(k.add(max_at, k.shl(slot, 2u))), m[half]);
                k.st(Space::shared, Type::f32, Address(k.add(sum_at, k.shl(slot, 2u))), l[half]);
            });
            Reg const row_at = k.add(o_at, k.add(k.mul(slot, d * 4), k.shl(t, 3u)));
            for (unsigned nt = 0; nt < o_tiles; ++nt) {
                std::vector<Reg> const pair{o[nt * 4 + half * 2], o[nt * 4 + half * 2 + 1]};
                k.st_vector(Space::shared, Type::f32, Address(row_at, static_cast<std::int64_t>(nt * 32)), pair);
            }
        }
        k.bar_sync();
    }

    // The block's threads over its rows' elements: each merges the warps' states and writes it.
    void write_rows() {
        k.comment(c.partial ? "merged partial states: m, l, acc" : "out = merged O / l");
        Reg const total_rows = k.mul(k.mul(batch, f.q_len), f.heads);
        Reg const acc_base = k.add(partials, k.mul(k.mul_wide(total_rows, splits), std::uint64_t{8}));
        for (unsigned j = 0; j < tile_rows * d / threads; ++j) {
            Reg const e = k.add(tid, j * threads);
            Reg const r = k.div(e, d), dim = k.rem(e, d);
            k.if_then(k.setp(Cmp::lt, r, rows), [&] { write_element(r, dim, acc_base); });
        }
    }

    // Element `dim` of row `r`: the warps' states merged, then written as a partial state (m and l by
    // dim 0, acc at `acc_base`) or as out = O / l.
    void write_element(Reg r, Reg dim, Reg acc_base) {
        Reg top = k.mov(Type::f32, minus_infinity);
        std::vector<Reg> wm(warps);
        for (unsigned w = 0; w < warps; ++w) {
            wm[w] = k.ld(Space::shared, Type::f32, Address(k.add(max_at, k.shl(k.add(r, w * tile_rows), 2u))));
            top = k.max(top, wm[w]);
        }
        Reg const subtract = k.selp(0.0f, top, k.setp(Cmp::eq, top, minus_infinity), Type::f32);
        Reg sum = k.mov(Type::f32, 0.0f), acc = k.mov(Type::f32, 0.0f);
        for (unsigned w = 0; w < warps; ++w) {
            Reg const weight = k.ex2_approx(k.sub(wm[w], subtract));
            Reg const lw = k.ld(Space::shared, Type::f32, Address(k.add(sum_at, k.shl(k.add(r, w * tile_rows), 2u))));
            Reg const ow = k.ld(Space::shared, Type::f32,
                                Address(k.add(o_at, k.shl(k.add(k.mul(k.add(r, w * tile_rows), d), dim), 2u))));
            sum = k.fma(lw, weight, sum);
            acc = k.fma(ow, weight, acc);
        }
        Reg const row = out_row(r);
        if (c.partial) {
            Reg const state = k.add(k.mul_wide(row, splits), k.cvt(Type::u64, split));
            k.if_then(k.setp(Cmp::eq, dim, 0u), [&] {
                std::vector<Reg> const ml{top, sum};
                k.st_vector(Space::global, Type::f32, Address(k.add(partials, k.mul(state, std::uint64_t{8}))), ml);
            });
            Reg const at =
                k.add(acc_base, k.mul(k.add(k.mul(state, std::uint64_t{d}), k.cvt(Type::u64, dim)), std::uint64_t{4}));
            k.st(Space::global, Type::f32, Address(at), acc);
        } else {
            element_detail::store(k, c.element, Address(k.element_address(f.out, k.add(k.mul(row, d), dim), 2)),
                                  k.mul(acc, inverse_sum(k, sum)));
        }
    }
};

}  // namespace

namespace detail {

unsigned attention_decode_shared_bytes(AttentionConfig const& config) { return DecodeLayout(config).bytes; }

Kernel attention_decode(AttentionConfig const& c) {
    Kernel k(attention_name(c));
    DecodeBuilder(k, c).build();
    return k;
}

}  // namespace detail

}  // namespace rayo::ptx::kernels
