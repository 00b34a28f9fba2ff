// Element-wise kernels: every unary op of rayo (relu ... gelu, exp, log, sqrt) and the binary
// ops (tensor-tensor and tensor-scalar add/sub/mul/div) over f32, f16 or bf16 arrays, as PTX.
// 16-bit elements are widened to f32 as they are loaded (exactly), the op runs in f32 as below,
// and results are rounded to nearest even as they are stored (cvt.rn.f16.f32 / cvt.rn.bf16.f32).
//
//   Kernel k = rayo::ptx::kernels::unary({.op = rayo::Op::gelu});
//   std::string text = k.emit(Target::sm_90);
//
// Memory: a 1-D grid-stride loop over groups of 4 elements (ld.global.v4.f32 / st.global.v4.f32;
// for 16-bit elements two packed .b32 words, 8 bytes) with a scalar head (the elements before
// `out` reaches a group boundary) and a scalar tail, so any element count and any element-aligned
// view works with any 1-D launch. The vector body needs every operand at the same address modulo
// the group's size; for views that are not, `vectorized = false` gives
// a plain scalar grid-stride loop. Each loop iteration keeps `unroll` accesses per operand in
// flight per thread.
//
// Accuracy, in ulps of the float nearest the exact result (subnormal results and ±inf/NaN inputs
// included): relu, leaky_relu, clip, abs, neg, add, sub, mul, sqrt (sqrt.rn), div (div.rn) are
// IEEE operations (0.5 ulp). exp, log, tanh, sigmoid, silu, elu, gelu_tanh are the CPU's
// algorithms (rayo/cpu/vector_math.hpp, the FMA path) with the same operations in the same order,
// so they give the CPU's bits on FMA machines and its bounds: exp 1.02, log 0.85, tanh 3.04,
// sigmoid 3.17, silu 2.40, elu 0.98 (alpha = 1; 1.94 for other alphas), gelu_tanh 2.33.
// gelu (erf) is an f32 algorithm of its own (the CPU's works in double, which would make the kernel
// compute-bound): at most 3.04 ulp for |x| < 20 (src/ptx/kernels/elementwise.cpp, gelu_erf_value).
// Special values follow the CPU: NaN in, NaN out; exp(-inf) = 0, log(±0) = -inf, log(x<0) = NaN,
// tanh(±inf) = ±1, gelu/silu(-inf) = -0, gelu(-0) = -0, elu(-inf) = -alpha.
#pragma once

#include <cstdint>
#include <string_view>

#include "rayo/export.hpp"
#include "rayo/dtype.hpp"
#include "rayo/op_table.hpp"
#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels {

// The ops are rayo::op_table's unary and binary families. gelu_tanh is
// 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))); gelu is x·Φ(x). leaky_relu and elu take alpha as
// parameter `a`; clip takes lo = `a`, hi = `b` (min(max(x, lo), hi), so lo > hi gives hi).
struct RAYO_API UnaryKernelConfig {
    Op op = Op::relu;            // a unary op (BuildError otherwise)
    DType element = DType::f32;  // of in and out: f32, f16 or bf16
    // 16-byte vector body; needs `in` and `out` at the same address modulo 16.
    bool vectorized = true;
    // Accesses per operand in flight per thread and loop iteration: 1, 2 or 4.
    unsigned unroll = 4;
    // The largest block the kernel is launched with (.maxntid); any 1-D block up to it works.
    unsigned block_threads = 256;
};

// out[i] = op(in[i]) for i < n. Parameters, in order:
//   out (.u64 address), in (.u64 address), n (.u64 element count), a (.f32), b (.f32)
// `out` may be `in` (in place). Named rayo_unary_<op>_<v4|scalar>_u<unroll>[_f16|_bf16].
[[nodiscard]] RAYO_API Kernel unary(UnaryKernelConfig const& config);

struct RAYO_API BinaryKernelConfig {
    Op op = Op::add;             // a binary op (BuildError otherwise)
    DType element = DType::f32;  // of a, b and out: f32, f16 or bf16 (s is .f32)
    // out = a op s with the .f32 parameter s, instead of a op b.
    bool scalar_operand = false;
    // 16-byte vector body; needs every array operand at the same address modulo 16.
    bool vectorized = true;
    unsigned unroll = 4;           // 1, 2 or 4
    unsigned block_threads = 256;  // .maxntid
};

// out[i] = a[i] op b[i] (or a[i] op s) for i < n, each one IEEE operation (div is div.rn).
// Parameters, in order:
//   out (.u64), a (.u64), b (.u64, not read with scalar_operand), n (.u64), s (.f32, read only
//   with scalar_operand)
// `out` may be `a` or `b`. Named rayo_binary_<op>[_scalar]_<v4|scalar>_u<unroll>[_f16|_bf16].
[[nodiscard]] RAYO_API Kernel binary(BinaryKernelConfig const& config);

// The most axes of a broadcast layout.
inline constexpr unsigned max_broadcast_rank = 8;

struct RAYO_API BinaryBroadcastKernelConfig {
    Op op = Op::add;             // a binary op (BuildError otherwise)
    DType element = DType::f32;  // of a, b and out: f32, f16 or bf16
    unsigned rank = 1;           // axes of the collapsed layout, 1 to max_broadcast_rank
    // 4 consecutive outputs of a row per thread (16-byte accesses): needs the innermost axis a
    // multiple of 4, out 16-byte aligned, and each operand either read along the row from a 16-byte
    // aligned address or repeated along it (its innermost stride 0, named below: one f32 load).
    bool vectorized = false;
    bool a_repeats_along_rows = false, b_repeats_along_rows = false;  // only with `vectorized`
    unsigned block_threads = 256;                                     // .maxntid
};

// out[i] = a[ia] op b[ib] for i < n, with NumPy broadcasting over a collapsed layout (the outermost
// axis first): ia = Σ coordinate[d]·a_stride[d] over the first `rank` axes of the output's
// coordinates, a stride of 0 repeating the operand along that axis; likewise ib. Parameters, in
// order: out (.u64), a (.u64), b (.u64), n (.u32), dim0..dim7, a_stride0..a_stride7,
// b_stride0..b_stride7 (.u32 each; those past `rank` are not read). Element indices are 32-bit.
// Named rayo_binary_<op>_broadcast_r<rank>[_v4[_ra][_rb]][_f16|_bf16] (vectorized; ra, rb: a, b
// repeated).
[[nodiscard]] RAYO_API Kernel binary_broadcast(BinaryBroadcastKernelConfig const& config);

// The op on one .f32 register, for other generators (softmax's exp, say): appends the
// instructions to `k` and returns the result register. `a` and `b` are .f32 registers holding the
// op's parameters (alpha; lo and hi), needed only by leaky_relu, elu and clip. Straight-line code
// except for exp-heavy tails (silu, gelu_tanh), which branch around a slow path; call it outside
// predicated() blocks.
[[nodiscard]] RAYO_API Reg emit_unary(Kernel& k, Op op, Reg x, Reg a = {}, Reg b = {});

}  // namespace rayo::ptx::kernels
