// Attention on the CPU, flash style: for each (batch, head, block of query rows) the keys are
// walked a block at a time; q·kᵀ and weights·v run on the GEMM micro-kernel (the packers read
// f16 and bf16 operands directly), and the online softmax between them (attention_tile_kernel)
// keeps a running maximum and sum per row, so the score matrix is never stored.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include "cpu/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/cpu/attention.hpp"

namespace rayo::cpu::ops {

namespace {

constexpr std::size_t key_block = 64;  // a multiple of every ISA's gemm_nr

std::size_t round_up(std::size_t x, std::size_t m) { return (x + m - 1) / m * m; }

GemmType gemm_type(DType t) {
    return t == DType::f16 ? GemmType::f16 : t == DType::bf16 ? GemmType::bf16 : GemmType::f32;
}

// One thread's buffers, 64-byte aligned as the micro-kernel's packed panels need.
class Workspace {
public:
    Workspace(std::size_t block_q, std::size_t mr, std::size_t nr, std::size_t d) {
        std::size_t const rows = round_up(block_q, mr), dim = round_up(d, nr);
        sizes_[0] = rows * d;             // q, packed
        sizes_[1] = key_block * d;        // k, packed
        sizes_[2] = block_q * key_block;  // scores, then weights
        sizes_[3] = rows * key_block;     // weights, packed
        sizes_[4] = dim * key_block;      // v, packed
        sizes_[5] = block_q * d;          // the running output rows
        sizes_[6] = 2 * block_q + d;      // row maxima, sums and one output row
        std::size_t total = 0;
        for (std::size_t& s : sizes_) total += s = round_up(s, 16);
        memory_.reset(static_cast<float*>(std::aligned_alloc(64, total * sizeof(float))));
        if (!memory_) throw std::bad_alloc();
    }
    [[nodiscard]] float* part(std::size_t i) const {
        float* p = memory_.get();
        for (std::size_t j = 0; j < i; ++j) p += sizes_[j];
        return p;
    }

private:
    struct Free {
        void operator()(float* p) const noexcept { std::free(p); }
    };
    std::size_t sizes_[7]{};
    std::unique_ptr<float, Free> memory_;
};

// Everything one task reads: the operands' bases and the geometry.
struct Problem {
    op::Attention const& a;
    KernelTable const& k;
    DType type;
    GemmType gtype;
    std::byte const *q, *kk, *v;
    float const* mask;
    std::byte* out;
    std::size_t block_q, q_blocks;
    std::size_t elem;  // bytes per element
};

// Asks for the next block's key and value rows: a head's rows lie kv_heads·head_dim elements apart,
// a page or more for many heads, where the hardware prefetchers do not follow.
void prefetch_rows(std::byte const* k, std::byte const* v, std::size_t first, std::size_t count, std::size_t row_bytes,
                   std::size_t bytes) {
    for (std::size_t j = first; j < first + count; ++j)
        for (std::size_t at = 0; at < bytes; at += 64) {
            __builtin_prefetch(k + j * row_bytes + at);
            __builtin_prefetch(v + j * row_bytes + at);
        }
}

// The query rows of one task: `rows` rows from (position i0, head h0) of batch b, at successive
// positions of head h0, or (stacked) successive heads of one key/value group at position i0.
struct Rows {
    std::size_t b, h0, i0, rows;
    bool stacked;
};

// The buffers of one task (a Workspace's parts) and its rows' running state.
struct Buffers {
    float *q_packed, *k_packed, *scores, *p_packed, *v_packed, *acc, *row_max, *row_sum, *staged;
};

Buffers buffers(Workspace const& w, std::size_t block_q) {
    float* const state = w.part(6);
    return {w.part(0), w.part(1), w.part(2),       w.part(3),          w.part(4),
            w.part(5), state,     state + block_q, state + 2 * block_q};
}

// scores[rows × cols] = the packed q rows · kᵀ for keys [j0, j0 + cols), k's rows `kv_row` apart.
void score_block(KernelTable const& k, Buffers const& buf, std::size_t rows, std::size_t d, std::byte const* keys,
                 GemmType type, std::size_t kv_row, std::size_t cols) {
    GemmArgs const kt{.m = rows, .n = cols, .k = d, .b = keys, .b_type = type, .b_row = 1, .b_col = kv_row};
    k.gemm_pack_b(kt, 0, d, 0, cols, buf.k_packed);
    for (std::size_t r = 0; r < rows; r += k.gemm_mr)
        for (std::size_t c = 0; c < cols; c += k.gemm_nr)
            k.gemm_micro(d, buf.q_packed + r * d, buf.k_packed + c * d, buf.scores + r * key_block + c, key_block,
                         std::min(k.gemm_mr, rows - r), std::min(k.gemm_nr, cols - c), false);
}

// acc[rows × d] += the weights in scores · the `cols` value rows from `values`.
void accumulate_block(KernelTable const& k, Buffers const& buf, std::size_t rows, std::size_t d,
                      std::byte const* values, GemmType type, std::size_t kv_row, std::size_t cols) {
    GemmArgs const pv{.m = rows,
                      .n = d,
                      .k = cols,
                      .a = buf.scores,
                      .a_type = GemmType::f32,
                      .a_row = key_block,
                      .a_col = 1,
                      .b = values,
                      .b_type = type,
                      .b_row = kv_row,
                      .b_col = 1};
    k.gemm_pack_a(pv, 0, rows, 0, cols, buf.p_packed);
    k.gemm_pack_b(pv, 0, cols, 0, d, buf.v_packed);
    for (std::size_t r = 0; r < rows; r += k.gemm_mr)
        for (std::size_t c = 0; c < d; c += k.gemm_nr)
            k.gemm_micro(cols, buf.p_packed + r * cols, buf.v_packed + c * cols, buf.acc + r * d + c, d,
                         std::min(k.gemm_mr, rows - r), std::min(k.gemm_nr, d - c), true);
}

// out rows (`row_step` elements apart) = acc / sum; a row that saw no key (sum 0) is zeros.
void write_rows(Problem const& p, Buffers const& buf, std::size_t rows, std::byte* out, std::size_t row_step) {
    std::size_t const d = p.a.head_dim;
    for (std::size_t r = 0; r < rows; ++r) {
        float const sum = buf.row_sum[r], inv = sum == 0.0f ? 0.0f : 1.0f / sum;
        std::byte* const row = out + r * row_step * p.elem;
        float* const dst = p.type == DType::f32 ? reinterpret_cast<float*>(row) : buf.staged;
        for (std::size_t c = 0; c < d; ++c) dst[c] = sum == 0.0f ? 0.0f : buf.acc[r * d + c] * inv;
        if (p.type != DType::f32) p.k.narrow(p.type, buf.staged, row, d);
    }
}

void run_block(Problem const& p, Workspace const& w, Rows const& set) {
    op::Attention const& a = p.a;
    KernelTable const& k = p.k;
    std::size_t const b = set.b, h = set.h0, i0 = set.i0, rows = set.rows, d = a.head_dim;
    std::size_t const hk = h / (a.heads / a.kv_heads);
    std::size_t const q_row = a.heads * d, kv_row = a.kv_heads * d;
    std::size_t const row_step = set.stacked ? d : q_row;  // between the task's rows, in q and out
    Buffers const buf = buffers(w, p.block_q);
    std::fill(buf.acc, buf.acc + rows * d, 0.0f);
    std::fill(buf.row_max, buf.row_max + rows, -std::numeric_limits<float>::infinity());
    std::fill(buf.row_sum, buf.row_sum + rows, 0.0f);

    std::size_t const first = (b * a.q_len + i0) * q_row + h * d;  // the task's first q and out element
    std::byte const* k_base = p.kk + (b * a.kv_len * kv_row + hk * d) * p.elem;
    std::byte const* v_base = p.v + (b * a.kv_len * kv_row + hk * d) * p.elem;
    GemmArgs const qa{
        .m = rows, .n = 0, .k = d, .a = p.q + first * p.elem, .a_type = p.gtype, .a_row = row_step, .a_col = 1};
    k.gemm_pack_a(qa, 0, rows, 0, d, buf.q_packed);

    // Under causal, no key past the one the task's last row sees.
    std::int64_t const first_pos = a.query_offset + static_cast<std::int64_t>(i0);
    std::int64_t const last_pos = first_pos + (set.stacked ? 0 : static_cast<std::int64_t>(rows) - 1);
    std::size_t kv_end = a.kv_len;
    if (a.causal)
        kv_end =
            static_cast<std::size_t>(std::clamp<std::int64_t>(last_pos + 1, 0, static_cast<std::int64_t>(a.kv_len)));
    for (std::size_t j0 = 0; j0 < kv_end; j0 += key_block) {
        std::size_t const cols = std::min(key_block, kv_end - j0);
        if (j0 + key_block < kv_end)
            prefetch_rows(k_base, v_base, j0 + key_block, std::min(key_block, kv_end - j0 - key_block), kv_row * p.elem,
                          d * p.elem);
        score_block(k, buf, rows, d, k_base + j0 * kv_row * p.elem, p.gtype, kv_row, cols);
        AttentionTile tile{.scores = buf.scores,
                           .ld = key_block,
                           .rows = rows,
                           .cols = cols,
                           .scale = a.scale,
                           .row_max = buf.row_max,
                           .row_sum = buf.row_sum,
                           .out = buf.acc,
                           .ld_out = d,
                           .out_cols = d};
        if (p.mask) {
            tile.mask = p.mask + b * a.mask_batch + h * a.mask_head + i0 * a.mask_row + j0;
            tile.mask_row = set.stacked ? a.mask_head : a.mask_row;
        }
        if (a.causal) tile.visible = first_pos + 1 - static_cast<std::int64_t>(j0);
        tile.visible_step = set.stacked ? 0 : 1;
        k.attention_tile(tile);
        accumulate_block(k, buf, rows, d, v_base + j0 * kv_row * p.elem, p.gtype, kv_row, cols);
    }
    write_rows(p, buf, rows, p.out + first * p.elem, row_step);
}

}  // namespace

Support supports(KernelRunner const&, op::Attention const& a, OpViews const& v) {
    DType const type = v.in[0].dtype;
    if (!detail::is_floating(type) || v.in[1].dtype != type || v.in[2].dtype != type || v.out[0].dtype != type)
        return detail::floating_types_only("cpu", a.op);
    if (a.has_mask && v.in[3].dtype != DType::f32) return Support::no("cpu: attention takes an f32 mask");
    return Support::yes();
}

void run(KernelRunner& r, op::Attention const& stated, OpViews const& v) {
    op::Attention a = stated;
    if (a.stored_position)
        a.query_offset =
            std::clamp<std::int64_t>(*data<std::int32_t const>(v.in[4]), 0, static_cast<std::int64_t>(a.kv_len));
    KernelTable const& k = r.kernels();
    DType const type = v.in[0].dtype;
    std::size_t const block_q = round_up(48, k.gemm_mr);
    Problem const p{.a = a,
                    .k = k,
                    .type = type,
                    .gtype = gemm_type(type),
                    .q = data<std::byte const>(v.in[0]),
                    .kk = data<std::byte const>(v.in[1]),
                    .v = data<std::byte const>(v.in[2]),
                    .mask = a.has_mask ? data<float const>(v.in[3]) : nullptr,
                    .out = data<std::byte>(v.out[0]),
                    .block_q = block_q,
                    .q_blocks = (a.q_len + block_q - 1) / block_q,
                    .elem = bytes_for(type, 1)};
    // One query row (decode): a task is a block of the heads that share a key/value head, so their
    // keys and values are packed once and fill the micro-kernel's rows. Otherwise a task is a block
    // of query rows of one head, the heads in turn (its keys and values stay in the caches while the
    // threads take its blocks), the blocks last to first (under causal each head's heaviest first,
    // so the run ends on light tasks).
    bool const stacked = a.q_len == 1;
    std::size_t const group = a.heads / a.kv_heads;
    std::size_t const per_head = stacked ? (group + block_q - 1) / block_q : p.q_blocks;
    std::size_t const tasks = a.batch * (stacked ? a.kv_heads : a.heads) * per_head;
    auto const task_rows = [&](std::size_t t) {
        std::size_t const owner = t / per_head, part = t % per_head;
        if (stacked) {
            std::size_t const b = owner / a.kv_heads, first = part * block_q;
            return Rows{b, owner % a.kv_heads * group + first, 0, std::min(block_q, group - first), true};
        }
        std::size_t const i0 = (p.q_blocks - 1 - part) * block_q;
        return Rows{owner / a.heads, owner % a.heads, i0, std::min(block_q, a.q_len - i0), false};
    };
    std::atomic<std::size_t> next{0};
    ThreadPool& pool = r.pool();
    std::size_t const flops_per_task = block_q * a.kv_len * a.head_dim;
    std::size_t const parts =
        std::min({pool.size(), tasks, std::max<std::size_t>(1, tasks * flops_per_task / (1 << 18))});
    pool.run_parts(parts, [&](std::size_t, std::size_t) {
        Workspace const w(block_q, k.gemm_mr, k.gemm_nr, a.head_dim);
        for (std::size_t t = next++; t < tasks; t = next++) run_block(p, w, task_rows(t));
    });
}

}  // namespace rayo::cpu::ops
