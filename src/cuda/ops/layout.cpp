// The layout family on CUDA: rayo_copy_strided_r<rank>_b<bytes> (rayo/ptx/kernels/layout.hpp)
// over the collapsed views, one element per thread; copies that transpose matrices through
// rayo_transpose_tiled_b<bytes>, whose loads and stores both run along rows.
#include <cstdint>

#include "cuda/ops/elementwise_launch.hpp"
#include "cuda/ops/ops.hpp"
#include "dispatch/broadcast.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/ptx/kernels/layout.hpp"

namespace rayo::cuda::ops {

// A batch of matrix transpositions: rayo_transpose_tiled_b<bytes>, one 32 × 32 tile a block.
void transpose_matrices(KernelRunner& runner, detail::Transposition const& t, std::size_t element_bytes,
                        std::uint64_t out, std::uint64_t in) {
    ptx::kernels::TransposeKernelConfig const config{.element_bytes = static_cast<unsigned>(element_bytes)};
    KernelKey key;
    key << "transpose_tiled/b" << config.element_bytes << "/" << ptx::to_string(runner.target());
    auto const u32 = [](std::size_t v) { return static_cast<std::uint32_t>(v); };
    LaunchDims const dims{.grid = {u32((t.cols + 31) / 32), u32((t.rows + 31) / 32), u32(t.batch)},
                          .block = {32, 8, 1}};
    runner.run(
        key.view(), [config] { return ptx::kernels::transpose_tiled(config); }, dims, out, in, u32(t.rows), u32(t.cols),
        u32(t.in_stride), u32(t.out_stride), u32(t.in_batch), u32(t.out_batch));
}

Support supports(KernelRunner const&, op::Copy const&, OpViews const& v) {
    if (!detail::castable(v.in[0].dtype) || v.in[0].dtype != v.out[0].dtype)
        return Support::no("cuda: copy takes f32, f16, bf16 or i32 views of one type");
    std::size_t const element = bytes_for(v.out[0].dtype, 1);
    if (v.in[0].span_bytes() / element > 0xffffffffu || v.out[0].span_bytes() / element > 0xffffffffu)
        return Support::no("cuda: copy of views spanning 2^32 elements or more");
    return Support::yes();
}

void run(KernelRunner& runner, op::Copy const&, OpViews const& v) {
    TensorView const &in = v.in[0], &out = v.out[0];
    std::size_t const n = out.numel();
    if (n == 0) return;
    TensorView const views[] = {in, out};
    detail::StridedLayout const l = detail::collapse(out, views);
    std::uint64_t out_address = runner.address(out), in_address = runner.address(in);
    if (auto const t = detail::as_transposition(l); t && t->rows <= 65535u * 32 && t->batch <= 65535) {
        transpose_matrices(runner, *t, bytes_for(out.dtype, 1), out_address, in_address);
        return;
    }
    ptx::kernels::CopyStridedKernelConfig const config{.rank = static_cast<unsigned>(l.rank),
                                                       .element_bytes = static_cast<unsigned>(bytes_for(out.dtype, 1)),
                                                       .block_threads = elementwise_block_threads};
    auto count = static_cast<std::uint32_t>(n);
    KernelKey key;
    key << "copy_strided/r" << config.rank << "/b" << config.element_bytes << "/t" << config.block_threads << "/"
        << ptx::to_string(runner.target());
    launch_strided<3>(
        runner, key.view(), [config] { return ptx::kernels::copy_strided(config); }, elementwise_launch(n, false),
        {&out_address, &in_address, &count}, l);
}

}  // namespace rayo::cuda::ops
