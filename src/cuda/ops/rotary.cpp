// rope on CUDA: rayo_rope (rayo/ptx/kernels/rotary.hpp), one thread per (token, head group, pair)
// applying its angle to the group's heads, and out of place with n_dims < head_dim one per copied
// dimension; a token's heads split into groups where the tokens alone give few threads
// (op::rope_head_groups).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cuda/ops/elementwise_launch.hpp"
#include "cuda/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/ptx/kernels/rotary.hpp"

namespace rayo::cuda::ops {

Support supports(KernelRunner const&, op::Rope const& d, OpViews const& v) {
    TensorView const &x = v.in[0], &out = v.out[0];
    if (!detail::is_floating(x.dtype) || out.dtype != x.dtype || v.in[1].dtype != DType::i32 ||
        (d.has_factors && v.in[2].dtype != DType::f32))
        return Support::no("cuda: rope takes x and out of one floating type, i32 positions and f32 factors");
    if (!x.is_contiguous() || !out.is_contiguous()) return Support::no("cuda: rope takes contiguous tensors");
    if (d.tokens * (d.head_dim / 2 + d.head_dim) > 0xffffffffu || d.heads * d.head_dim > 0xffffffffu)
        return Support::no("cuda: rope of 2^32 (token, pair) lanes or more");
    return Support::yes();
}

void run(KernelRunner& runner, op::Rope const& d, OpViews const& v) {
    TensorView const &x = v.in[0], &positions = v.in[1], &out = v.out[0];
    std::uint64_t out_address = runner.address(out), x_address = runner.address(x),
                  positions_address = runner.address(positions),
                  factors_address = d.has_factors ? runner.address(v.in[2]) : positions_address;
    bool const copy_tail = out_address != x_address && d.n_dims < d.head_dim;
    auto lanes = static_cast<std::uint32_t>(d.n_dims / 2 + (copy_tail ? d.head_dim - d.n_dims : 0));
    if (d.tokens * lanes == 0) return;
    std::size_t const groups = op::rope_head_groups(d, lanes);
    auto total = static_cast<std::uint32_t>(d.tokens * lanes * groups);
    auto heads = static_cast<std::uint32_t>(d.heads), head_dim = static_cast<std::uint32_t>(d.head_dim),
         n_dims = static_cast<std::uint32_t>(d.n_dims), entries = static_cast<std::uint32_t>(d.positions);
    // The exponent's factor −2·ln(freq_base)/n_dims as a double-float.
    double const c = -2.0 * std::log(static_cast<double>(d.freq_base)) / static_cast<double>(d.n_dims);
    float c_hi = static_cast<float>(c), c_lo = static_cast<float>(c - static_cast<double>(c_hi)),
          freq_scale = d.freq_scale;
    ptx::kernels::RopeKernelConfig const config{.element = x.dtype,
                                                .halves = d.halves,
                                                .has_factors = d.has_factors,
                                                .block_threads = elementwise_block_threads};
    KernelKey key;
    key << "rope/" << to_string(x.dtype) << (d.halves ? "/halves" : "") << (d.has_factors ? "/factors" : "") << "/"
        << ptx::to_string(runner.target());
    LaunchDims dims;
    dims.block[0] = elementwise_block_threads;
    dims.grid[0] =
        static_cast<unsigned>(std::min<std::size_t>((total + dims.block[0] - 1) / dims.block[0], 0x7fffffff));
    runner.run(
        key.view(), [config] { return ptx::kernels::rope(config); }, dims, out_address, x_address, positions_address,
        factors_address, total, lanes, static_cast<std::uint32_t>(groups), heads, head_dim, n_dims, entries, c_hi, c_lo,
        freq_scale);
}

}  // namespace rayo::cuda::ops
