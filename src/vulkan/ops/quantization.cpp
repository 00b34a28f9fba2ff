// The quantization family on Vulkan: dequantization of q4_k / q5_k / q6_k / q8_k / q8_0 / q4_0
// (bit-exact with the CPU) and quantization to q8_k (byte-exact); quantization to the weight types
// stays on the CPU. And linear(x, w) with block-quantized weights for a few rows of x: an f32 GEMV
// (quant_gemv_body.glsl) that reads x as stored and decodes each weight in registers once for all
// rows of x, so its cost is the weight bytes; for one row of x and q4_k
// weights, the spanning GEMV (quant_gemv_spanning.comp), which holds x in registers. The f32
// builds do not quantize x; the spanning GEMV's integer-dot-product build, on devices that
// accelerate 4x8-bit products, turns it into 24-bit integers per 16 values (f32's precision).
// rayo::kquant_activations() (q8_k_residual / q8_k) therefore changes none of them; that setting
// applies to the CPU and CUDA backends.
#include <algorithm>
#include <limits>
#include <string>

#include "dispatch/operand_checks.hpp"
#include "rayo/error.hpp"
#include "rayo/quant.hpp"
#include "vulkan/ops/ops.hpp"

namespace rayo::vulkan::ops {

namespace {

struct ConvertParams {    // quant_dequantize.comp, quant_q8_k.comp
    std::uint32_t count;  // values (dequantize) or blocks (quantize)
    std::uint32_t in_offset, out_offset;
};

struct GemvParams {  // quant_gemv_body.glsl, quant_gemv_spanning.comp
    std::uint32_t n, blocks, w_offset, row_bytes, x_offset, out_offset, bias_offset, has_bias;
};

// The spanning GEMV (quant_gemv_spanning.comp): one row of x, q4_k rows of at most this many blocks
// (a workgroup of 8 invocations a block), workgroups of consecutive rows sized so that the dispatch
// has about spanning_invocations invocations, in steps of spanning_batch rows. Fewer invocations
// leave memory idle; more give each workgroup fewer rows to spread the loading of x over. On rows
// of up to 16 blocks the integer-dot-product build runs half as many, so that its workgroups fit
// in one wave of a large GPU (the sweep: docs/backends/vulkan.md).
constexpr std::size_t spanning_max_blocks = 128;
constexpr std::size_t spanning_invocations = std::size_t{1} << 17;
constexpr std::size_t spanning_integer_short_rows_invocations = std::size_t{1} << 16;
constexpr std::size_t spanning_integer_short_rows_blocks = 16;
constexpr std::size_t spanning_batch = 2;  // the shader's BATCH

// The types quant_dequantize.comp decodes.
bool is_block_type(DType t) { return is_weight_block_type(t) || t == DType::q8_k; }

}  // namespace

Binding bind_blocks(ShaderRunner& r, TensorView const& view, std::size_t bytes, Access access, char const* what) {
    std::size_t const lead = view.offset % 4;
    TensorView words = view;
    words.offset -= lead;
    Binding b = r.bind(words, lead + bytes, access, what);
    b.size = (b.size + 3) / 4 * 4;
    b.offset += lead;
    b.bytes = bytes;
    return b;
}

Support supports(ShaderRunner const&, op::Quantize const&, OpViews const& v) {
    if (v.in[0].dtype != DType::f32 || !is_block_type(v.out[0].dtype))
        return Support::no("vulkan: quantize takes f32 values to blocks");
    if (v.out[0].dtype != DType::q8_k)
        return Support::no("vulkan: quantize to " + std::string(to_string(v.out[0].dtype)) +
                           " runs on the CPU (the reference's per-block search is sequential, and its bytes are the "
                           "contract); only q8_k has a shader");
    if (!detail::all_contiguous(v)) return Support::no("vulkan: quantize takes contiguous tensors");
    return Support::yes();
}

void run(ShaderRunner& r, op::Quantize const&, OpViews const& v) {
    TensorView const &in = v.in[0], &out = v.out[0];
    std::size_t const blocks = in.numel() / quant_block_values;
    if (blocks == 0) return;
    Binding const bi = r.bind(in, in.numel() * sizeof(float), Access::read, "quantize input");
    Binding const bo = r.bind(out, blocks * sizeof(q8_k), Access::write, "quantize output");
    ConvertParams const params{static_cast<std::uint32_t>(blocks), bi.element_offset(sizeof(float)),
                               bo.element_offset(sizeof(std::uint32_t))};
    r.dispatch(Shader::quant_q8_k, {}, {bi, bo}, params,
               {static_cast<std::uint32_t>(std::min<std::size_t>(blocks, r.max_groups()))});
}

Support supports(ShaderRunner const&, op::Dequantize const&, OpViews const& v) {
    if (!is_block_type(v.in[0].dtype) || v.out[0].dtype != DType::f32)
        return Support::no("vulkan: dequantize takes blocks to f32");
    if (!detail::all_contiguous(v)) return Support::no("vulkan: dequantize takes contiguous tensors");
    return Support::yes();
}

void run(ShaderRunner& r, op::Dequantize const&, OpViews const& v) {
    TensorView const &in = v.in[0], &out = v.out[0];
    if (in.numel() == 0) return;
    Binding const bi = bind_blocks(r, in, in.bytes(), Access::read, "dequantize input");
    Binding const bo = r.bind(out, out.numel() * sizeof(float), Access::write, "dequantize output");
    record_dequantize(r, bi, in.dtype, in.numel(), bo);
}

void record_dequantize(ShaderRunner& r, Binding const& in, DType type, std::size_t count, Binding const& out) {
    ConvertParams const params{static_cast<std::uint32_t>(count), static_cast<std::uint32_t>(in.offset),
                               out.element_offset(sizeof(float))};
    r.dispatch(Shader::quant_dequantize, {static_cast<std::uint32_t>(type)}, {in, out}, params,
               {static_cast<std::uint32_t>(std::min<std::size_t>((count + 255) / 256, r.max_groups()))});
}

void linear_kquant_gemv(ShaderRunner& r, op::MatmulShape shape, TensorView const& x, TensorView const& w,
                        TensorView const* bias, TensorView const& out) {
    // quant_gemv_body.glsl takes up to kquant_gemv_max_rows rows of x (its constant 2).
    if (shape.m == 0 || shape.m > kquant_gemv_max_rows)
        throw Error("vulkan linear: the K-quant GEMV takes 1 to " + std::to_string(kquant_gemv_max_rows) +
                    " rows of x, not " + std::to_string(shape.m));
    // Per weight row: K-quant blocks of 4 units of 64 weights, or q8_0 / q4_0 blocks of one unit of
    // 32 (quant_gemv_body.glsl).
    std::size_t const block_values = block_elements(w.dtype);
    std::size_t const blocks = shape.k / block_values;
    std::size_t const units = block_values == quant_block_values ? 4 * blocks : blocks;
    // Weight rows per workgroup: each x load serves them all; more rows of x need more registers
    // per weight row, so fewer (one row of x: 4 beat 2 and 1 on the H200's Q6_K GEMV,
    // docs/performance.md).
    std::uint32_t const rows_w = shape.m <= 8 ? 4 : 2;
    // One or two rows of x: sums of q·x per scale group (1 FMA per weight); more: each weight
    // value formed once and multiplied into every row (fewer registers).
    bool const fold = shape.m <= 2;
    std::size_t const groups = (shape.n + rows_w - 1) / rows_w;
    // Invocations per workgroup: 64 (2 NVIDIA warps), doubled while the dispatch has fewer than
    // 2^16 invocations in all (too few to keep a large GPU's memory busy) and each would still
    // have 2 units of its rows; n = 4096, k = 14336 gives 1024 workgroups of 64, 3.5 units each.
    auto const& limits = r.limits();
    std::size_t const max_workgroup =
        std::min<std::size_t>({256, limits.maxComputeWorkGroupInvocations, limits.maxComputeWorkGroupSize[0]});
    std::size_t workgroup = 64;
    while (2 * workgroup <= max_workgroup && groups * workgroup < (std::size_t{1} << 16) && units >= 4 * workgroup)
        workgroup *= 2;
    std::size_t const row_bytes = bytes_for(w.dtype, shape.k);
    if (groups > r.max_groups())
        throw Unsupported("vulkan linear: " + std::to_string(shape.n) +
                          " weight rows need more workgroups than one "
                          "dispatch may have");
    Binding const bx = r.bind(x, shape.m * shape.k * sizeof(float), Access::read, "linear x");
    // A view of q6_k, q8_0 or q4_0 rows may start 2 bytes past a word, and its last block end 2
    // bytes before one: the shader reads the words around them, from the view's own address.
    Binding const bw = bind_blocks(r, w, bytes_for(w.dtype, shape.n * shape.k), Access::read, "linear weights");
    Binding const bo = r.bind(out, shape.m * shape.n * sizeof(float), Access::write, "linear output");
    Binding const bb = bias ? r.bind(*bias, shape.n * sizeof(float), Access::read, "linear bias") : bo.untouched();
    std::size_t const w_offset = bw.offset;
    if (bw.offset + bw.bytes + 4 > std::numeric_limits<std::uint32_t>::max())
        throw Unsupported(
            "vulkan linear: quantized weights past byte 2^32 of their buffer (the shader's addresses are "
            "32-bit)");
    // q4_k and q5_k blocks are read as 16-byte vectors: every view of whole blocks of a tensor keeps
    // its 144- or 176-byte blocks 16-byte aligned (allocations are), so this only refuses a
    // hand-made view.
    if ((w.dtype == DType::q4_k || w.dtype == DType::q5_k) && w_offset % 16 != 0)
        throw Unsupported("vulkan linear: " + std::string(to_string(w.dtype)) + " weights at byte offset " +
                          std::to_string(w_offset) + ", not a multiple of 16");
    GemvParams const params{static_cast<std::uint32_t>(shape.n),
                            static_cast<std::uint32_t>(blocks),
                            static_cast<std::uint32_t>(w_offset),
                            static_cast<std::uint32_t>(row_bytes),
                            bx.element_offset(sizeof(float)),
                            bo.element_offset(sizeof(float)),
                            bias ? bb.element_offset(sizeof(float)) : 0u,
                            bias ? 1u : 0u};
    auto const& physical = r.physical();
    bool const integer_dot =
        physical.integer_dot_product && r.switches().integer_dot.value_or(physical.integer_dot_product_accelerated);
    std::size_t const spanning_workgroup = (8 * blocks + 31) / 32 * 32;
    if (shape.m == 1 && w.dtype == DType::q4_k && blocks <= spanning_max_blocks && r.subgroups() &&
        bx.offset % 16 == 0 &&
        spanning_workgroup <=
            std::min<std::size_t>(limits.maxComputeWorkGroupInvocations, limits.maxComputeWorkGroupSize[0])) {
        std::size_t const invocations = integer_dot && blocks <= spanning_integer_short_rows_blocks
                                            ? spanning_integer_short_rows_invocations
                                            : spanning_invocations;
        std::size_t const wanted_groups = std::max<std::size_t>(1, invocations / spanning_workgroup);
        std::size_t rows = (shape.n + wanted_groups - 1) / wanted_groups;
        rows = (rows + spanning_batch - 1) / spanning_batch * spanning_batch;
        std::size_t const slots = (spanning_workgroup + physical.subgroup_size - 1) / physical.subgroup_size;
        std::size_t const spanning_groups = (shape.n + rows - 1) / rows;
        if (rows * slots * sizeof(float) <= limits.maxComputeSharedMemorySize && spanning_groups <= r.max_groups()) {
            SpecConstants const constants{0, static_cast<std::uint32_t>(spanning_workgroup),
                                          static_cast<std::uint32_t>(blocks), static_cast<std::uint32_t>(rows),
                                          static_cast<std::uint32_t>(slots)};
            r.dispatch(integer_dot ? Shader::quant_gemv_spanning_integer_dot : Shader::quant_gemv_spanning, constants,
                       {bw, bx, bo, bb}, params, {static_cast<std::uint32_t>(spanning_groups)});
            return;
        }
    }
    // The subgroup build keeps a partial sum per subgroup and output in shared memory.
    std::uint32_t const slots =
        std::max<std::uint32_t>(1, static_cast<std::uint32_t>(workgroup) / physical.subgroup_size);
    bool const subgroup_path =
        r.subgroups() && slots * rows_w * shape.m * sizeof(float) <= limits.maxComputeSharedMemorySize;
    SpecConstants const constants{static_cast<std::uint32_t>(w.dtype),
                                  static_cast<std::uint32_t>(workgroup),
                                  static_cast<std::uint32_t>(shape.m),
                                  rows_w,
                                  fold ? 1u : 0u,
                                  bx.offset % 16 == 0 ? 1u : 0u,
                                  slots};
    r.dispatch(subgroup_path ? Shader::quant_gemv_subgroup : Shader::quant_gemv, constants, {bw, bx, bo, bb}, params,
               {static_cast<std::uint32_t>(groups)});
}

}  // namespace rayo::vulkan::ops
