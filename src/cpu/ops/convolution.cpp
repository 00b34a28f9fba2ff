// conv2d on the CPU as an implicit GEMM per image and group: C[o, pixel] = W[o, k] · X̂[k, pixel]
// with k = (channel, kernel row, kernel column). The weights are packed once into the GEMM's A
// panels; the im2col matrix X̂ is never stored whole: each thread packs a depth block of it for
// its own pixel range straight into the micro-kernel's B panel layout (an L2-sized tile), then
// runs the ISA's GEMM micro-kernel over it.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "cpu/gemm_driver.hpp"
#include "cpu/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"

namespace rayo::cpu::ops {

namespace {

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }
std::size_t round_up(std::size_t a, std::size_t b) { return ceil_div(a, b) * b; }
std::size_t round_down(std::size_t a, std::size_t b) { return a / b * b; }

// 64-byte aligned f32 scratch of one thread that grows on demand.
class Scratch {
public:
    Scratch() = default;
    Scratch(Scratch const&) = delete;
    Scratch& operator=(Scratch const&) = delete;
    ~Scratch() { std::free(data_); }
    float* get(std::size_t floats) {
        std::size_t const bytes = round_up((floats + 64) * sizeof(float), 4096);
        if (bytes > capacity_) {
            std::free(data_);
            data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
            capacity_ = data_ ? bytes : 0;
            if (!data_) throw std::bad_alloc();
        }
        return data_;
    }

private:
    float* data_ = nullptr;
    std::size_t capacity_ = 0;
};

thread_local Scratch panel_scratch;
thread_local Scratch tile_scratch;

// The implicit GEMM's sizes and blocking.
struct Plan {
    op::Conv2dShape s;
    std::size_t cg = 0, og = 0;       // channels in and out of a group
    std::size_t depth = 0;            // K = cg·kh·kw
    std::size_t pixels = 0;           // oh·ow
    std::size_t mr = 0, nr = 0;
    std::size_t kc = 0;               // depth of a packed block
    std::size_t mc = 0;               // output channels of a row block (a multiple of mr)
    std::size_t og_padded = 0;        // og rounded up to mr: the rows of a packed A block
    std::size_t chunk = 0;            // pixels of one task (a multiple of nr)
    std::size_t chunks = 0;           // tasks per image and group
};

Plan make_plan(op::Conv2dShape const& s, KernelTable const& k, std::size_t threads) {
    Plan p{.s = s};
    p.cg = s.c / s.groups;
    p.og = s.o / s.groups;
    p.depth = p.cg * s.kh * s.kw;
    p.pixels = s.oh * s.ow;
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
    std::size_t const cache_chunk = std::max(p.nr, round_down(budget / std::max({p.kc, p.og, std::size_t{1}}), p.nr));
    std::size_t chunks = ceil_div(p.pixels, cache_chunk);
    // Enough tasks for every thread twice over where the images and groups alone are too few.
    std::size_t const images = s.n * s.groups;
    if (images * chunks < 2 * threads) chunks = std::max(chunks, ceil_div(2 * threads, images));
    chunks = std::min(chunks, ceil_div(p.pixels, p.nr));
    p.chunk = round_up(ceil_div(p.pixels, chunks), p.nr);
    p.chunks = ceil_div(p.pixels, p.chunk);
    return p;
}

// The weights as an f32 matrix [o, depth], each kernel turned half round when the op convolves.
std::vector<float> weight_matrix(Plan const& p, KernelTable const& k, TensorView const& w) {
    std::size_t const count = p.s.o * p.depth, taps = p.s.kh * p.s.kw;
    std::vector<float> m(count);
    if (count == 0) return m;
    if (w.dtype == DType::f32) std::memcpy(m.data(), data<float const>(w), count * sizeof(float));
    else k.widen(w.dtype, data<std::byte const>(w), m.data(), count);
    if (p.s.flip)
        for (std::size_t row = 0; row < count; row += taps) std::reverse(m.begin() + row, m.begin() + row + taps);
    return m;
}

// Every group's A, packed: group g's depth block starting at d sits at g·og_padded·depth + og_padded·d.
std::vector<float> pack_weights(Plan const& p, KernelTable const& k, std::vector<float> const& w) {
    std::vector<float> packed(p.s.groups * p.og_padded * p.depth + 64);
    for (std::size_t g = 0; g < p.s.groups; ++g) {
        GemmArgs a;
        a.m = p.og;
        a.k = p.depth;
        a.a = w.data() + g * p.og * p.depth;
        a.a_row = p.depth;
        a.a_col = 1;
        for (std::size_t d = 0; d < p.depth; d += p.kc)
            k.gemm_pack_a(a, 0, p.og, d, std::min(p.kc, p.depth - d), packed.data() + (g * p.depth + d) * p.og_padded);
    }
    return packed;
}

// Depth [d0, d0 + kc) × pixels [j0, j0 + count) of one image-group's im2col matrix, packed as
// nr-pixel panels interleaved by depth (the micro-kernel's B layout), lanes past `count` zero.
// `x` is the group's first channel.
void pack_im2col(Plan const& p, float const* x, std::size_t d0, std::size_t kc, std::size_t j0, std::size_t count,
                 float* packed) {
    op::Conv2dShape const& s = p.s;
    std::size_t const nr = p.nr, plane = s.h * s.w, taps = s.kh * s.kw;
    std::ptrdiff_t row0[64], col0[64];  // nr <= 32
    for (std::size_t panel = 0; panel < count; panel += nr) {
        std::size_t const lanes = std::min(nr, count - panel);
        for (std::size_t l = 0; l < lanes; ++l) {
            std::size_t const pixel = j0 + panel + l;
            row0[l] = static_cast<std::ptrdiff_t>((pixel / s.ow) * s.stride_h) - static_cast<std::ptrdiff_t>(s.pad_h);
            col0[l] = static_cast<std::ptrdiff_t>((pixel % s.ow) * s.stride_w) - static_cast<std::ptrdiff_t>(s.pad_w);
        }
        // A full panel inside one output row at stride 1 reads nr consecutive input values.
        bool const one_run = lanes == nr && s.stride_w == 1 && row0[0] == row0[nr - 1];
        float* out = packed + panel * kc;
        for (std::size_t d = d0; d < d0 + kc; ++d, out += nr) {
            std::size_t const c = d / taps, i = d % taps / s.kw, j = d % s.kw;
            float const* channel = x + c * plane;
            std::ptrdiff_t const dy = static_cast<std::ptrdiff_t>(i * s.dilation_h);
            std::ptrdiff_t const dx = static_cast<std::ptrdiff_t>(j * s.dilation_w);
            if (one_run) {
                std::ptrdiff_t const y = row0[0] + dy, x0 = col0[0] + dx;
                if (y < 0 || y >= static_cast<std::ptrdiff_t>(s.h)) {
                    std::fill_n(out, nr, 0.0f);
                    continue;
                }
                if (x0 >= 0 && x0 + static_cast<std::ptrdiff_t>(nr) <= static_cast<std::ptrdiff_t>(s.w)) {
                    std::memcpy(out, channel + static_cast<std::size_t>(y) * s.w + static_cast<std::size_t>(x0),
                                nr * sizeof(float));
                    continue;
                }
            }
            for (std::size_t l = 0; l < nr; ++l) {
                std::ptrdiff_t const y = row0[l] + dy, xx = col0[l] + dx;
                bool const inside = l < lanes && y >= 0 && y < static_cast<std::ptrdiff_t>(s.h) && xx >= 0 &&
                                    xx < static_cast<std::ptrdiff_t>(s.w);
                out[l] = inside ? channel[static_cast<std::size_t>(y) * s.w + static_cast<std::size_t>(xx)] : 0.0f;
            }
        }
    }
}

// What one run shares with its tasks.
struct Operands {
    float const* x = nullptr;        // [n, c, h, w] as f32
    float const* a_packed = nullptr; // pack_weights
    float const* bias = nullptr;     // [o] as f32, or null
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
        for (std::size_t o = 0; o < p.og; ++o) std::fill_n(c + o * ldc, count, ops.bias ? ops.bias[g * p.og + o] : 0.0f);
    float* const panels = panel_scratch.get(p.kc * round_up(count, p.nr));
    float const* x = ops.x + (n * s.c + g * p.cg) * s.h * s.w;
    for (std::size_t d = 0; d < p.depth; d += p.kc) {
        std::size_t const kc = std::min(p.kc, p.depth - d);
        pack_im2col(p, x, d, kc, j0, count, panels);
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

// A 16-bit operand of `count` values widened to f32 (f32 ones are read in place).
float const* as_f32(KernelTable const& k, TensorView const& v, std::size_t count, std::vector<float>& storage) {
    if (v.dtype == DType::f32) return data<float const>(v);
    storage.resize(count);
    if (count) k.widen(v.dtype, data<std::byte const>(v), storage.data(), count);
    return storage.data();
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
    std::vector<float> x_storage, bias_storage;
    Operands ops;
    ops.x = as_f32(k, v.in[0], d.shape.n * d.shape.c * d.shape.h * d.shape.w, x_storage);
    std::vector<float> const a_packed = pack_weights(p, k, weight_matrix(p, k, v.in[1]));
    ops.a_packed = a_packed.data();
    if (d.has_bias) ops.bias = as_f32(k, v.in[2], d.shape.o, bias_storage);
    ops.out = data<std::byte>(v.out[0]);
    ops.out_type = v.out[0].dtype;

    std::size_t const tasks = d.shape.n * d.shape.groups * p.chunks;
    auto const task = [&](std::size_t t) {
        std::size_t const chunk = t % p.chunks, image_group = t / p.chunks;
        std::size_t const j0 = chunk * p.chunk;
        run_tile(p, k, ops, image_group / d.shape.groups, image_group % d.shape.groups, j0,
                 std::min(p.chunk, p.pixels - j0));
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
