// K-quant ops on the Vulkan backend: dequantization of q4_k / q6_k / q8_k (bit-exact with the
// CPU), quantization to q8_k (byte-exact), and linear(x, w) with q4_k / q6_k weights for a few
// rows of x: an f32 GEMV (quant_gemv_body.glsl) that reads x as stored and decodes each weight in
// registers once for all rows of x, so its cost is the weight bytes; for one row of x and q4_k
// weights, the spanning GEMV (quant_gemv_spanning.comp), which holds x in registers. The f32
// builds do not quantize x; the spanning GEMV's integer-dot-product build, on devices that
// accelerate 4x8-bit products, turns it into 24-bit integers per 16 values (f32's precision).
// rayo::kquant_activations() (q8_k_residual / q8_k) therefore changes none of them; that setting
// applies to the CPU and CUDA backends. q4_k / q6_k quantization stays on the CPU.
#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "rayo/error.hpp"
#include "rayo/quant.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace rayo::vulkan {

using detail::TensorView;

namespace {

struct ConvertParams {  // quant_dequantize.comp, quant_q8_k.comp
    std::uint32_t count;  // values (dequantize) or blocks (quantize)
    std::uint32_t in_offset, out_offset;
};

struct GemvParams {  // quant_gemv_body.glsl
    std::uint32_t n, blocks, w_offset, row_bytes, x_offset, out_offset;
};

// quant_gemv_body.glsl's rows of x (m, constant 2) at most; vulkan_matmul.cpp sends no more.
constexpr std::size_t gemv_max_rows_x = 16;

// The spanning GEMV (quant_gemv_spanning.comp): one row of x, q4_k rows of at most this many blocks
// (a workgroup of 8 invocations a block), workgroups of consecutive rows sized so that the dispatch
// has about spanning_invocations invocations, in steps of spanning_batch rows. Measured on an H200
// (1 x 4096/14336 x 4096/14336, cold): 2^17 within 7% of the best of 2^16 .. 2^20 at every shape
// (2^16 took 37 us at 4096 x 14336, 2^20 27 us); against the unit GEMV below 1.00 / 1.09 / 1.13x
// faster at 4096x4096 / 14336x4096 / 4096x14336. The f32 build is bound by its arithmetic (3
// operations a weight: hot and cold times within 5%), not by memory. Its integer-dot-product build
// (0.75 operations a weight) took 10.3 / 18.7 / 16.7 us there at 2^17 and 8.4 / 17.1 / 25.3 us at
// 2^16: it takes 2^16 for rows of up to 16 blocks (workgroups of 128: 8 rows each at 4096 x 4096).
constexpr std::size_t spanning_max_blocks = 128;
constexpr std::size_t spanning_invocations = std::size_t{1} << 17;
constexpr std::size_t spanning_integer_short_rows_invocations = std::size_t{1} << 16;
constexpr std::size_t spanning_integer_short_rows_blocks = 16;
constexpr std::size_t spanning_batch = 2;  // the shader's BATCH

}  // namespace

void VulkanBackend::quantize(TensorView const& in, TensorView const& out) {
    if (in.dtype != DType::f32 || in.numel != out.numel || in.numel % quant_block_values != 0)
        throw Unsupported("vulkan: quantize takes f32 values in whole 256-value blocks");
    if (out.dtype == DType::q4_k || out.dtype == DType::q6_k)
        throw Unsupported("vulkan: quantize to " + std::string(to_string(out.dtype)) +
                          " runs on the CPU (the reference's per-block search is sequential, and its bytes are the "
                          "contract); only q8_k has a shader");
    if (out.dtype != DType::q8_k)
        throw Unsupported("vulkan: quantize to " + std::string(to_string(out.dtype)) + " is not a K-quant type");
    std::size_t const blocks = in.numel / quant_block_values;
    if (blocks == 0) return;
    std::lock_guard lock(mutex_);
    reclaim();
    Binding const bi = bind(in, in.numel * sizeof(float), Access::read, "quantize input");
    Binding const bo = bind(out, blocks * sizeof(q8_k), Access::write, "quantize output");
    ConvertParams const params{static_cast<std::uint32_t>(blocks), bi.element_offset(sizeof(float)),
                               bo.element_offset(sizeof(std::uint32_t))};
    dispatch(Shader::quant_q8_k, {}, {bi, bo}, params,
             {static_cast<std::uint32_t>(std::min<std::size_t>(blocks, max_groups()))});
    stream_.submit_if_large();
}

