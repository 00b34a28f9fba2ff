// The tensor-core flash-attention kernel (rayo/ptx/kernels/attention.hpp, algorithm tensor_core).
//
// A warp owns warp_tiles m16 tiles of query rows (32 rows with 2: every k and v fragment it
// loads feeds two mma). Shared memory: the block's q tile, then two slots of (k tile, v tile) of 64 keys; every tile
// row is head_dim 16-bit elements and 16 padding bytes, so the 8 rows one ldmatrix phase reads start on 8 different
// 16-byte bank groups (the row length is an odd number of 16-byte chunks).
//
// Fragments (mma.m16n8k16, g = lane / 4, t = lane % 4): a warp's S tile of 16 rows × 64 keys is 8
// n-tiles of 4 f32 (rows g and g + 8, keys 2t and 2t + 1); the A operand of P·V for keys 16·kk..
// is n-tiles 2kk and 2kk + 1 of S packed to 16 bits, so P never leaves the registers; O is
// head_dim / 8 n-tiles laid out like S.
#include <optional>
#include <string>
#include <vector>

#include "ptx/kernels/attention_common.hpp"
#include "ptx/kernels/element_access.hpp"

namespace rayo::ptx::kernels {

namespace detail {
Reg first_lane_row(Kernel& k, unsigned warps, unsigned warp_rows);
}  // namespace detail

namespace {

using namespace attention_detail;

constexpr unsigned key_block = 64;

// Copies a tile of `rows` tensor rows (head_dim 16-bit elements, `row_bytes` apart in global
// memory) into shared memory, 16-byte chunks spread over the block's threads; rows at or past
// `limit` are zero-filled. Per thread: the passes it takes part in, fixed at construction.
struct TileCopy {
    unsigned rows = 0, chunks = 0, rows_per_pass = 0, passes = 0, stride = 0;
    Reg row;                      // the thread's row in pass 0
    Reg shared_offset;            // its chunk's offset in the tile in pass 0
    Reg global_offset;            // .u64 its chunk's offset from the tile's first row in pass 0
    Reg pass_bytes;               // .u64 global bytes between passes
    std::vector<Reg> takes_part;  // per pass: the thread has a chunk of the tile (invalid: all do)

    TileCopy(Kernel& k, Reg tid, unsigned threads, unsigned tile_rows, unsigned head_dim, unsigned row_stride,
             Reg row_bytes) {
        rows = tile_rows;
        chunks = head_dim / 8;
        stride = row_stride;
        rows_per_pass = threads / chunks;
        passes = (rows + rows_per_pass - 1) / rows_per_pass;
        row = k.div(tid, chunks);
        Reg const chunk = k.rem(tid, chunks);
        shared_offset = k.add(k.mul(row, stride), k.shl(chunk, 4));
        global_offset = k.add(k.mul_wide(row, row_bytes), k.cvt(Type::u64, k.shl(chunk, 4)));
        pass_bytes = k.mul_wide(row_bytes, rows_per_pass);
        for (unsigned p = 0; p < passes; ++p)
            takes_part.push_back(threads % chunks == 0 && (p + 1) * rows_per_pass <= rows
                                     ? Reg{}
                                     : k.setp(Cmp::lt, row, rows - p * rows_per_pass));
    }

    // Issues the copies of the tile whose first row is at `first` (.u64 global address) into
    // `shared` (the tile's base), `rows_left` (.u32) rows of it inside the tensor; `base` is any
    // valid global address (the source of zero-filling copies).
    void issue(Kernel& k, Reg shared, Reg first, Reg rows_left, Reg base) const {
        Reg address = k.add(first, global_offset);
        Reg const at = k.add(shared, shared_offset);
        for (unsigned p = 0; p < passes; ++p) {
            if (p > 0) address = k.add(address, pass_bytes);
            auto const copy = [&, p] {
                Reg const inside = k.setp(Cmp::lt, k.add(row, p * rows_per_pass), rows_left);
                Reg const from = k.selp(address, base, inside, Type::u64);
                k.cp_async(k.add(at, p * rows_per_pass * stride), Address(from), 16,
                           k.selp(16u, 0u, inside, Type::u32));
            };
            if (takes_part[p].valid())
                k.if_then(takes_part[p], copy);
            else
                copy();
        }
    }
};

// The kernel's stages, emitted in order by build(): the block's rows and key blocks, the tiles'
// copies and the prologue, the lane's fragment offsets and row state, the key blocks (S = q·kᵀ,
// scaling and masking, online softmax, O += P·v), and the epilogue.
class TensorCoreAttention {
public:
    TensorCoreAttention(Kernel& kernel, AttentionConfig const& config)
        : k(kernel),
          c(config),
          d(config.head_dim),
          warps(config.warps),
          tiles(config.warp_tiles),
          threads(warps * 32),
          warp_rows(16 * tiles),
          block_rows(warps * warp_rows),
          stride(d * 2 + 16),
          tile_bytes(key_block * stride),
          q_bytes(block_rows * stride),
          k_steps(d / 16),
          o_tiles(d / 8),
          q_in_registers(d * tiles <= 128),
          input(element_detail::mma_type(config.element)) {}

