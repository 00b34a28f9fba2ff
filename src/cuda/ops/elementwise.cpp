// The unary and binary families on CUDA: pick the kernel variant and launch shape for the views at
// hand and queue the generated kernel (rayo/ptx/kernels/elementwise.hpp) on the runner.
#include <algorithm>
#include <cstdint>
#include <string>

#include "cuda/ops/elementwise_launch.hpp"
#include "cuda/ops/ops.hpp"
#include "dispatch/broadcast.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/ptx/kernels/elementwise.hpp"

namespace rayo::cuda::ops {

namespace {

// The bytes of a group of 4 elements of `type`: one vector access.
std::uint64_t group_bytes(DType type) { return 4 * bytes_for(type, 1); }

// The vector body needs all operands at one address modulo a group's size (the head aligns them
// together).
bool same_alignment(DType type, std::initializer_list<std::uint64_t> addresses) {
    std::uint64_t const first = *addresses.begin() % group_bytes(type);
    return std::all_of(addresses.begin(), addresses.end(),
                       [&](std::uint64_t a) { return a % group_bytes(type) == first; });
}

void append_key_suffix(KernelKey& key, DType type, bool vectorized, KernelRunner const& runner) {
    key << "/" << to_string(type) << "/" << (vectorized ? "v4" : "scalar") << "/u" << elementwise_unroll << "/b"
        << elementwise_block_threads << "/" << ptx::to_string(runner.target());
}

// out = a op b with broadcast operands: rayo_binary_<op>_broadcast_r<rank> over the collapsed layout.
void run_broadcast(KernelRunner& runner, Op op, TensorView const& a, TensorView const& b, TensorView const& out) {
    std::size_t const n = out.numel();
    if (n == 0) return;
    TensorView const operands[] = {a, b};
    detail::StridedLayout const l = detail::collapse(out, operands);
    std::uint64_t out_address = runner.address(out), a_address = runner.address(a), b_address = runner.address(b);
    auto count = static_cast<std::uint32_t>(n);
    // Groups of 4 along the rows (16- or 8-byte accesses) where every operand read along them
    // allows (one repeated along them is a single load at any address).
    std::size_t const last = l.rank - 1;
    bool const a_repeats = l.strides[0][last] == 0, b_repeats = l.strides[1][last] == 0;
    std::uint64_t const group = group_bytes(out.dtype);
    bool const vectorized = l.inner() % 4 == 0 && out_address % group == 0 && (a_repeats || a_address % group == 0) &&
                            (b_repeats || b_address % group == 0);
    ptx::kernels::BinaryBroadcastKernelConfig const config{.op = op,
                                                           .element = out.dtype,
                                                           .rank = static_cast<unsigned>(l.rank),
                                                           .vectorized = vectorized,
                                                           .a_repeats_along_rows = vectorized && a_repeats,
                                                           .b_repeats_along_rows = vectorized && b_repeats,
                                                           .block_threads = elementwise_block_threads};
    KernelKey key;
    key << "binary_broadcast/" << to_string(op) << "/" << to_string(config.element) << "/r" << config.rank
        << (config.vectorized ? "/v4" : "/scalar") << (config.a_repeats_along_rows ? "/ra" : "")
        << (config.b_repeats_along_rows ? "/rb" : "") << "/b" << config.block_threads << "/"
        << ptx::to_string(runner.target());
    launch_strided<4>(
        runner, key.view(), [config] { return ptx::kernels::binary_broadcast(config); },
        elementwise_launch(n, vectorized), {&out_address, &a_address, &b_address, &count}, l);
}

}  // namespace

Support supports(KernelRunner const&, op::Unary const& d, OpViews const& v) {
    return detail::contiguous_floating("cuda", d.op, v);
}

void run(KernelRunner& runner, op::Unary const& d, OpViews const& v) {
    std::size_t const n = v.out[0].numel();
    if (n == 0) return;
    std::uint64_t const in_address = runner.address(v.in[0]);
    std::uint64_t const out_address = runner.address(v.out[0]);
    DType const type = v.out[0].dtype;
    bool const vectorized = same_alignment(type, {out_address, in_address});
    ptx::kernels::UnaryKernelConfig const config{.op = d.op,
                                                 .element = type,
                                                 .vectorized = vectorized,
                                                 .unroll = elementwise_unroll,
                                                 .block_threads = elementwise_block_threads};
    KernelKey key;
    key << "unary/" << to_string(config.op);
    append_key_suffix(key, type, vectorized, runner);
    runner.run(
        key.view(), [config] { return ptx::kernels::unary(config); }, elementwise_launch(n, vectorized), out_address,
        in_address, std::uint64_t{n}, d.a, d.b);
}

Support supports(KernelRunner const&, op::Binary const& d, OpViews const& v) {
    Support s = detail::elementwise_floating("cuda", d.op, v);
    bool const broadcast = s.native && !d.scalar_rhs && !(v.in[0].is_contiguous() && v.in[1].is_contiguous());
    if (broadcast && v.out[0].numel() > 0xffffffffu)
        return Support::no("cuda: broadcast element-wise ops over 2^32 elements or more");
    return s;
}

void run(KernelRunner& runner, op::Binary const& d, OpViews const& v) {
    std::size_t const n = v.out[0].numel();
    if (n == 0) return;
    if (!d.scalar_rhs && !(v.in[0].is_contiguous() && v.in[1].is_contiguous()))
        return run_broadcast(runner, d.op, v.in[0], v.in[1], v.out[0]);
    std::uint64_t const a_address = runner.address(v.in[0]);
    std::uint64_t const b_address = d.scalar_rhs ? 0 : runner.address(v.in[1]);
    std::uint64_t const out_address = runner.address(v.out[0]);
    DType const type = v.out[0].dtype;
    bool const vectorized = d.scalar_rhs ? same_alignment(type, {out_address, a_address})
                                         : same_alignment(type, {out_address, a_address, b_address});
    ptx::kernels::BinaryKernelConfig const config{.op = d.op,
                                                  .element = type,
                                                  .scalar_operand = d.scalar_rhs,
                                                  .vectorized = vectorized,
                                                  .unroll = elementwise_unroll,
                                                  .block_threads = elementwise_block_threads};
    KernelKey key;
    key << "binary/" << to_string(config.op) << (config.scalar_operand ? "/scalar_operand" : "/tensor_operand");
    append_key_suffix(key, type, vectorized, runner);
    runner.run(
        key.view(), [config] { return ptx::kernels::binary(config); }, elementwise_launch(n, vectorized), out_address,
        a_address, b_address, std::uint64_t{n}, d.scalar);
}

}  // namespace rayo::cuda::ops
