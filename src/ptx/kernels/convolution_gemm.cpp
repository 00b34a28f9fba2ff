// The implicit-GEMM conv2d on the tensor cores (rayo/ptx/kernels/convolution.hpp), composed of the
// tensor-core GEMM's stages (tensor_core_stages.hpp): the weights are its a operand, copied as the
// GEMM copies a; the image operand b ([k, p], tile rows k, chunks along the pixels) is gathered by
// the loader below; the warps' MMAs and the cp.async pipeline are the GEMM's own.
//
// Stages of a block: the frame (group, channel and pixel tile), the k table (per k of the group:
// the element offset of its channel and tap in an image, and the bit of its tap), the pixels (per
// thread two adjacent output pixels: where their window starts in x and which taps fall inside
// the image), the pipeline, and the epilogue (NCHW stores, bias added in f32).
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ptx/kernels/convolution_params.hpp"
#include "ptx/kernels/element_access.hpp"
#include "ptx/kernels/gemm_addressing.hpp"
#include "ptx/kernels/tensor_core_stages.hpp"
#include "rayo/ptx/kernels/convolution.hpp"
#include "rayo/ptx/kernels/gemm.hpp"

namespace rayo::ptx::kernels {

namespace {

using conv_detail::Conv2dParams;
using gemm_detail::Swizzle;
using gemm_detail::TensorCoreBlock;

constexpr unsigned tile_k = 32;
constexpr unsigned table_entry_bytes = 8;  // .v2.u32: offset in an image, tap bit

[[noreturn]] void reject(std::string const& why) { throw BuildError("conv2d_gemm: " + why); }

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// The tensor-core GEMM configuration whose block layout and warp tiles the kernel uses.
// 128-channel tiles take 8 warps (warp tiles of 32 × 64, as 64-channel tiles with 4), which keeps
// the accumulators and the gathered values in flight well under the register file's share.
unsigned warps_of(Conv2dGemmConfig const& c) { return c.tile_m == 128 ? 8 : 4; }

GemmConfig gemm_config(Conv2dGemmConfig const& c) {
    Type const t = element_detail::mma_type(c.element);
    return gemm_resolved({.a = t,
                          .b = t,
                          .b_transposed = false,
                          .algorithm = GemmAlgorithm::tensor_core,
                          .tile = {c.tile_m, c.tile_n, tile_k},
                          .warps = warps_of(c),
                          .stages = c.stages});
}

std::uint32_t stage_bytes(Conv2dGemmConfig const& c) { return (c.tile_m + c.tile_n) * tile_k * 2; }

// The block's place: its group (grid.y), and its tile of output channels and pixels (grid.x, the
// channel tiles of one pixel tile adjacent, so blocks running together gather the same pixels).
struct Frame {
    Reg group, row0, col0;
    Reg k;          // cg·kh·kw: products per output
    Reg taps;       // kh·kw
    Reg plane;      // h·w
    Reg pixels;     // n·oh·ow
    Reg out_plane;  // oh·ow
};

Frame frame(Kernel& k, Conv2dParams const& p, Conv2dGemmConfig const& c) {
    Frame f;
    k.comment("frame: group, channel tile, pixel tile");
    f.taps = k.mul(p.kh, p.kw);
    f.k = k.mul(p.cg, f.taps);
    f.plane = k.mul(p.h, p.w_in);
    f.out_plane = k.mul(p.oh, p.ow);
    f.pixels = k.mul(p.count, f.out_plane);
    f.group = k.special(Special::ctaid_y);
    Reg const tiles_m = k.add(k.div(k.sub(p.og, 1), c.tile_m), 1);  // og >= 1 when launched
    Reg const id = k.special(Special::ctaid_x);
    Reg const tile_n = k.div(id, tiles_m);
    f.row0 = k.mul(k.sub(id, k.mul(tile_n, tiles_m)), c.tile_m);
    f.col0 = k.mul(tile_n, c.tile_n);
    return f;
}

// Builds the k table in shared memory at `table`: for k < cg·kh·kw, k = (c, t) with t the tap
// (turned half round for a true convolution) = (i, j): {c·h·w + i·dilation_h·w + j·dilation_w,
// 1 << t}; for k up to the last k step's end, {0, 0} (no pixel has that tap: reads give 0).
void build_table(Kernel& k, Conv2dParams const& p, Frame const& f, Conv2dGemmConfig const& c, Reg table, Reg tid,
                 unsigned threads) {
    k.comment("k table: per k, its offset in an image and its tap's bit");
    Reg const padded = k.mul(k.add(k.div(k.sub(f.k, 1), tile_k), 1), tile_k);
    Reg const kk = k.reg(Type::u32);
    Reg const row_step = k.mul(p.dilation_h, p.w_in);
    k.for_range(kk, tid, padded, threads, [&] {
        Reg const offset = k.mov(Type::u32, 0), bit = k.mov(Type::u32, 0);
        k.if_then(k.setp(Cmp::lt, kk, f.k), [&] {
            Reg const channel = k.div(kk, f.taps);
            Reg tap = k.sub(kk, k.mul(channel, f.taps));
            if (c.flip) tap = k.sub(k.sub(f.taps, 1), tap);
            Reg const i = k.div(tap, p.kw);
            Reg const j = k.sub(tap, k.mul(i, p.kw));
            k.mov(offset, k.add(k.add(k.mul(channel, f.plane), k.mul(i, row_step)), k.mul(j, p.dilation_w)));
            k.mov(bit, k.shl(k.mov(Type::u32, 1), tap));
        });
        std::vector<Reg> const entry{offset, bit};
        k.st_vector(Space::shared, Type::u32, Address(k.add(table, k.mul(kk, table_entry_bytes))), entry);
    });
}

// One output pixel a thread gathers for: where its window starts in x (an element index that wraps
// below 0 as .u32; only taps inside the image are read) and which taps fall inside the image.
struct Pixel {
    Reg start, taps;
};

Pixel locate_pixel(Kernel& k, Conv2dParams const& p, Frame const& f, Reg pixel) {
    Pixel px;
    px.start = k.mov(Type::u32, 0);
    px.taps = k.mov(Type::u32, 0);
    k.if_then(k.setp(Cmp::lt, pixel, f.pixels), [&] {
        Reg const image = k.div(pixel, f.out_plane);
        Reg const rest = k.sub(pixel, k.mul(image, f.out_plane));
        Reg const oy = k.div(rest, p.ow);
        Reg const ox = k.sub(rest, k.mul(oy, p.ow));
        Reg const y0 = k.sub(k.mul(oy, p.stride_h), p.pad_h);
        Reg const x0 = k.sub(k.mul(ox, p.stride_w), p.pad_w);
        Reg const channel0 = k.add(k.mul(image, p.c), k.mul(f.group, p.cg));
        k.mov(px.start, k.add(k.mul(channel0, f.plane), k.add(k.mul(y0, p.w_in), x0)));
        Reg const i = k.reg(Type::u32), j = k.reg(Type::u32);
        Reg const bit = k.mov(Type::u32, 1);
        k.for_range(i, 0u, p.kh, 1u, [&] {
            Reg const y_ok = k.setp(Cmp::lt, k.add(y0, k.mul(i, p.dilation_h)), p.h);
            k.for_range(j, 0u, p.kw, 1u, [&] {
                Reg const x_ok = k.setp(Cmp::lt, k.add(x0, k.mul(j, p.dilation_w)), p.w_in);
                Reg const inside = k.and_pred(y_ok, x_ok);
                k.mov(px.taps, k.or_(px.taps, k.selp(bit, 0u, inside, Type::u32)));
                k.mov(bit, k.shl(bit, 1u));
            });
        });
    });
    return px;
}

// The image operand's tile per k step: thread (row, pair) gathers pixels 2·pair and 2·pair + 1 of
// the tile for k rows row, row + row_step, ...; a warp's loads run along 64 adjacent pixels. The
// values wait in registers across the MMAs and go into shared memory as one 4-byte word per pair.
class ImageGather {
public:
    ImageGather(Kernel& k, Conv2dParams const& p, Frame const& f, TensorCoreBlock const& block, Reg table)
        : k_(&k), x_(p.x), stage_bytes_(block.stage_bytes) {
        unsigned const pairs = block.tile_n / 2;
        row_step_ = block.threads / pairs;
        rows_ = block.tile_k / row_step_;
        row_bytes_ = block.tile_n * 2;
        k.comment("image gather: two pixels per thread, " + std::to_string(rows_) + " k rows per step");
        Reg const pair = k.rem(block.tid, pairs), row = k.div(block.tid, pairs);
        for (unsigned e = 0; e < 2; ++e)
            pixels_.push_back(locate_pixel(k, p, f, k.add(f.col0, k.add(k.shl(pair, 1), e))));
        // The swizzle pattern repeats every 8 rows: one shared address per row in a period.
        Swizzle const swizzle(block.tile_n / 8);
        period_ = row_step_ >= 8 ? 1 : 8 / row_step_;
        Reg const chunk = k.shr(pair, 2), word = k.shl(k.and_(pair, 3), 2);
        Reg const region = k.add(block.smem, block.a_bytes);
        for (unsigned r = 0; r < period_ && r < rows_; ++r) {
            Reg const at = swizzle.offset(k, k.add(row, r * row_step_), chunk);
            shared_.push_back(k.add(k.add(at, word), region));
        }
        table_at_ = k.add(table, k.mul(row, table_entry_bytes));
        for (unsigned r = 0; r < rows_; ++r) values_.push_back({k.reg(Type::u32), k.reg(Type::u32)});
    }

