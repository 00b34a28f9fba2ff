// The matmul family on Vulkan. f32 x f32 on shapes that fill the GPU: the register-blocked SGEMM
// with 64x64 to 128x128 tiles (shaders/matmul_f32_large.comp, tile from gemm_tiles below);
// otherwise the shared-memory tiled GEMM (shaders/matmul_tiled.glsl) for f32, f16 and bf16
// operands, mixed f32 x f16/bf16 included; the cooperative-matrix GEMM (shaders/matmul_coopmat.comp)
// for f16 x f16 where the device has VK_KHR_cooperative_matrix or VK_NV_cooperative_matrix with the
// 16x8x16 shape. linear with block-quantized weights (q4_k, q5_k, q6_k, q8_0, q4_0): few rows of x
// take the f32 K-quant GEMV (quantization.cpp); more rows decode the weights into an f32 scratch
// copy for the f32 GEMMs, or, where that copy would not fit one binding, into the tiled GEMM's tiles.
#include <algorithm>
#include <array>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/environment.hpp"
#include "dispatch/linear_input.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/error.hpp"
#include "rayo/gguf.hpp"
#include "rayo/quant.hpp"
#include "vulkan/diagnostics.hpp"
#include "vulkan/embedded_shaders.hpp"
#include "vulkan/ops/ops.hpp"
#include "vulkan/spirv_cooperative_matrix.hpp"

