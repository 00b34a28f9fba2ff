// conv2d on CUDA: rayo_conv2d_direct (rayo/ptx/kernels/convolution.hpp), one output per thread,
// accumulated in f32.
#include <cstdint>

#include "cuda/ops/elementwise_launch.hpp"
#include "cuda/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/ptx/kernels/convolution.hpp"

namespace rayo::cuda::ops {

namespace {

std::uint32_t u32(std::size_t v) { return static_cast<std::uint32_t>(v); }

}  // namespace

Support supports(KernelRunner const&, op::Conv2d const& d, OpViews const& v) {
    if (!detail::all_contiguous(v)) return Support::no("cuda: conv2d takes contiguous operands");
    for (auto const* views : {&v.in, &v.out})
        for (TensorView const& t : *views)
            if (t.present && t.numel() > 0xffffffffu) return Support::no("cuda: conv2d of tensors of 2^32 elements or more");
    if (d.shape.n * d.shape.o * d.shape.oh * d.shape.ow > 0xffffffffu)
        return Support::no("cuda: conv2d of outputs of 2^32 elements or more");
    return Support::yes();
}

void run(KernelRunner& runner, op::Conv2d const& d, OpViews const& v) {
    op::Conv2dShape const& s = d.shape;
    std::uint32_t const total = u32(s.n * s.o * s.oh * s.ow);
    if (total == 0) return;
    ptx::kernels::Conv2dKernelConfig const config{.element = v.out[0].dtype, .flip = s.flip, .bias = d.has_bias,
                                                  .block_threads = elementwise_block_threads};
    std::uint64_t const out = runner.address(v.out[0]), x = runner.address(v.in[0]), w = runner.address(v.in[1]);
    std::uint64_t const bias = d.has_bias ? runner.address(v.in[2]) : w;
    KernelKey key;
    key << "conv2d_direct/" << to_string(config.element) << (config.flip ? "/flip" : "") << (config.bias ? "/bias" : "")
        << "/t" << config.block_threads << "/" << ptx::to_string(runner.target());
    runner.run(key.view(), [config] { return ptx::kernels::conv2d_direct(config); }, elementwise_launch(total, false), out, x,
               w, bias, total, u32(s.c), u32(s.h), u32(s.w), u32(s.o), u32(s.kh), u32(s.kw), u32(s.oh), u32(s.ow),
               u32(s.stride_h), u32(s.stride_w), u32(s.pad_h), u32(s.pad_w), u32(s.dilation_h), u32(s.dilation_w),
               u32(s.groups ? s.c / s.groups : 0), u32(s.o / s.groups));
}

}  // namespace rayo::cuda::ops