    void build();

private:
    void locate_block();
    void start_copies();
    void copy_prologue();
    void place_fragments();
    void start_rows();
    void key_block_step(Reg jb);
    void scores(Reg k_slot);
    void to_exp2_domain(Reg jb);
    void online_softmax();
    void multiply_v(Reg v_slot);
    void epilogue();

    [[nodiscard]] Reg row_end(unsigned rh);
    [[nodiscard]] std::vector<Reg> q_fragment(unsigned i, unsigned ks);
    void issue_block(Reg jb);

    Kernel& k;
    AttentionConfig const& c;
    unsigned const d, warps, tiles, threads;
    unsigned const warp_rows, block_rows;
    unsigned const stride, tile_bytes, q_bytes;
    unsigned const k_steps, o_tiles;
    bool const q_in_registers;
    Type const input;

    AttentionFrame f;
    Reg smem, tid, lane, warp, g, t;
    Reg row0, h, hk, b, blocks, first_row_end;
    Reg k_first, v_first, kv_block_bytes, kv_smem;
    std::optional<TileCopy> kv_copy;
    Reg q_offset, k_offset, v_offset;
    std::vector<std::vector<Reg>> q_frag;  // [tile · k_steps + ks]
    Reg lane_limit, last_key, key_col;
    std::vector<Reg> mask_row;  // the mask row's address, per (tile, half)
    std::vector<Reg> m, l, o;   // the online softmax's state, per (tile, half), and O
    std::vector<Reg> s;         // S: per tile 8 n-tiles of 4
};

void TensorCoreAttention::build() {
    k.max_threads(threads);
    f = attention_frame(k);
    smem = k.shared_address(k.dynamic_shared(128));
    tid = k.special(Special::tid_x);
    lane = k.and_(tid, 31u);
    warp = k.shr(tid, 5u);
    g = k.shr(lane, 2u);
    t = k.and_(lane, 3u);
    locate_block();
    start_copies();
    copy_prologue();
    place_fragments();
    start_rows();

    // The key blocks: one barrier each (after it, every warp is done with the slot the next block
    // goes to, and this block's copies have landed).
    Reg const jb = k.reg(Type::u32);
    k.for_range(jb, 0u, blocks, 1u, [&] { key_block_step(jb); });
    k.cp_async_wait(0);
    epilogue();
}

// The block's rows: blocks start heads first, row blocks last to first, so the longest causal
// blocks of every head start first and the short ones fill the tail.
void TensorCoreAttention::locate_block() {
    k.comment("block: rows, head, batch; the key blocks its rows see");
    Reg const block = k.sub(k.sub(k.special(Special::nctaid_y), 1u), k.special(Special::ctaid_y));
    row0 = k.mul(block, block_rows);
    h = k.special(Special::ctaid_x);
    b = k.special(Special::ctaid_z);
    hk = k.div(h, k.div(f.heads, f.kv_heads));
    Reg const last_row = k.sub(k.min(k.add(row0, block_rows), f.q_len), 1u);
    Reg const keys_seen = k.max(k.add(last_visible_key(k, f, last_row), 1), 0);
    blocks = k.div(k.add(k.bitcast(Type::u32, keys_seen), key_block - 1), key_block);
    first_row_end = last_visible_key(k, f, row0);  // blocks past it need masking
}

// The global tiles, their copies into shared memory, and the first: q's.
void TensorCoreAttention::start_copies() {
    Reg const q_row_bytes = k.mul(f.heads, d * 2), kv_row_bytes = k.mul(f.kv_heads, d * 2);
    Reg const q_first = k.add(f.q, k.mul_wide(k.add(k.mul(k.add(k.mul(b, f.q_len), row0), f.heads), h), d * 2));
    Reg const kv_head = k.mul_wide(k.add(k.mul(k.mul(b, f.kv_len), f.kv_heads), hk), d * 2);
    k_first = k.add(f.k, kv_head);
    v_first = k.add(f.v, kv_head);
    kv_block_bytes = k.mul_wide(kv_row_bytes, key_block);
    TileCopy const q_copy(k, tid, threads, block_rows, d, stride, q_row_bytes);
    kv_copy.emplace(k, tid, threads, key_block, d, stride, kv_row_bytes);
    kv_smem = k.add(smem, q_bytes);

    k.comment("prologue: q, then key block 0");
    q_copy.issue(k, smem, q_first, k.sub(f.q_len, row0), f.q);
}

// Key block jb's keys and values into its slot.
void TensorCoreAttention::issue_block(Reg jb) {
    Reg const slot = k.add(kv_smem, k.mul(k.and_(jb, 1u), 2 * tile_bytes));
    Reg const offset = k.mul(k.cvt(Type::u64, jb), kv_block_bytes);
    Reg const left = k.sub(f.kv_len, k.mul(jb, key_block));
    kv_copy->issue(k, slot, k.add(k_first, offset), left, k_first);
    kv_copy->issue(k, k.add(slot, tile_bytes), k.add(v_first, offset), left, v_first);
}

// The prologue's rest: q's copies committed, key block 0 requested, q landed.
void TensorCoreAttention::copy_prologue() {
    k.cp_async_commit();
    Reg const zero = k.mov(Type::u32, 0u);
    k.if_then(k.setp(Cmp::gt, blocks, 0u), [&] { issue_block(zero); });
    k.cp_async_commit();
    k.cp_async_wait(1);
    k.bar_sync();
}

std::vector<Reg> TensorCoreAttention::q_fragment(unsigned i, unsigned ks) {
    return k.ldmatrix(4, false, k.add(q_offset, i * 16 * stride + ks * 32));
}

// Per-lane ldmatrix offsets; the warp's q row tiles, held in registers where they are few.
void TensorCoreAttention::place_fragments() {
    Reg const lane_row16 = k.and_(lane, 15u), lane_half = k.shr(lane, 4u);
    q_offset = k.add(smem, k.add(k.mul(k.add(k.mul(warp, warp_rows), lane_row16), stride), k.shl(lane_half, 4u)));
    k_offset =
        k.add(k.mul(k.add(k.and_(lane, 7u), k.shl(lane_half, 3u)), stride), k.shl(k.and_(k.shr(lane, 3u), 1u), 4u));
    v_offset = k.add(k.mul(lane_row16, stride), k.shl(lane_half, 4u));
    if (q_in_registers)
        for (unsigned i = 0; i < tiles; ++i)
            for (unsigned ks = 0; ks < k_steps; ++ks) q_frag.push_back(q_fragment(i, ks));
}

// The last key row (tile, half) sees, from the lane's first row's (few registers held across the
// loop: the masked path alone needs them).
Reg TensorCoreAttention::row_end(unsigned rh) {
    return k.selp(k.min(last_key, k.add(lane_limit, static_cast<int>(rh * 8))), last_key, f.causal, Type::s32);
}

// The lane's rows: g and g + 8 of each of the warp's tiles, per (tile, half) index i·2 + half: their
// mask rows, running maxima and sums, O and S.
void TensorCoreAttention::start_rows() {
    Reg const lane_row = k.add(row0, k.add(k.mul(warp, warp_rows), g));
    lane_limit = k.add(f.query_offset, k.bitcast(Type::s32, lane_row));
    last_key = k.sub(k.bitcast(Type::s32, f.kv_len), 1);
    if (c.mask)
        for (unsigned rh = 0; rh < 2 * tiles; ++rh)
            mask_row.push_back(
                mask_row_address(k, f, b, h, k.min(k.add(lane_row, rh * 8), k.sub(k.max(f.q_len, 1u), 1u))));
    m.resize(2 * tiles), l.resize(2 * tiles), o.resize(tiles * o_tiles * 4);
    for (unsigned r = 0; r < 2 * tiles; ++r) m[r] = k.mov(Type::f32, minus_infinity), l[r] = k.mov(Type::f32, 0.0f);
    for (Reg& r : o) r = k.mov(Type::f32, 0.0f);
    s.resize(tiles * 8 * 4);
    for (Reg& r : s) r = k.reg(Type::f32);
    key_col = k.bitcast(Type::s32, k.shl(t, 1u));  // the lane's first key in an n-tile
}

void TensorCoreAttention::key_block_step(Reg jb) {
    k.cp_async_wait(0);
    k.bar_sync();
    Reg const next = k.add(jb, 1u);
    k.if_then(k.setp(Cmp::lt, next, blocks), [&] { issue_block(next); });
    k.cp_async_commit();
    Reg const k_slot = k.add(kv_smem, k.mul(k.and_(jb, 1u), 2 * tile_bytes));
    Reg const v_slot = k.add(k_slot, tile_bytes);
    scores(k_slot);
    to_exp2_domain(jb);
    online_softmax();
    multiply_v(v_slot);
}

void TensorCoreAttention::scores(Reg k_slot) {
    k.comment("S = q k^T");
    for (Reg r : s) k.mov(r, 0.0f);
    for (unsigned ks = 0; ks < k_steps; ++ks) {
        std::vector<std::vector<Reg>> a;
        for (unsigned i = 0; i < tiles; ++i) a.push_back(q_in_registers ? q_frag[i * k_steps + ks] : q_fragment(i, ks));
        for (unsigned np = 0; np < key_block / 16; ++np) {
            std::vector<Reg> const kf =
                k.ldmatrix(4, false, k.add(k_slot, k.add(k_offset, np * 16 * stride + ks * 32)));
            for (unsigned e = 0; e < 2; ++e)
                for (unsigned i = 0; i < tiles; ++i) {
                    std::span<Reg const> const acc(s.data() + (i * 8 + np * 2 + e) * 4, 4);
                    std::vector<Reg> const bf{kf[e * 2], kf[e * 2 + 1]};
                    k.mma_m16n8k16(input, acc, a[i], bf, acc);
                }
        }
    }
}

// S scaled to the exp2 domain; the keys a row does not see (and the mask) applied where the block
// needs it.
void TensorCoreAttention::to_exp2_domain(Reg jb) {
    k.comment("scores to the exp2 domain; hidden keys to -Inf where the block needs it");
    Reg const block_key = k.bitcast(Type::s32, k.mul(jb, key_block));
    auto scale = [&] {
        for (Reg r : s) k.mul(r, r, f.scale_log2);
    };
    auto scale_and_hide = [&] {
        scale();
        Reg const lane_key = k.add(block_key, key_col);
        std::vector<Reg> ends;
        for (unsigned rh = 0; rh < 2 * tiles; ++rh) ends.push_back(row_end(rh));
        for (unsigned i = 0; i < tiles; ++i)
            for (unsigned nt = 0; nt < 8; ++nt)
                for (unsigned e = 0; e < 4; ++e) {
                    unsigned const rh = i * 2 + e / 2;
                    Reg const key = k.add(lane_key, static_cast<int>(nt * 8 + e % 2));
                    Reg const seen = k.setp(Cmp::le, key, ends[rh]);
                    Reg const r = s[(i * 8 + nt) * 4 + e];
                    if (c.mask) {
                        Reg const at = k.add(mask_row[rh], k.shl(k.cvt(Type::u64, k.bitcast(Type::u32, key)), 2u));
                        k.predicated(seen, true,
                                     [&] { k.fma(r, k.ld(Space::global, Type::f32, Address(at)), log2e, r); });
                    }
                    k.selp(r, r, minus_infinity, seen);
                }
    };
    if (c.mask)
        scale_and_hide();
    else
        k.if_then_else(k.setp(Cmp::gt, k.add(block_key, static_cast<int>(key_block - 1)), first_row_end),
                       scale_and_hide, scale);
}

void TensorCoreAttention::online_softmax() {
    k.comment("online softmax: row max over the quad, P = exp2(S - max), rescale O and l");
    for (unsigned i = 0; i < tiles; ++i)
        for (unsigned half = 0; half < 2; ++half) {
            unsigned const rh = i * 2 + half;
            Reg const* st = s.data() + i * 32;
            Reg block_max = st[half * 2];
            for (unsigned nt = 0; nt < 8; ++nt)
                for (unsigned e = 0; e < 2; ++e) block_max = k.max(block_max, st[nt * 4 + half * 2 + e]);
            SoftmaxStep const step = softmax_step(k, m[rh], butterfly_max(k, block_max, 2));
            Reg sum = k.mov(Type::f32, 0.0f);
            for (unsigned nt = 0; nt < 8; ++nt)
                for (unsigned e = 0; e < 2; ++e) {
                    Reg const r = st[nt * 4 + half * 2 + e];
                    k.mov(r, k.ex2_approx(k.sub(r, step.subtract)));
                    sum = k.add(sum, r);
                }
            k.fma(l[rh], l[rh], step.alpha, sum);
            Reg* ot = o.data() + i * o_tiles * 4;
            for (unsigned nt = 0; nt < o_tiles; ++nt)
                for (unsigned e = 0; e < 2; ++e)
                    k.mul(ot[nt * 4 + half * 2 + e], ot[nt * 4 + half * 2 + e], step.alpha);
        }
}

void TensorCoreAttention::multiply_v(Reg v_slot) {
    k.comment("O += P v");
    for (unsigned kk = 0; kk < key_block / 16; ++kk) {
        std::vector<std::vector<Reg>> a;
        for (unsigned i = 0; i < tiles; ++i) {
            Reg const* p0 = s.data() + i * 32 + kk * 8;
            a.push_back({pack_pair(k, c.element, p0[0], p0[1]), pack_pair(k, c.element, p0[2], p0[3]),
                         pack_pair(k, c.element, p0[4], p0[5]), pack_pair(k, c.element, p0[6], p0[7])});
        }
        for (unsigned np = 0; np < d / 16; ++np) {
            std::vector<Reg> const vf = k.ldmatrix(4, true, k.add(v_slot, k.add(v_offset, kk * 16 * stride + np * 32)));
            for (unsigned e = 0; e < 2; ++e)
                for (unsigned i = 0; i < tiles; ++i) {
                    std::span<Reg const> const acc(o.data() + (i * o_tiles + np * 2 + e) * 4, 4);
                    std::vector<Reg> const bf{vf[e * 2], vf[e * 2 + 1]};
                    k.mma_m16n8k16(input, acc, a[i], bf, acc);
                }
        }
    }
}

// O / l to out. The lane's rows again from the special registers: nothing the loop does not use
// stays live across it.
void TensorCoreAttention::epilogue() {
    k.comment("epilogue: O / l, rounded to the element type");
    Reg const out_row0 = detail::first_lane_row(k, warps, warp_rows);
    Reg const out_h = k.special(Special::ctaid_x), out_b = k.special(Special::ctaid_z);
    Reg const out_t = k.and_(k.special(Special::tid_x), 3u);
    Reg const out_row_bytes = k.mul_wide(f.heads, d * 2);
    Reg const out_lane =
        k.add(k.add(f.out, k.mul_wide(k.add(k.mul(k.add(k.mul(out_b, f.q_len), out_row0), f.heads), out_h), d * 2)),
              k.cvt(Type::u64, k.shl(out_t, 2u)));
    for (unsigned i = 0; i < tiles; ++i)
        for (unsigned half = 0; half < 2; ++half) {
            unsigned const rh = i * 2 + half;
            Reg const inverse = inverse_sum(k, butterfly_sum(k, l[rh], 2));
            Reg const row = k.add(out_row0, i * 16 + half * 8);
            Reg const at = rh == 0 ? out_lane : k.add(out_lane, k.mul(out_row_bytes, std::uint64_t{rh * 8}));
            std::vector<Reg> words;
            for (unsigned nt = 0; nt < o_tiles; ++nt) {
                Reg const* r = o.data() + (i * o_tiles + nt) * 4 + half * 2;
                words.push_back(pack_pair(k, c.element, k.mul(r[0], inverse), k.mul(r[1], inverse)));
            }
            k.if_then(k.setp(Cmp::lt, row, f.q_len), [&] {
                for (unsigned nt = 0; nt < o_tiles; ++nt)
                    k.st(Space::global, Type::b32, Address(at, nt * 16), words[nt]);
            });
        }
}

}  // namespace

namespace detail {

// The first of the lane's query rows: the block's first row + warp · warp_rows + lane / 4.
Reg first_lane_row(Kernel& k, unsigned warps, unsigned warp_rows) {
    Reg const tid = k.special(Special::tid_x);
    Reg const block = k.sub(k.sub(k.special(Special::nctaid_y), 1u), k.special(Special::ctaid_y));
    return k.add(k.mul(block, warps * warp_rows), k.add(k.mul(k.shr(tid, 5u), warp_rows), k.shr(k.and_(tid, 31u), 2u)));
}

Kernel attention_tensor_core(AttentionConfig const& c) {
    Kernel k(attention_name(c));
    TensorCoreAttention(k, c).build();
    return k;
}

}  // namespace detail

}  // namespace rayo::ptx::kernels
