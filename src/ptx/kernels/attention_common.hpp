// Pieces the attention generators share (rayo/ptx/kernels/attention.hpp): the parameters every
// variant takes, the online-softmax step and the warp reductions. Not part of the API.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "ptx/kernels/element_access.hpp"
#include "rayo/ptx/kernel.hpp"
#include "rayo/ptx/kernels/attention.hpp"

namespace rayo::ptx::kernels::attention_detail {

inline constexpr float log2e = 1.4426950408889634f;
inline constexpr float minus_infinity = -std::numeric_limits<float>::infinity();

// The parameters every attention kernel starts with, in their documented order.
struct AttentionFrame {
    Reg q, k, v, out, mask;               // global addresses
    Reg q_len, kv_len, heads, kv_heads;   // .u32
    Reg query_offset;                     // .s32: the parameter, or the s32 at query_position when that is not 0
    Reg causal;                           // .pred
    Reg scale_log2;                       // .f32
    Reg mask_batch, mask_head, mask_row;  // .u64 elements
};

// The size and scale parameters (q_len to scale_log2), in their documented order, into `f`.
inline void attention_sizes(Kernel& k, AttentionFrame& f) {
    f.q_len = k.param(Type::u32, "q_len");
    f.kv_len = k.param(Type::u32, "kv_len");
    f.heads = k.param(Type::u32, "heads");
    f.kv_heads = k.param(Type::u32, "kv_heads");
    f.query_offset = k.param(Type::s32, "query_offset");
    Reg const position = k.param(Type::u64, "query_position");
    k.if_then(k.setp(Cmp::ne, position, std::uint64_t{0}), [&] {
        Reg const stored = k.ld(Space::global, Type::s32, Address(k.cvta_to_global(position)));
        k.mov(f.query_offset, k.min(k.max(stored, 0), k.bitcast(Type::s32, f.kv_len)));
    });
    f.causal = k.setp(Cmp::ne, k.param(Type::u32, "causal"), 0u);
    f.scale_log2 = k.param(Type::f32, "scale_log2");
}

inline AttentionFrame attention_frame(Kernel& k) {
    AttentionFrame f;
    f.q = k.cvta_to_global(k.param(Type::u64, "q"));
    f.k = k.cvta_to_global(k.param(Type::u64, "k"));
    f.v = k.cvta_to_global(k.param(Type::u64, "v"));
    f.out = k.cvta_to_global(k.param(Type::u64, "out"));
    f.mask = k.cvta_to_global(k.param(Type::u64, "mask"));
    attention_sizes(k, f);
    f.mask_batch = k.param(Type::u64, "mask_batch");
    f.mask_head = k.param(Type::u64, "mask_head");
    f.mask_row = k.param(Type::u64, "mask_row");
    return f;
}

// The last key (.s32) query row `row` (.u32) sees: kv_len − 1, or less under the causal limit
// query_offset + row; below 0 when it sees none.
inline Reg last_visible_key(Kernel& k, AttentionFrame const& f, Reg row) {
    Reg const last = k.sub(k.bitcast(Type::s32, f.kv_len), 1);
    Reg const limit = k.add(f.query_offset, k.bitcast(Type::s32, row));
    return k.selp(k.min(last, limit), last, f.causal, Type::s32);
}

// mask + (b·mask_batch + h·mask_head + i·mask_row)·4: the mask row of (b, h, i), all .u32.
inline Reg mask_row_address(Kernel& k, AttentionFrame const& f, Reg b, Reg h, Reg i) {
    Reg elements = k.mul(k.cvt(Type::u64, b), f.mask_batch);
    elements = k.fma(k.cvt(Type::u64, h), f.mask_head, elements);
    elements = k.fma(k.cvt(Type::u64, i), f.mask_row, elements);
    return k.add(f.mask, k.shl(elements, 2));
}

// Butterfly reductions over the lanes `lanes` apart and closer (lanes: 16 for the whole warp, 2
// for a quad).
inline Reg butterfly_max(Kernel& k, Reg value, unsigned lanes) {
    for (unsigned d = lanes; d >= 1; d /= 2) value = k.max(value, k.shfl(ShuffleMode::bfly, value, d));
    return value;
}
inline Reg butterfly_sum(Kernel& k, Reg value, unsigned lanes) {
    for (unsigned d = lanes; d >= 1; d /= 2) value = k.add(value, k.shfl(ShuffleMode::bfly, value, d));
    return value;
}

// One online-softmax step of a row whose running max is `m` (updated in place): given the max of
// the new scores (exp2 domain, −Inf where hidden), returns (the max to subtract from them, the
// factor alpha = 2^(m_old − m_new) for the old sums). A row with every score so far −Inf
// subtracts 0, so 2^(−Inf − 0) = 0 and no −Inf − (−Inf) arises.
struct SoftmaxStep {
    Reg subtract, alpha;
};
inline SoftmaxStep softmax_step(Kernel& k, Reg m, Reg new_max) {
    Reg const m_new = k.max(m, new_max);
    Reg const subtract = k.selp(0.0f, m_new, k.setp(Cmp::eq, m_new, minus_infinity), Type::f32);
    Reg const alpha = k.ex2_approx(k.sub(m, subtract));
    k.mov(m, m_new);
    return {subtract, alpha};
}

// Two f32 values as one .b32 of two 16-bit elements (lo in the low half), rounded to nearest: an
// MMA's A operand made from accumulators.
inline Reg pack_pair(Kernel& k, DType element, Reg lo, Reg hi) {
    return k.join(Type::b32, element_detail::narrow(k, element, lo), element_detail::narrow(k, element, hi));
}

// 1 / l, or 0 for a row that saw no key (l = 0).
inline Reg inverse_sum(Kernel& k, Reg l) { return k.selp(k.rcp(l), 0.0f, k.setp(Cmp::gt, l, 0.0f), Type::f32); }

}  // namespace rayo::ptx::kernels::attention_detail
