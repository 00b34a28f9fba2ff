// The layout family on CUDA: rayo_copy_strided_r<rank>_b<bytes> (rayo/ptx/kernels/layout.hpp)
// over the collapsed views, one element per thread.
#include <cstdint>

#include "cuda/ops/elementwise_launch.hpp"
#include "cuda/ops/ops.hpp"
#include "dispatch/broadcast.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/ptx/kernels/layout.hpp"

namespace rayo::cuda::ops {

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
    ptx::kernels::CopyStridedKernelConfig const config{.rank = static_cast<unsigned>(l.rank),
                                                       .element_bytes = static_cast<unsigned>(bytes_for(out.dtype, 1)),
                                                       .block_threads = elementwise_block_threads};
    std::uint64_t out_address = runner.address(out), in_address = runner.address(in);
    auto count = static_cast<std::uint32_t>(n);
    KernelKey key;
    key << "copy_strided/r" << config.rank << "/b" << config.element_bytes << "/t" << config.block_threads << "/"
        << ptx::to_string(runner.target());
    launch_strided<3>(runner, key.view(), [config] { return ptx::kernels::copy_strided(config); },
                      elementwise_launch(n, false), {&out_address, &in_address, &count}, l);
}

}  // namespace rayo::cuda::ops
