// conv2d on the CPU. Depthwise convolutions (one input channel per group, few outputs per group)
// run the direct kernel of rayo/cpu/convolution.hpp over rows of output planes. Everything else
// is an implicit GEMM per image and group: C[o, pixel] = W[o, k] · X̂[k, pixel] with k =
// (channel, kernel row, kernel column). The weights are packed once into the GEMM's A panels; the
// im2col matrix X̂ is never stored whole: each thread packs a depth block of it for its own pixel
// range straight into the micro-kernel's B panel layout (an L2-sized tile), then runs the ISA's
// GEMM micro-kernel over it. A 1×1 conv at stride 1 without padding is a plain GEMM whose B is
// the image itself, packed by the GEMM's own B packer.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/gemm_driver.hpp"
#include "cpu/ops/ops.hpp"
#include "cpu/scratch_buffer.hpp"
#include "dispatch/operand_checks.hpp"

namespace rayo::cpu::ops {

namespace {

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }
std::size_t round_up(std::size_t a, std::size_t b) { return ceil_div(a, b) * b; }
std::size_t round_down(std::size_t a, std::size_t b) { return a / b * b; }

// Each thread's packed B block and C tile.
thread_local ScratchBuffer panel_scratch;
thread_local ScratchBuffer tile_scratch;
// The calling thread's operands as f32, kept between calls so that no call pays page faults.
thread_local ScratchBuffer input_scratch, bias_scratch, weight_scratch, packed_scratch;

// How a run is cut into tasks, and the implicit GEMM's sizes and blocking.
struct Plan {
    op::Conv2dShape s;
    ConvGeometry geometry;
    std::size_t cg = 0, og = 0;  // channels in and out of a group
    std::size_t depth = 0;       // K = cg·kh·kw
    std::size_t pixels = 0;      // oh·ow
    bool depthwise = false;      // the direct kernel, else the implicit GEMM
    bool plain_gemm = false;     // 1×1, stride 1, no padding: X̂ is the image
    std::size_t mr = 0, nr = 0;
    std::size_t kc = 0;         // depth of a packed block
    std::size_t mc = 0;         // output channels of a row block (a multiple of mr)
    std::size_t og_padded = 0;  // og rounded up to mr: the rows of a packed A block
    std::size_t chunk = 0;      // pixels (GEMM) or output rows (depthwise) of one task
    std::size_t chunks = 0;     // tasks per image and group
    std::size_t phase_len = 0;  // depthwise: see DepthwiseArgs
};

ConvGeometry geometry_of(op::Conv2dShape const& s) {
    return {.h = s.h,
            .w = s.w,
            .oh = s.oh,
            .ow = s.ow,
            .kh = s.kh,
            .kw = s.kw,
            .stride_h = s.stride_h,
            .stride_w = s.stride_w,
            .pad_h = s.pad_h,
            .pad_w = s.pad_w,
            .dilation_h = s.dilation_h,
            .dilation_w = s.dilation_w};
}

// Panels per task, at most `most`: the size whose tasks, each claimed by whichever thread is
// least loaded, leave the busiest thread the least work (a task costing a quarter panel itself).
// With many tasks per thread the largest size is balanced enough.
std::size_t balanced_chunk(std::size_t panels, std::size_t most, std::size_t images, std::size_t threads) {
    if (images * ceil_div(panels, most) >= 16 * threads) return most;
    std::size_t best = most;
    double best_cost = -1.0;
    std::vector<double> load(threads);
    for (std::size_t size = most; size >= 1 && 4 * size >= most; --size) {
        std::fill(load.begin(), load.end(), 0.0);
        std::size_t const per_image = ceil_div(panels, size);
        for (std::size_t t = 0; t < images * per_image; ++t) {
            std::size_t const chunk = t % per_image;
            double const work = static_cast<double>(std::min(size, panels - chunk * size)) + 0.25;
            *std::min_element(load.begin(), load.end()) += work;
        }
        double const cost = *std::max_element(load.begin(), load.end());
        if (best_cost < 0.0 || cost < best_cost - 1e-9) best_cost = cost, best = size;
    }
    return best;
}

void plan_gemm(Plan& p, KernelTable const& k, std::size_t threads) {
    op::Conv2dShape const& s = p.s;
    p.mr = k.gemm_mr;
    p.nr = k.gemm_nr;
    GemmBlocking const b = gemm_blocking(p.mr, p.nr, threads);
    // Equal depth blocks: 576 as 3 × 192, not 512 + 64.
    p.kc = p.depth ? round_up(ceil_div(p.depth, ceil_div(p.depth, b.kc)), 4) : 0;
    p.og_padded = round_up(p.og, p.mr);
    p.mc = std::max(p.mr, round_down(b.mc * b.kc / std::max<std::size_t>(p.kc, 1), p.mr));
    // A packed B block takes about the L2 share of a packed A block of the GEMM driver, and so does
    // the C tile that the depth blocks accumulate into.
    std::size_t const budget = b.mc * b.kc;
    std::size_t const cache_panels = std::max<std::size_t>(1, budget / std::max({p.kc, p.og, std::size_t{1}}) / p.nr);
    std::size_t const panels = ceil_div(p.pixels, p.nr);
    p.chunk = panels ? balanced_chunk(panels, std::min(cache_panels, panels), s.n * s.groups, threads) * p.nr : p.nr;
    p.chunks = ceil_div(p.pixels, p.chunk);
}

void plan_depthwise(Plan& p, std::size_t threads) {
    op::Conv2dShape const& s = p.s;
    std::size_t const reach = (s.kw - 1) * s.dilation_w / s.stride_w;
    p.phase_len = round_up(s.ow + reach + 16, 16);
    // Rows of a task: enough tasks for every thread four times over, and scratch within L2.
    std::size_t const planes = s.n * s.groups;
    std::size_t rows =
        ceil_div(s.oh, std::max<std::size_t>(1, ceil_div(4 * threads, std::max<std::size_t>(planes, 1))));
    std::size_t const row_floats = s.stride_w * p.phase_len;
    std::size_t const fit = (std::size_t{1} << 15) / row_floats / s.stride_h;
    rows = std::clamp<std::size_t>(std::min(rows, fit), 1, std::max<std::size_t>(s.oh, 1));
    p.chunk = rows;
    p.chunks = ceil_div(s.oh, rows);
}

Plan make_plan(op::Conv2dShape const& s, KernelTable const& k, std::size_t threads) {
    Plan p{.s = s, .geometry = geometry_of(s)};
    p.cg = s.c / s.groups;
    p.og = s.o / s.groups;
    p.depth = p.cg * s.kh * s.kw;
    p.pixels = s.oh * s.ow;
    p.depthwise = p.cg == 1 && p.og < k.gemm_mr && s.kh * s.kw <= depthwise_max_taps && p.pixels > 0;
    p.plain_gemm = s.kh == 1 && s.kw == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 && s.pad_w == 0;
    if (p.depthwise)
        plan_depthwise(p, threads);
    else
        plan_gemm(p, k, threads);
    return p;
}

// The weights as an f32 matrix [o, depth], each kernel turned half round when the op convolves
// (f32 weights of a cross-correlation are read in place).
float const* weight_matrix(Plan const& p, KernelTable const& k, TensorView const& w) {
    std::size_t const count = p.s.o * p.depth, taps = p.s.kh * p.s.kw;
    if (w.dtype == DType::f32 && !p.s.flip) return data<float const>(w);
    float* const m = weight_scratch.get(count);
    if (count == 0) return m;
    if (w.dtype == DType::f32)
        std::memcpy(m, data<float const>(w), count * sizeof(float));
    else
        k.widen(w.dtype, data<std::byte const>(w), m, count);
    if (p.s.flip)
        for (std::size_t row = 0; row < count; row += taps) std::reverse(m + row, m + row + taps);
    return m;
}

// Every group's A, packed: group g's depth block starting at d sits at g·og_padded·depth + og_padded·d.
float const* pack_weights(Plan const& p, KernelTable const& k, float const* w) {
    float* const packed = packed_scratch.get(p.s.groups * p.og_padded * p.depth);
    for (std::size_t g = 0; g < p.s.groups; ++g) {
        GemmArgs a;
        a.m = p.og;
        a.k = p.depth;
        a.a = w + g * p.og * p.depth;
        a.a_row = p.depth;
        a.a_col = 1;
        for (std::size_t d = 0; d < p.depth; d += p.kc)
            k.gemm_pack_a(a, 0, p.og, d, std::min(p.kc, p.depth - d), packed + (g * p.depth + d) * p.og_padded);
    }
    return packed;
}

// Depth [d0, d0 + kc) × pixels [j0, j0 + count) of one image-group's X̂ as the micro-kernel's B
// panels. x: the group's first channel.
void pack_block(Plan const& p, KernelTable const& k, float const* x, std::size_t d0, std::size_t kc, std::size_t j0,
                std::size_t count, float* panels) {
    if (!p.plain_gemm) {
        k.conv_pack_im2col(p.geometry, x, d0, kc, j0, count, panels);
        return;
    }
    GemmArgs b;
    b.k = p.depth;
    b.n = p.pixels;
    b.b = x;
    b.b_row = p.pixels;
    b.b_col = 1;
    k.gemm_pack_b(b, d0, kc, j0, count, panels);
}

// What one run shares with its tasks.
struct Operands {
    float const* x = nullptr;         // [n, c, h, w] as f32
    float const* a_packed = nullptr;  // pack_weights (GEMM)
    float const* weights = nullptr;   // weight_matrix (depthwise)
    float const* bias = nullptr;      // [o] as f32, or null
    std::byte* out = nullptr;
    DType out_type = DType::f32;
};

// One task: pixels [j0, j0 + count) of image n, group g.
void run_tile(Plan const& p, KernelTable const& k, Operands const& ops, std::size_t n, std::size_t g, std::size_t j0,
              std::size_t count) {
    op::Conv2dShape const& s = p.s;
    std::size_t const first_row = n * s.o + g * p.og;  // of out seen as [n·o, pixels]
    bool const direct = ops.out_type == DType::f32;
    float* c = direct ? reinterpret_cast<float*>(ops.out) + first_row * p.pixels + j0 : tile_scratch.get(p.og * count);
    std::size_t const ldc = direct ? p.pixels : count;
    bool const prefill = ops.bias != nullptr || p.depth == 0;
    if (prefill)
        for (std::size_t o = 0; o < p.og; ++o)
            std::fill_n(c + o * ldc, count, ops.bias ? ops.bias[g * p.og + o] : 0.0f);
    float* const panels = panel_scratch.get(p.kc * round_up(count, p.nr));
    float const* x = ops.x + (n * s.c + g * p.cg) * s.h * s.w;
    for (std::size_t d = 0; d < p.depth; d += p.kc) {
        std::size_t const kc = std::min(p.kc, p.depth - d);
        pack_block(p, k, x, d, kc, j0, count, panels);
        float const* a_block = ops.a_packed + (g * p.depth + d) * p.og_padded;
        bool const accumulate = d > 0 || prefill;
        // Row blocks of mc keep their A panels in L2 while every B micro-panel passes them.
        for (std::size_t ic = 0; ic < p.og; ic += p.mc) {
            std::size_t const rows_end = std::min(p.og, ic + p.mc);
            for (std::size_t jr = 0; jr < count; jr += p.nr) {
                for (std::size_t ir = ic; ir < rows_end; ir += p.mr)
                    k.gemm_micro(kc, a_block + ir * kc, panels + jr * kc, c + ir * ldc + jr, ldc,
                                 std::min(p.mr, p.og - ir), std::min(p.nr, count - jr), accumulate);
            }
        }
    }
    if (!direct) {
        std::size_t const element = 2;
        for (std::size_t o = 0; o < p.og; ++o)
            k.narrow(ops.out_type, c + o * count, ops.out + ((first_row + o) * p.pixels + j0) * element, count);
    }
}

// One depthwise task: output rows [y0, y1) of every output channel of image n, group g.
void run_depthwise(Plan const& p, KernelTable const& k, Operands const& ops, std::size_t n, std::size_t g,
                   std::size_t y0, std::size_t y1) {
    op::Conv2dShape const& s = p.s;
    std::size_t const first = n * s.o + g * p.og, rows = y1 - y0;
    bool const direct = ops.out_type == DType::f32;
    std::size_t const scratch_rows = (rows - 1) * s.stride_h + (s.kh - 1) * s.dilation_h + 1;
    DepthwiseArgs a;
    a.g = p.geometry;
    a.x = ops.x + (n * s.c + g) * s.h * s.w;
    a.weights = ops.weights + g * p.og * p.depth;
    a.bias = ops.bias ? ops.bias + g * p.og : nullptr;
    a.outputs = p.og;
    a.out = direct ? reinterpret_cast<float*>(ops.out) + first * p.pixels + y0 * s.ow
                   : tile_scratch.get(p.og * rows * s.ow);
    a.out_plane = direct ? p.pixels : rows * s.ow;
    a.y0 = y0;
    a.y1 = y1;
    a.phase_len = p.phase_len;
    a.scratch = panel_scratch.get(scratch_rows * s.stride_w * p.phase_len);
    k.conv_depthwise(a);
    if (!direct) {
        std::size_t const element = 2;
        for (std::size_t o = 0; o < p.og; ++o)
            k.narrow(ops.out_type, a.out + o * a.out_plane, ops.out + ((first + o) * p.pixels + y0 * s.ow) * element,
                     rows * s.ow);
    }
}

// A 16-bit operand of `count` values widened to f32 (f32 ones are read in place).
float const* as_f32(KernelTable const& k, TensorView const& v, std::size_t count, ScratchBuffer& storage) {
    if (v.dtype == DType::f32) return data<float const>(v);
    float* const values = storage.get(count);
    if (count) k.widen(v.dtype, data<std::byte const>(v), values, count);
    return values;
}

}  // namespace