    void issue(unsigned, Reg) {
        Kernel& k = *k_;
        for (unsigned r = 0; r < rows_; ++r) {
            std::vector<Reg> const entry =
                k.ld_vector(Space::shared, Type::u32, 2, Address(table_at_, r * row_step_ * table_entry_bytes));
            for (unsigned e = 0; e < 2; ++e) {
                Reg const value = values_[r][e];
                Reg const inside = k.setp(Cmp::ne, k.and_(pixels_[e].taps, entry[1]), 0u);
                Reg const address = k.element_address(x_, k.add(pixels_[e].start, entry[0]), 2);
                k.mov(value, 0u);
                k.predicated(inside, true, [&] { k.ld(value, Space::global, Type::u16, Address(address), Cache::nc); });
            }
        }
    }

    void store_staged(unsigned slot) {
        Kernel& k = *k_;
        for (unsigned r = 0; r < rows_; ++r) {
            unsigned const offset = slot * stage_bytes_ + (r / period_) * period_ * row_step_ * row_bytes_;
            Reg const word = k.prmt(values_[r][0], values_[r][1], 0x5410);  // low halves of two words
            k.st(Space::shared, Type::b32, Address(shared_[r % period_], offset), word);
        }
    }

    void advance() { k_->add(table_at_, table_at_, tile_k * table_entry_bytes); }

private:
    Kernel* k_;
    Reg x_;
    unsigned stage_bytes_ = 0, row_step_ = 0, rows_ = 0, row_bytes_ = 0, period_ = 1;
    std::vector<Pixel> pixels_;
    std::vector<Reg> shared_;  // per row of a swizzle period: the pair's shared address in slot 0
    Reg table_at_;             // shared address of the thread's first row's entry in this k step
    std::vector<std::array<Reg, 2>> values_;
};

// The accumulators (+ bias) rounded to the element type and stored into out[n, o, y, x]: row o of
// the group's tile, column pixel p = (n, y·ow + x).
void store_outputs(Kernel& k, Conv2dParams const& p, Frame const& f, TensorCoreBlock const& block,
                   gemm_detail::WarpMma const& mma, Conv2dGemmConfig const& c) {
    using namespace element_detail;
    k.comment("epilogue: NCHW stores");
    Reg const lane = block.lane;
    Reg const row_t = k.add(f.row0, k.add(k.mul(block.warp_row, mma.warp_m), k.shr(lane, 2)));
    Reg const col_t = k.add(f.col0, k.add(k.mul(block.warp_col, mma.warp_n), k.shl(k.and_(lane, 3), 1)));
    Reg const image_stride = k.mul(p.o, f.out_plane);
    Reg const first_channel = k.mul(f.group, p.og);
    // Per column (per pair of columns with paired stores): its element index in out at channel 0,
    // and whether it is a pixel.
    unsigned const per_tile = c.paired_stores ? 1 : 2;
    std::vector<Reg> column_at, column_ok;
    for (unsigned nt = 0; nt < mma.n_tiles; ++nt)
        for (unsigned e = 0; e < per_tile; ++e) {
            Reg const pixel = k.add(col_t, nt * 8 + e);
            Reg const image = k.div(pixel, f.out_plane);
            column_at.push_back(k.add(k.mul(image, image_stride), k.sub(pixel, k.mul(image, f.out_plane))));
            column_ok.push_back(k.setp(Cmp::lt, pixel, f.pixels));
        }
    for (unsigned mt = 0; mt < mma.m_tiles; ++mt)
        for (unsigned h = 0; h < 2; ++h) {
            Reg const row = k.add(row_t, mt * 16 + h * 8);
            Reg const row_ok = k.setp(Cmp::lt, row, p.og);
            Reg const channel = k.add(first_channel, row);
            Reg const row_at = k.mul(channel, f.out_plane);
            Reg bias;
            if (c.bias) {
                Reg const raw = k.mov(Type::b16, 0);
                k.predicated(row_ok, true, [&] {
                    k.ld(raw, Space::global, Type::b16, Address(k.element_address(p.bias, channel, 2)));
                });
                bias = widen(k, c.element, raw);
            }
            for (unsigned nt = 0; nt < mma.n_tiles; ++nt) {
                Reg const* fragment = mma.acc.data() + (mt * mma.n_tiles + nt) * 4 + h * 2;
                std::array<Reg, 2> raw{};
                for (unsigned e = 0; e < 2; ++e)
                    raw[e] = narrow(k, c.element, c.bias ? k.add(fragment[e], bias) : fragment[e]);
                if (c.paired_stores) {
                    Reg const ok = k.and_pred(row_ok, column_ok[nt]);
                    Reg const address = k.element_address(p.out, k.add(column_at[nt], row_at), 2);
                    Reg const word = k.join(Type::b32, raw[0], raw[1]);
                    k.predicated(ok, true, [&] { k.st(Space::global, Type::b32, Address(address), word); });
                    continue;
                }
                for (unsigned e = 0; e < 2; ++e) {
                    Reg const ok = k.and_pred(row_ok, column_ok[nt * 2 + e]);
                    Reg const address = k.element_address(p.out, k.add(column_at[nt * 2 + e], row_at), 2);
                    k.predicated(ok, true, [&] { k.st(Space::global, Type::b16, Address(address), raw[e]); });
                }
            }
        }
}

}  // namespace

Conv2dGemmConfig conv2d_gemm_resolved(Conv2dGemmConfig const& config) {
    Conv2dGemmConfig const& c = config;
    if (c.element != DType::f16 && c.element != DType::bf16)
        reject("elements must be f16 or bf16 (the tensor cores' inputs), not " + std::string(to_string(c.element)));
    if ((c.tile_m != 64 && c.tile_m != 128) || (c.tile_n != 64 && c.tile_n != 128))
        reject("tiles are 64 or 128 channels by 64 or 128 pixels, got " + std::to_string(c.tile_m) + "x" +
               std::to_string(c.tile_n));
    if (c.stages < 2 || c.stages > 4) reject("pipelines are 2 to 4 stages deep, got " + std::to_string(c.stages));
    (void)gemm_config(c);  // the GEMM's own checks of the block layout
    return c;
}

std::string conv2d_gemm_name(Conv2dGemmConfig const& config) {
    Conv2dGemmConfig const c = conv2d_gemm_resolved(config);
    return "rayo_conv2d_gemm_" + std::string(to_string(c.element)) + "_" + std::to_string(c.tile_m) + "x" +
           std::to_string(c.tile_n) + "_s" + std::to_string(c.stages) + (c.aligned ? "" : "_e") +
           (c.paired_stores ? "_pairs" : "") + (c.flip ? "_flip" : "") + (c.bias ? "_bias" : "");
}

Conv2dGemmLaunch conv2d_gemm_launch(Conv2dGemmConfig const& config, std::uint64_t pixels, std::uint64_t og,
                                    std::uint64_t k, std::uint64_t groups) {
    Conv2dGemmConfig const c = conv2d_gemm_resolved(config);
    std::uint64_t const blocks = ceil_div(og, c.tile_m) * ceil_div(pixels, c.tile_n);
    if (blocks > 0x7fffffffu || groups > 0xffffu)
        reject(std::to_string(groups) + " groups of " + std::to_string(blocks) + " blocks do not fit a grid");
    std::uint64_t const table = ceil_div(k, tile_k) * tile_k * table_entry_bytes;
    return {static_cast<std::uint32_t>(blocks), static_cast<std::uint32_t>(groups), warps_of(c) * 32,
            static_cast<std::uint32_t>(c.stages * stage_bytes(c) + table)};
}

std::vector<Conv2dGemmConfig> conv2d_gemm_configs() {
    std::vector<Conv2dGemmConfig> configs;
    for (DType element : {DType::f16, DType::bf16})
        for (unsigned tile_m : {64u, 128u})
            for (bool aligned : {true, false})
                for (bool pairs : {true, false})
                    for (bool flip : {false, true})
                        for (bool bias : {false, true})
                            configs.push_back({.element = element,
                                               .flip = flip,
                                               .bias = bias,
                                               .aligned = aligned,
                                               .paired_stores = pairs,
                                               .tile_m = tile_m});
    return configs;
}

Kernel conv2d_gemm(Conv2dGemmConfig const& config) {
    Conv2dGemmConfig const c = conv2d_gemm_resolved(config);
    GemmConfig const g = gemm_config(c);
    Kernel k(conv2d_gemm_name(c));
    k.max_threads(warps_of(c) * 32);
    Conv2dParams const p = conv_detail::declare_params(k, "n");
    Frame const f = frame(k, p, c);
    TensorCoreBlock const block = TensorCoreBlock::of(k, g);
    Reg const table = k.add(block.smem, c.stages * block.stage_bytes);
    build_table(k, p, f, c, table, block.tid, block.threads);

    Swizzle const a_swizzle(tile_k / 8), b_swizzle(c.tile_n / 8);
    Reg const weights = k.add(p.w, k.shl(k.mul_wide(k.mul(f.group, p.og), f.k), 1));
    std::vector<gemm_detail::TileLoader> loaders;
    loaders.push_back(gemm_detail::k_contiguous_loader(k, block,
                                                       {.tensor = weights,
                                                        .type = g.a,
                                                        .origin = f.row0,
                                                        .extent = p.og,
                                                        .k = f.k,
                                                        .check_rows = true,
                                                        .check_k = true,
                                                        .aligned = c.aligned,
                                                        .rows = c.tile_m,
                                                        .region = 0},
                                                       a_swizzle));
    gemm_detail::TileCopies copies(k, block, std::move(loaders));
    ImageGather gather(k, p, f, block, table);
    gemm_detail::WarpMma mma(k, block, true, a_swizzle, b_swizzle);
    k.bar_sync();  // the k table is written

    detail::GemmFrame pipeline_frame;
    pipeline_frame.k = f.k;
    pipeline_frame.check_k = true;
    detail::GemmPipeline steps{.issue =
                                   [&](unsigned slot, Reg k_left) {
                                       copies.issue(slot, k_left);
                                       gather.issue(slot, k_left);
                                   },
                               .store_staged =
                                   [&](unsigned slot) {
                                       copies.store_staged(slot);
                                       gather.store_staged(slot);
                                   },
                               .multiply = [&](unsigned slot) { mma.multiply(slot); },
                               .advance =
                                   [&] {
                                       copies.advance();
                                       gather.advance();
                                   }};
    steps.cp_async = copies.any_cp_async();
    detail::gemm_pipeline(k, pipeline_frame, tile_k, c.stages, steps);
    store_outputs(k, p, f, block, mma, c);
    return k;
}

}  // namespace rayo::ptx::kernels
