// rope as PTX: x [tokens, heads, head_dim] rotated pair by pair (src/dispatch/op_descriptor.hpp,
// op::Rope), one thread per (token, head group, lane) and step of a grid-stride loop.
//
//   Kernel k = rayo::ptx::kernels::rope({.element = DType::f16, .halves = true});
#pragma once

#include "rayo/dtype.hpp"
#include "rayo/export.hpp"
#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels {

struct RAYO_API RopeKernelConfig {
    DType element = DType::f32;    // of x and out: f32, f16 or bf16 (computed in f32)
    bool halves = false;           // pairs (p, p + n_dims/2), else (2p, 2p + 1)
    bool has_factors = false;      // angles divided by factors[p] (f32)
    unsigned block_threads = 256;  // .maxntid
};

// Lanes [0, n_dims/2) of a token are its pairs: the thread computes the pair's angle once, in f32
// (freq_base^(−2p/n_dims) as e^(p·c) with c = c_hi + c_lo = −2·ln(freq_base)/n_dims, times the
// position and freq_scale, divided by the factor), its cosine and sine after an exact reduction by
// π/2, and rotates the pair in heads g, g + groups, ... of the token (head group g). Lanes from
// n_dims/2 on copy dimension n_dims + (lane − n_dims/2) of those heads (the launch gives none when
// out is x). Parameters, in order: out, x, positions (.s32), factors (.u64 each; factors unread
// without has_factors), total (.u32 tokens · groups · lanes), lanes, groups, heads, head_dim,
// n_dims, positions (.u32 entries: token t's is positions[t % entries]), c_hi, c_lo, freq_scale
// (.f32). Named rayo_rope[_halves][_factors][_f16|_bf16].
[[nodiscard]] RAYO_API Kernel rope(RopeKernelConfig const& config);

}  // namespace rayo::ptx::kernels