void VulkanBackend::dequantize(TensorView const& in, TensorView const& out) {
    if (out.dtype != DType::f32 || in.numel != out.numel || in.numel % quant_block_values != 0 ||
        (in.dtype != DType::q4_k && in.dtype != DType::q6_k && in.dtype != DType::q8_k))
        throw Unsupported("vulkan: dequantize takes q4_k, q6_k or q8_k blocks to f32, got " +
                          std::string(to_string(in.dtype)));
    if (in.numel == 0) return;
    std::lock_guard lock(mutex_);
    reclaim();
    Binding const bi = bind(in, bytes_for(in.dtype, in.numel), Access::read, "dequantize input");
    Binding const bo = bind(out, out.numel * sizeof(float), Access::write, "dequantize output");
    record_dequantize(bi, in.dtype, in.numel, bo);
    stream_.submit_if_large();
}

void VulkanBackend::record_dequantize(Binding const& in, DType type, std::size_t count, Binding const& out) {
    std::uint32_t const code = type == DType::q4_k ? 0 : type == DType::q6_k ? 1 : 2;
    ConvertParams const params{static_cast<std::uint32_t>(count), static_cast<std::uint32_t>(in.offset),
                               out.element_offset(sizeof(float))};
    dispatch(Shader::quant_dequantize, {code}, {in, out}, params,
             {static_cast<std::uint32_t>(std::min<std::size_t>((count + 255) / 256, max_groups()))});
}

