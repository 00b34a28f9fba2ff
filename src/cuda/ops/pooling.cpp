// max_pool2d and avg_pool2d on CUDA: rayo_<op> (rayo/ptx/kernels/pooling.hpp), one thread per
// output element.
#include <algorithm>
#include <cstdint>

#include "cuda/ops/elementwise_launch.hpp"
#include "cuda/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/ptx/kernels/pooling.hpp"

namespace rayo::cuda::ops {

Support supports(KernelRunner const&, op::Pool2d const& d, OpViews const& v) {
    Support s = detail::contiguous_floating("cuda", d.op, v);
    if (!s.native) return s;
    if (v.in[0].numel() > 0x7fffffffu) return Support::no("cuda: a pool over 2^31 elements or more");
    return Support::yes();
}

void run(KernelRunner& runner, op::Pool2d const& d, OpViews const& v) {
    TensorView const &x = v.in[0], &out = v.out[0];
    std::uint64_t out_address = runner.address(out), x_address = runner.address(x);
    auto u32 = [](std::size_t n) { return static_cast<std::uint32_t>(n); };
    std::uint32_t total = u32(out.numel()), h = u32(d.h), w = u32(d.w), oh = u32(d.oh), ow = u32(d.ow), kh = u32(d.kh),
                  kw = u32(d.kw), stride_h = u32(d.stride_h), stride_w = u32(d.stride_w), pad_h = u32(d.pad_h),
                  pad_w = u32(d.pad_w);
    if (total == 0) return;
    ptx::kernels::Pool2dKernelConfig const config{.op = d.op,
                                                  .element = x.dtype,
                                                  .count_include_pad = d.count_include_pad,
                                                  .block_threads = elementwise_block_threads};
    KernelKey key;
    key << "pool2d/" << to_string(d.op) << "/" << to_string(x.dtype) << (d.count_include_pad ? "" : "/exclude_pad")
        << "/" << ptx::to_string(runner.target());
    LaunchDims dims;
    dims.block[0] = elementwise_block_threads;
    dims.grid[0] =
        static_cast<unsigned>(std::min<std::size_t>((total + dims.block[0] - 1) / dims.block[0], 0x7fffffff));
    runner.run(
        key.view(), [config] { return ptx::kernels::pool2d(config); }, dims, out_address, x_address, total, h, w, oh,
        ow, kh, kw, stride_h, stride_w, pad_h, pad_w);
}

}  // namespace rayo::cuda::ops