Support supports(KernelRunner const&, op::Conv2d const&, OpViews const& v) {
    if (!detail::all_contiguous(v)) return Support::no("cpu: conv2d takes contiguous operands");
    if (v.out[0].dtype != v.in[0].dtype) return Support::no("cpu: conv2d writes its inputs' element type");
    return Support::yes();
}

void run(KernelRunner& r, op::Conv2d const& d, OpViews const& v) {
    KernelTable const& k = r.kernels();
    ThreadPool& pool = r.pool();
    Plan const p = make_plan(d.shape, k, pool.size());
    Operands ops;
    ops.x = as_f32(k, v.in[0], d.shape.n * d.shape.c * d.shape.h * d.shape.w, input_scratch);
    ops.weights = weight_matrix(p, k, v.in[1]);
    if (!p.depthwise) ops.a_packed = pack_weights(p, k, ops.weights);
    if (d.has_bias) ops.bias = as_f32(k, v.in[2], d.shape.o, bias_scratch);
    ops.out = data<std::byte>(v.out[0]);
    ops.out_type = v.out[0].dtype;

    std::size_t const tasks = d.shape.n * d.shape.groups * p.chunks;
    auto const task = [&](std::size_t t) {
        std::size_t const chunk = t % p.chunks, image_group = t / p.chunks;
        std::size_t const n = image_group / d.shape.groups, g = image_group % d.shape.groups;
        if (p.depthwise) {
            std::size_t const y0 = chunk * p.chunk;
            run_depthwise(p, k, ops, n, g, y0, std::min(d.shape.oh, y0 + p.chunk));
            return;
        }
        std::size_t const j0 = chunk * p.chunk;
        run_tile(p, k, ops, n, g, j0, std::min(p.chunk, p.pixels - j0));
    };
    double const flops = 2.0 * static_cast<double>(d.shape.n * d.shape.o * p.pixels) * static_cast<double>(p.depth + 1);
    std::size_t const parts = std::min({pool.size(), tasks, static_cast<std::size_t>(flops / (1 << 20)) + 1});
    if (parts <= 1) {
        for (std::size_t t = 0; t < tasks; ++t) task(t);
        return;
    }
    // Tasks are claimed, so a thread that wakes late takes fewer.
    std::atomic<std::size_t> next{0};
    pool.run_parts(parts, [&](std::size_t, std::size_t) {
        for (std::size_t t = next.fetch_add(1); t < tasks; t = next.fetch_add(1)) task(t);
    });
}

}  // namespace rayo::cpu::ops
