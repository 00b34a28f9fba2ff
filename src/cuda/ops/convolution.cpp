// conv2d on CUDA (rayo/ptx/kernels/convolution.hpp), accumulated in f32: f16 / bf16 convolutions
// with at least 16 input and 16 output channels per group run as an implicit GEMM on the tensor
// cores (rayo_conv2d_gemm); the rest (f32, depthwise and other thin groups) directly, one output
// per thread (rayo_conv2d_direct).
#include <cstdint>
#include <optional>

#include "cuda/ops/elementwise_launch.hpp"
#include "cuda/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/ptx/kernels/convolution.hpp"

namespace rayo::cuda::ops {

namespace {

std::uint32_t u32(std::size_t v) { return static_cast<std::uint32_t>(v); }

// The implicit GEMM multiplies og × cg·kh·kw weights by a gathered cg·kh·kw × pixels tile on the
// tensor cores, which pays once a group has 16 input and 16 output channels (a whole mma k slice
// and row tile); thinner groups (depthwise convolutions, a first layer's 3 channels) would leave
// most of each 16 × 8 × 16 MMA zero, and are faster direct. Its tap bits allow windows of up to
// 32 taps, and its grid holds up to 65535 groups.
bool implicit_gemm(op::Conv2d const& d, DType element) {
    op::Conv2dShape const& s = d.shape;
    if (element != DType::f16 && element != DType::bf16) return false;
    std::size_t const cg = s.c / s.groups, og = s.o / s.groups;
    return cg >= 16 && og >= 16 && s.kh * s.kw <= 32 && s.groups <= 0xffff;
}

// The implicit GEMM's variant: 64-channel tiles for groups of at most 64 outputs, else 128; the
// deepest pipeline (4 to 2 stages) whose shared memory, k table included, the device allows.
std::optional<ptx::kernels::Conv2dGemmConfig> gemm_config(KernelRunner const& runner, op::Conv2d const& d,
                                                          OpViews const& v, std::uint64_t out, std::uint64_t w) {
    op::Conv2dShape const& s = d.shape;
    std::size_t const og = s.o / s.groups, k = s.c / s.groups * s.kh * s.kw;
    ptx::kernels::Conv2dGemmConfig c{.element = v.out[0].dtype,
                                     .flip = s.flip,
                                     .bias = d.has_bias,
                                     .aligned = k % 8 == 0 && w % 16 == 0,
                                     .paired_stores = (s.oh * s.ow) % 2 == 0 && out % 4 == 0,
                                     .tile_m = og <= 64 ? 64u : 128u};
    for (unsigned stages = 4; stages >= 2; --stages) {
        c.stages = stages;
        if (ptx::kernels::conv2d_gemm_launch(c, s.n * s.oh * s.ow, og, k, s.groups).shared_bytes <=
            runner.max_shared_bytes())
            return c;
    }
    return std::nullopt;
}

void run_gemm(KernelRunner& runner, op::Conv2d const& d, ptx::kernels::Conv2dGemmConfig const& config,
              std::uint64_t out, std::uint64_t x, std::uint64_t w, std::uint64_t bias) {
    op::Conv2dShape const& s = d.shape;
    std::size_t const og = s.o / s.groups, k = s.c / s.groups * s.kh * s.kw;
    ptx::kernels::Conv2dGemmLaunch const launch =
        ptx::kernels::conv2d_gemm_launch(config, s.n * s.oh * s.ow, og, k, s.groups);
    LaunchDims const dims{.grid = {launch.grid_x, launch.grid_y, 1},
                          .block = {launch.threads, 1, 1},
                          .shared_bytes = launch.shared_bytes};
    KernelKey key;
    key << "conv2d_gemm/" << ptx::kernels::conv2d_gemm_name(config) << "/" << ptx::to_string(runner.target());
    runner.run(
        key.view(), [config] { return ptx::kernels::conv2d_gemm(config); }, dims, out, x, w, bias, u32(s.n), u32(s.c),
        u32(s.h), u32(s.w), u32(s.o), u32(s.kh), u32(s.kw), u32(s.oh), u32(s.ow), u32(s.stride_h), u32(s.stride_w),
        u32(s.pad_h), u32(s.pad_w), u32(s.dilation_h), u32(s.dilation_w), u32(s.c / s.groups), u32(og));
}

}  // namespace

Support supports(KernelRunner const&, op::Conv2d const& d, OpViews const& v) {
    if (!detail::all_contiguous(v)) return Support::no("cuda: conv2d takes contiguous operands");
    for (auto const* views : {&v.in, &v.out})
        for (TensorView const& t : *views)
            if (t.present && t.numel() > 0xffffffffu)
                return Support::no("cuda: conv2d of tensors of 2^32 elements or more");
    if (d.shape.n * d.shape.o * d.shape.oh * d.shape.ow > 0xffffffffu)
        return Support::no("cuda: conv2d of outputs of 2^32 elements or more");
    return Support::yes();
}

void run(KernelRunner& runner, op::Conv2d const& d, OpViews const& v) {
    op::Conv2dShape const& s = d.shape;
    std::uint32_t const total = u32(s.n * s.o * s.oh * s.ow);
    if (total == 0) return;
    ptx::kernels::Conv2dKernelConfig const config{
        .element = v.out[0].dtype, .flip = s.flip, .bias = d.has_bias, .block_threads = elementwise_block_threads};
    std::uint64_t const out = runner.address(v.out[0]), x = runner.address(v.in[0]), w = runner.address(v.in[1]);
    std::uint64_t const bias = d.has_bias ? runner.address(v.in[2]) : w;
    if (implicit_gemm(d, config.element))
        if (auto const gemm = gemm_config(runner, d, v, out, w)) return run_gemm(runner, d, *gemm, out, x, w, bias);
    KernelKey key;
    key << "conv2d_direct/" << to_string(config.element) << (config.flip ? "/flip" : "") << (config.bias ? "/bias" : "")
        << "/t" << config.block_threads << "/" << ptx::to_string(runner.target());
    runner.run(
        key.view(), [config] { return ptx::kernels::conv2d_direct(config); }, elementwise_launch(total, false), out, x,
        w, bias, total, u32(s.c), u32(s.h), u32(s.w), u32(s.o), u32(s.kh), u32(s.kw), u32(s.oh), u32(s.ow),
        u32(s.stride_h), u32(s.stride_w), u32(s.pad_h), u32(s.pad_w), u32(s.dilation_h), u32(s.dilation_w),
        u32(s.groups ? s.c / s.groups : 0), u32(s.o / s.groups));
}

}  // namespace rayo::cuda::ops
