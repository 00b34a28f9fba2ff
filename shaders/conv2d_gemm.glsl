// What the implicit-GEMM conv2d shaders share (conv2d_coopmat.comp, conv2d_coopmat_m64.comp,
// conv2d_gemm_tiled.comp): f16 / bf16 tensors (ELEMENT, constant 7) through 16-bit storage, one
// group's convolution as the product out[o, p] = Σ_k w[o, k] · image[k, p] with rows o the group's
// output channels, columns p the output pixels (n, y, x) and depth k = (c, i, j). A workgroup
// computes a TILE_M x TILE_N tile of it (both defined by the including shader) in steps of TILE_K
// along k: the weight tile is copied as stored (rows of k), the image tile gathered per step, each
// thread two adjacent pixels for ROWS consecutive k, through a table of the taps' offsets in an
// image (zeros outside the image and past k). Both tiles are staged in shared memory as 16-bit
// elements, double-buffered; the including shader multiplies them and stores through
// store_output(), which adds the bias in f32 and rounds to the element type.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_control_flow_attributes : require

#define RAYO_ELEMENT16 1
#include "op_codes.glsl"
#include "element16.glsl"

const uint TILE_K = 32u;
const uint THREADS = 128u;
layout(local_size_x = 128) in;
const uint MAX_TAPS = 32u;  // a pixel's inside taps are the bits of a word

layout(constant_id = 2) const bool FLIP = false;
layout(constant_id = 3) const bool BIAS = false;
// 16-byte weight loads: the weights' offset and k are multiples of 8 elements.
layout(constant_id = 5) const bool VEC8 = false;