namespace rayo::vulkan::ops {

namespace {

// Mirrors the push constants of matmul_tiled.glsl, matmul_f32_large.comp and matmul_coopmat.comp.
struct MatmulPush {
    std::uint32_t m, n, k;
    std::uint32_t a_offset, b_offset, out_offset;
    std::uint32_t b_row_bytes;
    std::uint32_t a_batch, b_batch, out_batch;  // elements between the products of a batch (matmul_batch.glsl)
    std::uint32_t bias_offset, has_bias;        // linear's bias, binding 3
};

// ---- f32 x f32: which GEMM, with which tile -------------------------------------------------

// A workgroup tile of out (m x n) and the step along k.
struct GemmTile {
    std::uint32_t m, n, k;
    bool automatic;  // the default choice may take it; the others are there for sweeps (below)
};

// The tiles of matmul_f32_large.comp, in the order the default choice tries them: the first
// whose grid has at least min_large_workgroups workgroups (and whose double-buffered tiles fit
// the device's shared memory) wins. The shader takes m, n in {64, 128} and k in {8, 16}. The order
// is fastest first where the grid is large enough (figures and command: docs/backends/vulkan.md).
constexpr std::array gemm_tiles{
    GemmTile{64, 128, 8, true},   GemmTile{128, 128, 8, true}, GemmTile{128, 64, 16, true},
    GemmTile{64, 64, 8, true},    GemmTile{128, 64, 8, false}, GemmTile{128, 128, 16, false},
    GemmTile{64, 128, 16, false}, GemmTile{64, 64, 16, false},
};
// The tiled shader's tile (matmul_tiled.glsl); RAYO_VULKAN_GEMM_TILE=tiled forces that shader.
constexpr GemmTile tiled_tile{64, 64, 16, false};
constexpr std::string_view tiled_name = "tiled";
// The cooperative-matrix GEMM's tile (matmul_coopmat.comp) and its shared memory: two stages of
// both operand tiles (b's in the larger of its two layouts) and one 16x8 f32 scratch for each of
// its 4 subgroups.
constexpr GemmTile coopmat_tile{128, 128, 32, false};
constexpr std::uint32_t coopmat_shared_bytes = 2 * (128 * 40 + std::max(32 * 136, 128 * 40)) * 2 + 4 * 128 * 4;

// A tile forced by RAYO_VULKAN_GEMM_TILE or use_gemm_tile: of matmul_f32_large.comp, or the tiled shader.
struct ForcedGemm {
    bool tiled = false;
    GemmTile tile{};
};
// About one workgroup per multiprocessor of a large GPU: with fewer 128-wide tiles than that, the
// tiled shader's 64x64 tiles keep more of the GPU busy (docs/backends/vulkan.md).
constexpr std::size_t min_large_workgroups = 128;

std::string to_string(GemmTile t) {
    return std::to_string(t.m) + "x" + std::to_string(t.n) + "x" + std::to_string(t.k);
}

std::uint64_t shared_bytes(GemmTile t) { return 2ull * t.k * (t.m + t.n) * sizeof(float); }  // double-buffered

// "MxNxK" naming an entry of gemm_tiles, or "tiled" for the tiled shader; throws naming `source`.
ForcedGemm parse_gemm_tile(std::string_view s, std::string_view source) {
    if (s == tiled_name) return {true, tiled_tile};
    for (GemmTile t : gemm_tiles)
        if (s == to_string(t)) return {false, t};
    std::string valid;
    for (GemmTile t : gemm_tiles) valid += to_string(t) + ", ";
    throw Error(std::string(source) + "='" + gguf::printable(s, 64) +
                "' is not a GEMM tile of the Vulkan backend; expected one of " + valid + "or " +
                std::string(tiled_name) + " (the 64x64x16 tiled shader)");
}

// RAYO_VULKAN_GEMM_TILE, a tuning knob read once: "MxNxK" (an entry of gemm_tiles) makes every
// f32 x f32 matmul, whatever its shape, run matmul_f32_large.comp with that tile; "tiled" makes
// them all run the tiled shader; unset or empty: the default choice. So a sweep on a GPU needs no
// rebuild. An invalid value makes every f32 x f32 matmul throw, naming the valid ones.
std::optional<ForcedGemm> const& env_gemm_tile() {
    static std::optional<ForcedGemm> const tile = []() -> std::optional<ForcedGemm> {
        auto const env = detail::environment("RAYO_VULKAN_GEMM_TILE");
        if (!env) return std::nullopt;
        return parse_gemm_tile(*env, "RAYO_VULKAN_GEMM_TILE");
    }();
    return tile;
}

// The tests' override of RAYO_VULKAN_GEMM_TILE (use_gemm_tile) and what the last f32 x f32
// matmul ran (last_gemm_tile). Process-wide, like the environment variable.
struct GemmTileState {
    std::mutex mutex;
    std::optional<ForcedGemm> forced;
    std::string last;
};
GemmTileState& gemm_tile_state() {
    static GemmTileState state;
    return state;
}

void note_last_gemm(std::string text) {
    auto& state = gemm_tile_state();
    std::lock_guard lock(state.mutex);
    state.last = std::move(text);
}

// The tile of matmul_f32_large.comp for an f32 x f32 GEMM, or nullopt for the tiled shader.
std::optional<GemmTile> large_gemm_tile(op::MatmulShape shape, std::uint32_t max_shared_bytes) {
    std::optional<ForcedGemm> forced;
    {
        auto& state = gemm_tile_state();
        std::lock_guard lock(state.mutex);
        forced = state.forced;
    }
    if (!forced) forced = env_gemm_tile();
    if (forced) {
        if (forced->tiled) return std::nullopt;
        if (shared_bytes(forced->tile) > max_shared_bytes)
            // Error, not Unsupported: a sweep must not quietly time the CPU fallback.
            throw Error("vulkan matmul: the GEMM tile " + to_string(forced->tile) + " needs " +
                        std::to_string(shared_bytes(forced->tile)) + " bytes of shared memory; the device has " +
                        std::to_string(max_shared_bytes));
        return forced->tile;
    }
    for (GemmTile t : gemm_tiles) {
        std::size_t const groups = ((shape.m + t.m - 1) / t.m) * ((shape.n + t.n - 1) / t.n);
        if (t.automatic && shared_bytes(t) <= max_shared_bytes && groups >= min_large_workgroups) return t;
    }
    return std::nullopt;
}

bool is_floating(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

// How one matmul runs on this device.
struct MatmulPlan {
    bool decode_first = false;      // K-quant weights decoded into an f32 scratch copy first
    std::optional<GemmTile> large;  // matmul_f32_large.comp with this tile
    bool cooperative = false;       // matmul_coopmat.comp
    GemmTile tile{};
};

MatmulPlan plan_matmul(ShaderRunner const& r, op::MatmulShape shape, DType a, DType b) {
    auto const& limits = r.limits();
    bool const quantized = is_weight_block_type(b);
    MatmulPlan plan;
    // Many rows of x against K-quant weights: the weights decoded once, exactly, into an f32
    // scratch copy that the f32 GEMM multiplies, where that copy fits one binding.
    plan.decode_first = quantized && r.switches().decoded_kquant_gemm &&
                        shape.n * shape.k * sizeof(float) <= limits.maxStorageBufferRange;
    bool const f32 = (a == DType::f32 && b == DType::f32) || plan.decode_first;
    plan.large = f32 ? large_gemm_tile(shape, limits.maxComputeSharedMemorySize) : std::nullopt;
    // f16 · f16, and linear's f32 x with f16 weights (x rounded to f16 as it is staged, as on CUDA's
    // tensor cores).
    plan.cooperative = !plan.large && (a == DType::f16 || a == DType::f32) && b == DType::f16 &&
                       r.physical().cooperative_matrix != PhysicalDevice::CooperativeMatrix::none &&
                       r.switches().cooperative_matrix && limits.maxComputeSharedMemorySize >= coopmat_shared_bytes;
    plan.tile = plan.large.value_or(plan.cooperative ? coopmat_tile : tiled_tile);
    return plan;
}

}  // namespace

Support supports(ShaderRunner const& r, op::Matmul const& d, OpViews const& v) {
    if (d.input != op::LinearInput::x)
        return detail::supports_with_formed_input(
            d, v, detail::formed_input_view(v.in[0], detail::unbound_buffer),
            [&](auto const& op, OpViews const& views) { return supports(r, op, views); });
    auto const& shape = d.shape;
    DType const a = v.in[0].dtype, b = v.in[1].dtype;
    bool const quantized = is_weight_block_type(b);
    bool const same = a == b && is_floating(a);
    bool const mixed = a == DType::f32 && (b == DType::f16 || b == DType::bf16 || quantized);
    if (v.out[0].dtype != DType::f32 || (!same && !mixed))
        return Support::no("vulkan matmul: " + std::string(rayo::to_string(a)) + " x " +
                           std::string(rayo::to_string(b)) + " -> " + std::string(rayo::to_string(v.out[0].dtype)) +
                           " is not a supported combination");
    if (quantized && (!shape.b_transposed || shape.k % block_elements(b) != 0))
        return Support::no(
            "vulkan matmul: block-quantized weights are taken by linear(x, w) with rows of whole "
            "blocks");
    if (!detail::all_contiguous(v)) return Support::no("vulkan matmul takes contiguous operands");
    if (shape.m == 0 || shape.n == 0 || (quantized && shape.m <= kquant_gemv_max_rows)) return Support::yes();
    MatmulPlan const plan = plan_matmul(r, shape, a, b);
    std::size_t const groups_x = (shape.n + plan.tile.n - 1) / plan.tile.n;
    std::size_t const groups_y = (shape.m + plan.tile.m - 1) / plan.tile.m;
    if (groups_x > r.max_groups() || groups_y > r.max_groups() || shape.batch > r.limits().maxComputeWorkGroupCount[2])
        return Support::no("vulkan matmul: " + std::to_string(shape.batch) + " products of " + std::to_string(shape.m) +
                           "x" + std::to_string(shape.n) + " need more workgroups than one dispatch may have");
    if (v.in[0].bytes() > 0xffffffffu || v.in[1].bytes() > 0xffffffffu || v.out[0].bytes() > 0xffffffffu)
        return Support::no("vulkan matmul: operands of 4 GiB or more");
    if (r.limits().maxComputeWorkGroupInvocations < 256)
        return Support::no("vulkan matmul: the device runs fewer than 256 invocations per workgroup");
    return Support::yes();
}

void run(ShaderRunner& r, op::Matmul const& d, OpViews const& v) {
    if (d.input != op::LinearInput::x) {  // formed by the swiglu or rms_norm shader into a scratch tensor
        ScratchTensor const formed = r.scratch_tensor(v.in[0].numel() * sizeof(float));
        detail::run_with_formed_input(d, v, detail::formed_input_view(v.in[0], formed.handle()),
                                      [&](auto const& op, OpViews const& views) { run(r, op, views); });
        return;
    }
    auto const& shape = d.shape;
    TensorView const &a = v.in[0], &b = v.in[1], &out = v.out[0];
    TensorView const* bias_view = v.in.size() > 2 && v.in[2].present ? &v.in[2] : nullptr;  // linear's
    if (shape.m == 0 || shape.n == 0) return;
    bool const quantized = is_weight_block_type(b.dtype);
    std::string const what = std::string(to_string(d.op)) + " with k = " + std::to_string(shape.k);
    if (quantized && shape.m <= kquant_gemv_max_rows) {
        r.check_loop_budget(shape.k / block_elements(b.dtype) + 64, what);  // a block a step at most
        linear_kquant_gemv(r, shape, a, b, bias_view, out);
        return;
    }
    MatmulPlan const plan = plan_matmul(r, shape, a.dtype, b.dtype);
    r.check_loop_budget((shape.k + plan.tile.k - 1) / plan.tile.k + 64, what);  // a tile's depth a step
    std::size_t const groups_x = (shape.n + plan.tile.n - 1) / plan.tile.n,
                      groups_y = (shape.m + plan.tile.m - 1) / plan.tile.m;
    // Each operand's span: its last product's matrix starts (batch - 1) steps in.
    auto const span = [&](std::size_t step, std::size_t matrix) { return (shape.batch - 1) * step + matrix; };
    Binding const ba = r.bind(a, bytes_for(a.dtype, span(shape.a_batch, shape.m * shape.k)), Access::read, "matmul a");
    std::size_t const b_bytes = bytes_for(b.dtype, span(shape.b_batch, shape.k * shape.n));
    // Blocks of q6_k, q8_0 and q4_0 may start 2 bytes past a word: the decoders read bytes at any address.
    Binding bb =
        quantized ? bind_blocks(r, b, b_bytes, Access::read, "matmul b") : r.bind(b, b_bytes, Access::read, "matmul b");
    Binding const bo =
        r.bind(out, span(shape.m * shape.n, shape.m * shape.n) * sizeof(float), Access::write, "matmul output");
    if (plan.decode_first) {
        std::size_t const decoded_bytes = shape.n * shape.k * sizeof(float);
        ScratchBuffer const& decoded = r.kept_scratch(decoded_bytes);
        record_dequantize(r, bb, b.dtype, shape.n * shape.k, decoded.bind(Access::write, decoded_bytes));
        bb = decoded.bind(Access::read, decoded_bytes);
    }
    bool const b_quantized = quantized && !plan.decode_first;  // the shader decodes b itself
    DType const b_type = plan.decode_first ? DType::f32 : b.dtype;
    MatmulPush push{};
    push.m = static_cast<std::uint32_t>(shape.m);
    push.n = static_cast<std::uint32_t>(shape.n);
    push.k = static_cast<std::uint32_t>(shape.k);
    push.a_offset = ba.element_offset(size_of(a.dtype));
    push.b_offset = b_quantized ? static_cast<std::uint32_t>(bb.offset) : bb.element_offset(size_of(b_type));
    push.out_offset = bo.element_offset(sizeof(float));
    push.b_row_bytes = static_cast<std::uint32_t>(bytes_for(b.dtype, shape.k));
    push.a_batch = static_cast<std::uint32_t>(shape.a_batch);
    push.b_batch = static_cast<std::uint32_t>(shape.b_batch);
    push.out_batch = static_cast<std::uint32_t>(shape.m * shape.n);
    Binding const bias =
        bias_view ? r.bind(*bias_view, shape.n * sizeof(float), Access::read, "linear bias") : bo.untouched();
    push.bias_offset = bias_view ? bias.element_offset(sizeof(float)) : 0;
    push.has_bias = bias_view ? 1 : 0;
    std::uint32_t const transposed = shape.b_transposed ? 1 : 0;
    Groups const groups{static_cast<std::uint32_t>(groups_x), static_cast<std::uint32_t>(groups_y),
                        static_cast<std::uint32_t>(shape.batch)};

    if (plan.large) {
        GemmTile const tile = *plan.large;
        // vec4 global loads / stores where every run of 4 elements starts 16-byte aligned: the
        // view offset and the row stride are multiples of 4 floats; else guarded scalars.
        bool const vec4_a = push.a_offset % 4 == 0 && push.a_batch % 4 == 0 && push.k % 4 == 0;
        bool const vec4_b =
            push.b_offset % 4 == 0 && push.b_batch % 4 == 0 && (shape.b_transposed ? push.k : push.n) % 4 == 0;
        bool const vec4_out = push.out_offset % 4 == 0 && push.out_batch % 4 == 0 && push.n % 4 == 0;
        r.dispatch(Shader::matmul_f32_large,
                   {tile.m, 256, tile.n, transposed, tile.k, vec4_a ? 1u : 0u, vec4_b ? 1u : 0u, vec4_out ? 1u : 0u},
                   {ba, bb, bo, bias}, push, groups);
        note_last_gemm(to_string(tile) + (vec4_a ? " a:vec4" : " a:scalar") + (vec4_b ? " b:vec4" : " b:scalar") +
                       (vec4_out ? " out:vec4" : " out:scalar"));
    } else if (plan.cooperative) {
        // Tensor cores: f16 products, f32 accumulation (lavapipe lacks the extension).
        // 16-byte loads where every run of 8 halves starts aligned and lies wholly inside or outside.
        bool const a_f32 = a.dtype == DType::f32;
        bool const vec8 = push.a_offset % (a_f32 ? 4 : 8) == 0 && push.a_batch % 8 == 0 && push.b_offset % 8 == 0 &&
                          push.b_batch % 8 == 0 && push.k % 8 == 0 && (shape.b_transposed || push.n % 8 == 0);
        r.dispatch(Shader::matmul_coopmat, {0, 128, 0, 0, 0, vec8 ? 1u : 0u, a_f32 ? 1u : 0u, transposed},
                   {ba, bb, bo, bias}, push, groups);
    } else {
        bool const reads_f16 = a.dtype == DType::f16 || b.dtype == DType::f16;
        Shader const shader = reads_f16 && r.physical().storage_buffer_16bit && r.switches().storage16
                                  ? Shader::matmul_storage16
                                  : Shader::matmul;
        r.dispatch(shader, {static_cast<std::uint32_t>(a.dtype), 256, static_cast<std::uint32_t>(b_type), transposed},
                   {ba, bb, bo, bias}, push, groups);
        if (a.dtype == DType::f32 && b_type == DType::f32) note_last_gemm(std::string(tiled_name));
    }
}

}  // namespace rayo::vulkan::ops

namespace rayo::vulkan {

std::vector<std::uint32_t> cooperative_matrix_gemm_spirv(bool khr) {
    std::span<std::uint32_t const> const nv = shaders::matmul_coopmat;
    if (!khr) return {nv.begin(), nv.end()};
    return spirv::cooperative_matrix_nv_to_khr(nv, spirv::gemm_matrix_types);
}

void use_gemm_tile(std::string_view tile) {
    std::optional<ops::ForcedGemm> forced;
    if (!tile.empty()) forced = ops::parse_gemm_tile(tile, "use_gemm_tile");
    auto& state = ops::gemm_tile_state();
    std::lock_guard lock(state.mutex);
    state.forced = forced;
}

std::vector<std::string> gemm_tile_names() {
    std::vector<std::string> names;
    for (ops::GemmTile t : ops::gemm_tiles) names.push_back(ops::to_string(t));
    names.emplace_back(ops::tiled_name);
    return names;
}

std::string last_gemm_tile() {
    auto& state = ops::gemm_tile_state();
    std::lock_guard lock(state.mutex);
    return state.last;
}

}  // namespace rayo::vulkan
