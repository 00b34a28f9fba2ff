// conv2d on Vulkan. f16 / bf16 convolutions whose groups have 16 or more input and output channels
// run as an implicit GEMM (shaders/conv2d_gemm.glsl): on cooperative matrices for f16 where the
// device has them (conv2d_coopmat, or conv2d_coopmat_m64 for groups of at most 64 outputs), else
// by scalar products from the same staged tiles (conv2d_gemm_tiled). The rest (f32, depthwise and
// other thin groups, windows of more than 32 taps) run shaders/conv2d_direct.comp, one output per
// invocation (f32, or f16 / bf16 through its _element16 build), accumulated in f32.
#include <algorithm>
#include <cstdint>

#include "dispatch/operand_checks.hpp"
#include "vulkan/ops/element_type.hpp"
#include "vulkan/ops/ops.hpp"

namespace rayo::vulkan::ops {

namespace {

// Push constants of conv2d_direct.comp.
struct Conv2dPush {
    std::uint32_t total = 0;
    std::uint32_t c = 0, h = 0, w = 0, o = 0, kh = 0, kw = 0, oh = 0, ow = 0;
    std::uint32_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
    std::uint32_t cg = 0, og = 0;
    std::uint32_t x_offset = 0, w_offset = 0, b_offset = 0, y_offset = 0;
};
static_assert(sizeof(Conv2dPush) <= 128);

// Push constants of the implicit-GEMM shaders (conv2d_gemm.glsl).
struct Conv2dGemmPush {
    std::uint32_t c = 0, h = 0, w = 0, o = 0, kh = 0, kw = 0, oh = 0, ow = 0;
    std::uint32_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
    std::uint32_t cg = 0, og = 0, k = 0, pixels = 0, row_tiles = 0;
    std::uint32_t x_offset = 0, w_offset = 0, b_offset = 0, y_offset = 0;
};
static_assert(sizeof(Conv2dGemmPush) <= 128);

std::uint32_t u32(std::size_t v) { return static_cast<std::uint32_t>(v); }
std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

enum class Conv2dPath { direct, tiled, cooperative, cooperative_m64 };

// An implicit-GEMM shader's tile: output channels x pixels.
struct GemmTile {
    std::uint32_t m, n;
};

constexpr GemmTile tile_of(Conv2dPath path) {
    switch (path) {
        case Conv2dPath::cooperative: return {128, 128};
        case Conv2dPath::cooperative_m64: return {64, 256};
        default: return {64, 64};
    }
}

// Shared memory of each implicit-GEMM shader: two stages of the weight tile (rows of 40 halves)
// and of the image tile (rows of tile.n + 8), the tap table, and (cooperative) a 16x8 f32 scratch
// per subgroup.
constexpr std::uint32_t gemm_shared_bytes(Conv2dPath path) {
    GemmTile const tile = tile_of(path);
    return 2 * (tile.m * 40 + 32 * (tile.n + 8)) * 2 + 32 * 8 + (path != Conv2dPath::tiled ? 4 * 16 * 8 * 4 : 0);
}

// How a conv2d runs on this device. The implicit GEMM pays once a group has 16 input and 16 output
// channels (a whole fragment's depth and rows); thinner groups would multiply mostly zeros and are
// faster direct. Its tap masks hold windows of up to 32 taps; its grid is (tiles, groups); on a
// device that cuts loops short it must finish its k steps inside the loop budget.
Conv2dPath plan_conv2d(ShaderRunner const& r, op::Conv2d const& d, DType element) {
    op::Conv2dShape const& s = d.shape;
    if (element != DType::f16 && element != DType::bf16) return Conv2dPath::direct;
    std::size_t const cg = s.c / s.groups, og = s.o / s.groups, k = cg * s.kh * s.kw;
    if (cg < 16 || og < 16 || s.kh * s.kw > 32) return Conv2dPath::direct;
    auto const& limits = r.limits();
    if (limits.maxComputeWorkGroupInvocations < 128 || s.groups > limits.maxComputeWorkGroupCount[1] ||
        s.groups > r.max_groups())
        return Conv2dPath::direct;
    bool const cooperative = element == DType::f16 &&
                             r.physical().cooperative_matrix != PhysicalDevice::CooperativeMatrix::none &&
                             r.switches().cooperative_matrix;
    Conv2dPath path = Conv2dPath::tiled;
    if (cooperative) path = og <= 64 ? Conv2dPath::cooperative_m64 : Conv2dPath::cooperative;
    GemmTile const tile = tile_of(path);
    if (limits.maxComputeSharedMemorySize < gemm_shared_bytes(path)) return Conv2dPath::direct;
    std::size_t const tiles = ceil_div(og, tile.m) * ceil_div(s.n * s.oh * s.ow, tile.n);
    if (tiles > r.max_groups()) return Conv2dPath::direct;
    // A k step, its 32 products, and the window's taps per pixel.
    if (ceil_div(k, 32) * 40 + 2 * 32 + 64 > r.physical().loop_iteration_limit) return Conv2dPath::direct;
    return path;
}

void run_gemm(ShaderRunner& r, op::Conv2d const& d, Conv2dPath path, Binding const& bx, Binding const& bw,
              Binding const& bb, Binding const& by, DType element) {
    std::size_t const size = bytes_for(element, 1);
    op::Conv2dShape const& s = d.shape;
    GemmTile const tile = tile_of(path);
    Conv2dGemmPush push;
    push.c = u32(s.c), push.h = u32(s.h), push.w = u32(s.w), push.o = u32(s.o);
    push.kh = u32(s.kh), push.kw = u32(s.kw), push.oh = u32(s.oh), push.ow = u32(s.ow);
    push.stride_h = u32(s.stride_h), push.stride_w = u32(s.stride_w), push.pad_h = u32(s.pad_h),
    push.pad_w = u32(s.pad_w);
    push.dilation_h = u32(s.dilation_h), push.dilation_w = u32(s.dilation_w);
    push.cg = u32(s.c / s.groups), push.og = u32(s.o / s.groups);
    push.k = push.cg * push.kh * push.kw;
    push.pixels = u32(s.n * s.oh * s.ow);
    push.row_tiles = u32(ceil_div(push.og, tile.m));
    push.x_offset = bx.element_offset(size);
    push.w_offset = bw.element_offset(size);
    push.b_offset = d.has_bias ? bb.element_offset(size) : 0;
    push.y_offset = by.element_offset(size);
    // 16-byte weight loads where every run of 8 weights starts aligned and lies inside one row.
    bool const vec8 = push.w_offset % 8 == 0 && push.k % 8 == 0;
    SpecConstants constants{0u, 128u, s.flip ? 1u : 0u, d.has_bias ? 1u : 0u, 0u, vec8 ? 1u : 0u};
    Shader const shader = path == Conv2dPath::tiled         ? Shader::conv2d_gemm_tiled
                          : path == Conv2dPath::cooperative ? Shader::conv2d_coopmat
                                                            : Shader::conv2d_coopmat_m64;
    constants[element_type_constant] = static_cast<std::uint32_t>(element);
    std::uint32_t const tiles = push.row_tiles * u32(ceil_div(push.pixels, tile.n));
    r.dispatch(shader, constants, {bx, bw, bb, by}, push, {tiles, u32(s.groups)});
}

}  // namespace

Support supports(ShaderRunner const& r, op::Conv2d const& d, OpViews const& v) {
    if (Support s = element_type_supported(r, Op::conv2d, v.out[0].dtype); !s.native) return s;
    if (!detail::all_contiguous(v)) return Support::no("vulkan: conv2d takes contiguous operands");
    for (auto const* views : {&v.in, &v.out})
        for (TensorView const& t : *views)
            if (t.present && t.numel() > 0xffffffffu)
                return Support::no("vulkan: conv2d of tensors of 2^32 elements or more");
    if (d.shape.n * d.shape.o * d.shape.oh * d.shape.ow > 0xffffffffu)
        return Support::no("vulkan: conv2d of outputs of 2^32 elements or more");
    return Support::yes();
}

void run(ShaderRunner& r, op::Conv2d const& d, OpViews const& v) {
    op::Conv2dShape const& s = d.shape;
    TensorView const &x = v.in[0], &w = v.in[1], &out = v.out[0];
    std::size_t const size = bytes_for(out.dtype, 1);
    if (s.n * s.o * s.oh * s.ow == 0) return;
    Binding const bx = r.bind(x, x.bytes(), Access::read, "conv2d input");
    Binding const bw = r.bind(w, w.bytes(), Access::read, "conv2d weights");
    Binding const bb = d.has_bias ? r.bind(v.in[2], v.in[2].bytes(), Access::read, "conv2d bias") : bw.untouched();
    Binding const by = r.bind(out, out.bytes(), Access::write, "conv2d output");
    if (Conv2dPath const path = plan_conv2d(r, d, out.dtype); path != Conv2dPath::direct)
        return run_gemm(r, d, path, bx, bw, bb, by, out.dtype);
    Conv2dPush push;
    push.total = u32(s.n * s.o * s.oh * s.ow);
    push.c = u32(s.c), push.h = u32(s.h), push.w = u32(s.w), push.o = u32(s.o);
    push.kh = u32(s.kh), push.kw = u32(s.kw), push.oh = u32(s.oh), push.ow = u32(s.ow);
    push.stride_h = u32(s.stride_h), push.stride_w = u32(s.stride_w), push.pad_h = u32(s.pad_h),
    push.pad_w = u32(s.pad_w);
    push.dilation_h = u32(s.dilation_h), push.dilation_w = u32(s.dilation_w);
    push.cg = u32(s.c / s.groups), push.og = u32(s.o / s.groups);
    push.x_offset = bx.element_offset(size);
    push.w_offset = bw.element_offset(size);
    push.b_offset = d.has_bias ? bb.element_offset(size) : 0;
    push.y_offset = by.element_offset(size);
    std::uint32_t const workgroup = r.workgroup_size();
    SpecConstants constants{0u, workgroup, s.flip ? 1u : 0u, d.has_bias ? 1u : 0u};
    Shader const shader = element_build(Shader::conv2d_direct, Shader::conv2d_direct_element16, out.dtype, constants);
    auto const groups = u32(std::min<std::size_t>((push.total + workgroup - 1) / workgroup, r.max_groups()));
    r.dispatch(shader, constants, {bx, bw, bb, by}, push, {groups});
}

}  // namespace rayo::vulkan::ops