layout(std430, set = 0, binding = 0) readonly buffer Input { uint16_t xs[]; };
layout(std430, set = 0, binding = 1) readonly buffer Weights { uint16_t ws[]; };
layout(std430, set = 0, binding = 1) readonly buffer Weights8 { uvec4 ws8[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { uint16_t bs[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Output { uint16_t ys[]; };

// Mirrors Conv2dGemmPush (src/vulkan/ops/convolution.cpp); offsets in elements.
layout(push_constant) uniform Params {
    uint c, h, w, o, kh, kw, oh, ow;
    uint stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    uint cg, og;      // channels of a group, in and out
    uint k;           // cg·kh·kw
    uint pixels;      // n·oh·ow
    uint row_tiles;   // tiles of TILE_M over og
    uint x_offset, w_offset, b_offset, y_offset;
} p;

const uint A_STRIDE = TILE_K + 8u;  // halves: the weight tile row-major [TILE_M][A_STRIDE]
const uint B_STRIDE = TILE_N + 8u;  // halves: the image tile row-major [TILE_K][B_STRIDE]
const uint A_TILE = TILE_M * A_STRIDE / 8u;  // uvec4s
const uint B_TILE = TILE_K * B_STRIDE / 8u;
const uint RUNS_A = TILE_K / 8u;                       // 8-element runs of a weight row per step
const uint LOADS_A = TILE_M * TILE_K / 8u / THREADS;   // runs per invocation
const uint PAIRS = TILE_N / 2u;                        // pixel pairs of a tile
const uint ROWS = TILE_K / (THREADS / PAIRS);          // k rows an invocation gathers per step

shared uvec4 tile_a[2][A_TILE];
shared uvec4 tile_b[2][B_TILE];
shared uvec2 tap_table[MAX_TAPS];  // per tap in the weights' order: offset in an image, bit

// The workgroup's place: its group, and its tile of output channels (rows) and pixels (columns);
// the channel tiles of one pixel tile are adjacent, so workgroups running together gather the same
// pixels.
struct Frame {
    uint group, row0, col0;
    uint taps, plane, out_plane;
};

Frame frame() {
    Frame f;
    f.group = gl_WorkGroupID.y;
    uint tile_n = gl_WorkGroupID.x / p.row_tiles;
    f.row0 = (gl_WorkGroupID.x - tile_n * p.row_tiles) * TILE_M;
    f.col0 = tile_n * TILE_N;
    f.taps = p.kh * p.kw;
    f.plane = p.h * p.w;
    f.out_plane = p.oh * p.ow;
    return f;
}

// The tap table: tap t of a weight row (turned half round for a true convolution) = (i, j), its
// offset i·dilation_h·w + j·dilation_w in an image plane and its bit in a pixel's mask. Followed by
// a barrier before use.
void build_tap_table(Frame f, uint t) {
    if (t >= f.taps) return;
    uint tap = FLIP ? f.taps - 1u - t : t;
    uint i = tap / p.kw, j = tap - i * p.kw;
    tap_table[t] = uvec2(i * p.dilation_h * p.w + j * p.dilation_w, 1u << tap);
}

// One output pixel an invocation gathers for: where its window starts in the input (an element
// index that wraps below 0; only taps inside the image are read) and which taps fall inside.
struct Pixel {
    uint start, inside;
};

Pixel locate_pixel(Frame f, uint col) {
    Pixel px = Pixel(0u, 0u);
    if (col >= p.pixels) return px;
    uint image = col / f.out_plane, rest = col - image * f.out_plane;
    uint oy = rest / p.ow, ox = rest - oy * p.ow;
    int y0 = int(oy * p.stride_h) - int(p.pad_h), x0 = int(ox * p.stride_w) - int(p.pad_w);
    uint channel0 = image * p.c + f.group * p.cg;
    px.start = p.x_offset + channel0 * f.plane + uint(y0 * int(p.w) + x0);
    uint bit = 1u;
    for (uint i = 0u; i < p.kh; ++i) {
        int y = y0 + int(i * p.dilation_h);
        for (uint j = 0u; j < p.kw; ++j, bit <<= 1) {
            int x = x0 + int(j * p.dilation_w);
            if (y >= 0 && y < int(p.h) && x >= 0 && x < int(p.w)) px.inside |= bit;
        }
    }
    return px;
}

// The invocation's share of the image tile: pixels 2·pair and 2·pair + 1, k rows
// first_row .. first_row + ROWS - 1.
struct Gather {
    Pixel a, b;
    uint pair, first_row;
};

Gather gather_of(Frame f, uint t) {
    Gather g;
    g.pair = t % PAIRS;
    g.first_row = (t / PAIRS) * ROWS;
    g.a = locate_pixel(f, f.col0 + 2u * g.pair);
    g.b = locate_pixel(f, f.col0 + 2u * g.pair + 1u);
    return g;
}

// The two pixels' values at each of the invocation's k rows of the step at k0, packed (the first
// pixel in the low half); zero outside the image and past k.
void gather_step(Frame f, Gather g, uint k0, out uint values[ROWS]) {
    uint k = k0 + g.first_row;
    uint channel = k / f.taps, tap = k - channel * f.taps;
    uint channel_at = channel * f.plane;
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        uint lo = 0u, hi = 0u;
        if (k + r < p.k) {
            uvec2 e = tap_table[tap];
            uint at = channel_at + e.x;
            if ((g.a.inside & e.y) != 0u) lo = uint(xs[g.a.start + at]);
            if ((g.b.inside & e.y) != 0u) hi = uint(xs[g.b.start + at]);
        }
        values[r] = lo | (hi << 16);
        if (++tap == f.taps) {
            tap = 0u;
            channel_at += f.plane;
        }
    }
}

void store_gathered(uint buf, Gather g, uint values[ROWS]) {
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        uint word = (g.first_row + r) * (B_STRIDE / 2u) + g.pair;
        tile_b[buf][word / 4u][word % 4u] = values[r];
    }
}

// 8 weights of the group's row `row` from k = col (zeros past og and k).
uvec4 load_weights8(Frame f, uint row, uint col) {
    if (row >= p.og || col >= p.k) return uvec4(0u);
    uint e = p.w_offset + (f.group * p.og + row) * p.k + col;
    if (VEC8) return ws8[e / 8u];
    uint h[8];
    [[unroll]] for (uint i = 0u; i < 8u; ++i) h[i] = col + i < p.k ? uint(ws[e + i]) : 0u;
    return uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}

void load_weights_step(Frame f, uint t, uint k0, out uvec4 runs[LOADS_A]) {
    [[unroll]] for (uint s = 0u; s < LOADS_A; ++s) {
        uint idx = t + THREADS * s;
        runs[s] = load_weights8(f, f.row0 + idx / RUNS_A, k0 + (idx % RUNS_A) * 8u);
    }
}

void store_weights(uint buf, uint t, uvec4 runs[LOADS_A]) {
    [[unroll]] for (uint s = 0u; s < LOADS_A; ++s) {
        uint idx = t + THREADS * s;
        tile_a[buf][(idx / RUNS_A) * (A_STRIDE / 8u) + idx % RUNS_A] = runs[s];
    }
}

// Where column (pixel) col of the group's product lies in out at the group's first channel, or
// ~0u past the last pixel.
const uint NO_COLUMN = 0xffffffffu;

uint column_at(Frame f, uint col) {
    if (col >= p.pixels) return NO_COLUMN;
    uint image = col / f.out_plane;
    return p.y_offset + (image * p.o + f.group * p.og) * f.out_plane + (col - image * f.out_plane);
}

// The bias of row (channel of the group) `row`, or 0.
float bias_of(Frame f, uint row) {
    return BIAS && row < p.og ? element_to_float(uint(bs[p.b_offset + f.group * p.og + row])) : 0.0;
}

// out at row (channel of the group) and a column's place: value + bias, rounded to the element.
void store_output(Frame f, uint column, uint row, float value) {
    if (column == NO_COLUMN || row >= p.og) return;
    ys[column + row * f.out_plane] = uint16_t(float_to_element(value + bias_of(f, row)));
}