void VulkanBackend::linear_quantized_gemv(detail::MatmulShape shape, TensorView const& x, TensorView const& w,
                                          TensorView const& out) {
    if (shape.m == 0 || shape.m > gemv_max_rows_x)
        throw Error("vulkan linear: the K-quant GEMV takes 1 to " + std::to_string(gemv_max_rows_x) +
                    " rows of x, not " + std::to_string(shape.m));
    std::size_t const blocks = shape.k / quant_block_values;
    std::size_t const units = 4 * blocks;  // per weight row: 64 weights each (quant_gemv_body.glsl)
    // Weight rows per workgroup: each x load serves them all; more rows of x need more registers
    // per weight row, so fewer.
    std::uint32_t const rows_w = shape.m <= 8 ? 4 : 2;
    // One or two rows of x: sums of q·x per scale group (1 FMA per weight); more: each weight
    // value formed once and multiplied into every row (fewer registers).
    bool const fold = shape.m <= 2;
    std::size_t const groups = (shape.n + rows_w - 1) / rows_w;
    // Invocations per workgroup: 64 (2 NVIDIA warps), doubled while the dispatch has fewer than
    // 2^16 invocations in all (too few to keep a large GPU's memory busy) and each would still
    // have 2 units of its rows; n = 4096, k = 14336 gives 1024 workgroups of 64, 3.5 units each.
    auto const& limits = device_.physical().properties.limits;
    std::size_t const max_workgroup =
        std::min<std::size_t>({256, limits.maxComputeWorkGroupInvocations, limits.maxComputeWorkGroupSize[0]});
    std::size_t workgroup = 64;
    while (2 * workgroup <= max_workgroup && groups * workgroup < (std::size_t{1} << 16) && units >= 4 * workgroup)
        workgroup *= 2;
    std::size_t const row_bytes = bytes_for(w.dtype, shape.k);
    std::lock_guard lock(mutex_);
    reclaim();
    if (groups > max_groups())
        throw Unsupported("vulkan linear: " + std::to_string(shape.n) + " weight rows need more workgroups than one "
                          "dispatch may have");
    Binding const bx = bind(x, shape.m * shape.k * sizeof(float), Access::read, "linear x");
    // bind() takes views that start on a word; a view of q6_k rows may start 2 bytes past one
    // (210-byte blocks): bind from that word, and the shader reads from the view's own address.
    std::size_t const lead = w.offset % 4;
    TensorView words = w;
    words.offset -= lead;
    Binding bw = bind(words, lead + bytes_for(w.dtype, shape.n * shape.k), Access::read, "linear weights");
    Binding const bo = bind(out, shape.m * shape.n * sizeof(float), Access::write, "linear output");
    std::size_t const w_offset = bw.offset + lead;
    if (bw.offset + bw.bytes > std::numeric_limits<std::uint32_t>::max())
        throw Unsupported("vulkan linear: K-quant weights past byte 2^32 of their buffer (the shader's addresses are "
                          "32-bit)");
    // q4_k blocks are read as 16-byte vectors: every view of whole blocks of a tensor keeps its
    // 144-byte blocks 16-byte aligned (allocations are), so this only refuses a hand-made view.
    if (w.dtype == DType::q4_k && w_offset % 16 != 0)
        throw Unsupported("vulkan linear: q4_k weights at byte offset " + std::to_string(w_offset) +
                          ", not a multiple of 16");
    // A q6_k block's last field, d, is read through the 4-byte word that holds it, which for the
    // last block of an odd count ends 2 bytes past the tensor: bind the range rounded up to words
    // (within the allocation's buffer, whose blocks are carved at aligned offsets).
    bw.size = (bw.size + 3) / 4 * 4;
    GemvParams const params{static_cast<std::uint32_t>(shape.n),
                            static_cast<std::uint32_t>(blocks),
                            static_cast<std::uint32_t>(w_offset),
                            static_cast<std::uint32_t>(row_bytes),
                            bx.element_offset(sizeof(float)),
                            bo.element_offset(sizeof(float))};
    auto const& physical = device_.physical();
    bool const integer_dot =
        physical.integer_dot_product && use_integer_dot_product_.value_or(physical.integer_dot_product_accelerated);
    std::size_t const spanning_workgroup = (8 * blocks + 31) / 32 * 32;
    if (shape.m == 1 && w.dtype == DType::q4_k && blocks <= spanning_max_blocks && subgroups() &&
        bx.offset % 16 == 0 && spanning_workgroup <= std::min<std::size_t>(limits.maxComputeWorkGroupInvocations,
                                                                           limits.maxComputeWorkGroupSize[0])) {
        std::size_t const invocations = integer_dot && blocks <= spanning_integer_short_rows_blocks
                                            ? spanning_integer_short_rows_invocations
                                            : spanning_invocations;
        std::size_t const wanted_groups = std::max<std::size_t>(1, invocations / spanning_workgroup);
        std::size_t rows = (shape.n + wanted_groups - 1) / wanted_groups;
        rows = (rows + spanning_batch - 1) / spanning_batch * spanning_batch;
        std::size_t const slots = (spanning_workgroup + physical.subgroup_size - 1) / physical.subgroup_size;
        std::size_t const spanning_groups = (shape.n + rows - 1) / rows;
        if (rows * slots * sizeof(float) <= limits.maxComputeSharedMemorySize && spanning_groups <= max_groups()) {
            SpecConstants const constants{0,
                                          static_cast<std::uint32_t>(spanning_workgroup),
                                          static_cast<std::uint32_t>(blocks),
                                          static_cast<std::uint32_t>(rows),
                                          static_cast<std::uint32_t>(slots)};
            dispatch(integer_dot ? Shader::quant_gemv_spanning_integer_dot : Shader::quant_gemv_spanning, constants,
                     {bw, bx, bo}, params, {static_cast<std::uint32_t>(spanning_groups)});
            stream_.submit_if_large();
            return;
        }
    }
    // The subgroup build keeps a partial sum per subgroup and output in shared memory.
    std::uint32_t const slots = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(workgroup) / physical.subgroup_size);
    bool const subgroup_path =
        subgroups() && slots * rows_w * shape.m * sizeof(float) <= limits.maxComputeSharedMemorySize;
    SpecConstants const constants{w.dtype == DType::q4_k ? 0u : 1u,
                                  static_cast<std::uint32_t>(workgroup),
                                  static_cast<std::uint32_t>(shape.m),
                                  rows_w,
                                  fold ? 1u : 0u,
                                  bx.offset % 16 == 0 ? 1u : 0u,
                                  slots};
    dispatch(subgroup_path ? Shader::quant_gemv_subgroup : Shader::quant_gemv, constants, {bw, bx, bo}, params,
             {static_cast<std::uint32_t>(groups)});
    stream_.submit_if_large();
}

void VulkanBackend::use_integer_dot_product(std::optional<bool> enabled) {
    std::lock_guard lock(mutex_);
    use_integer_dot_product_ = enabled;
}

bool has_integer_dot_product(Device device) { return backend_of(device).has_integer_dot_product(); }

void use_integer_dot_product(Device device, std::optional<bool> enabled) {
    backend_of(device).use_integer_dot_product(enabled);
}

}  // namespace rayo::vulkan
