// matmul on the Vulkan backend: for f32 x f32 on shapes that fill the GPU, the register-blocked
// SGEMM with 64x64 to 128x128 tiles (shaders/matmul_f32_large.comp, tile from gemm_tiles below);
// otherwise the shared-memory tiled GEMM (shaders/matmul_tiled.glsl) for f32, f16 and bf16
// operands, mixed f32 x f16/bf16 included; the cooperative-matrix GEMM
// (shaders/matmul_coopmat.comp) for f16 x f16 where the device has VK_KHR_cooperative_matrix or
// VK_NV_cooperative_matrix with the 16x8x16 shape.
// linear with q4_k / q6_k weights and many rows of x decodes the weights into an f32 scratch copy
// for the f32 GEMMs, or, where that copy would not fit one binding, into the tiled GEMM's tiles.
// Few rows of x against K-quant weights take the f32 K-quant GEMV (vulkan_quant.cpp).
#include <algorithm>
#include <array>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dispatch/registry.hpp"
#include "rayo/error.hpp"
#include "rayo/quant.hpp"
#include "vulkan/embedded_shaders.hpp"
#include "vulkan/spirv_cooperative_matrix.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace rayo::vulkan {

using detail::TensorView;

namespace {

// Mirrors the push constants of matmul_tiled.glsl, matmul_f32_large.comp and matmul_coopmat.comp.
struct MatmulParams {
    std::uint32_t m, n, k;
    std::uint32_t a_offset, b_offset, out_offset;
    std::uint32_t b_row_bytes;
};

// Up to this many rows of x, K-quant linear takes the f32 K-quant GEMV (at most vulkan_quant.cpp's
// gemv_max_rows_x): it reads each weight byte once for all rows; beyond, decoding the weights once
// for the GEMM pays off.
constexpr std::size_t gemv_max_rows = 16;

// ---- f32 x f32: which GEMM, with which tile -------------------------------------------------

// A workgroup tile of out (m x n) and the step along k.
struct GemmTile {
    std::uint32_t m, n, k;
    bool automatic;  // the default choice may take it; the others are there for sweeps (below)
};

// The tiles of matmul_f32_large.comp, in the order the default choice tries them: the first
// whose grid has at least min_large_workgroups workgroups (and whose double-buffered tiles fit
// the device's shared memory) wins. The shader takes m, n in {64, 128} and k in {8, 16}.
// Tuning happens here: reorder, or flip `automatic`, after a sweep with RAYO_VULKAN_GEMM_TILE.
// Measured on an H200 (NVIDIA's driver), TFLOP/s at n = 4096 / 8192: 64x128x8 35.1 / 36.1,
// 128x128x8 31.2 / 31.4, 64x128x16 30.8 / 31.0, 128x64x16 30.2 / 30.7, 128x64x8 29.2 / -,
// 128x128x16 29.0 / 28.9, 64x64x8 27.5 / -, the old shader 24.1 / - (cuBLAS: 51.2 / 51.1).
constexpr std::array gemm_tiles{
    GemmTile{64, 128, 8, true},    GemmTile{128, 128, 8, true},  GemmTile{128, 64, 16, true},
    GemmTile{64, 64, 8, true},     GemmTile{128, 64, 8, false},  GemmTile{128, 128, 16, false},
    GemmTile{64, 128, 16, false},  GemmTile{64, 64, 16, false},
};
// The old tiled shader's tile (matmul_tiled.glsl); RAYO_VULKAN_GEMM_TILE may name that shader
// ("legacy") so that a sweep compares against it.
constexpr GemmTile legacy_tile{64, 64, 16, false};
// The cooperative-matrix GEMM's tile (matmul_coopmat.comp) and its shared memory: two stages of
// both operand tiles (b's in the larger of its two layouts) and one 16x8 f32 scratch for each of
// its 4 subgroups.
constexpr GemmTile coopmat_tile{128, 128, 32, false};
constexpr std::uint32_t coopmat_shared_bytes = 2 * (128 * 40 + std::max(32 * 136, 128 * 40)) * 2 + 4 * 128 * 4;
constexpr std::string_view legacy_name = "legacy";

// A tile forced by RAYO_VULKAN_GEMM_TILE or use_gemm_tile: of matmul_f32_large.comp, or the old shader.
struct ForcedGemm {
    bool legacy = false;
    GemmTile tile{};
};
// About one workgroup per SM of an H100 / H200 (132): with fewer 128-wide tiles than that, the
// old shader's 64x64 tiles keep more of the GPU busy.
constexpr std::size_t min_large_workgroups = 128;

std::string to_string(GemmTile t) {
    return std::to_string(t.m) + "x" + std::to_string(t.n) + "x" + std::to_string(t.k);
}

std::uint64_t shared_bytes(GemmTile t) { return 2ull * t.k * (t.m + t.n) * sizeof(float); }  // double-buffered

// "MxNxK" naming an entry of gemm_tiles, or "legacy" for the old shader; throws naming `source`.
ForcedGemm parse_gemm_tile(std::string_view s, std::string_view source) {
    if (s == legacy_name) return {true, legacy_tile};
    for (GemmTile t : gemm_tiles)
        if (s == to_string(t)) return {false, t};
    std::string valid;
    for (GemmTile t : gemm_tiles) valid += to_string(t) + ", ";
    throw Error(std::string(source) + "='" + std::string(s) + "' is not a GEMM tile of the Vulkan backend; expected one of " +
                valid + "or " + std::string(legacy_name) + " (the old 64x64x16 shader)");
}

// RAYO_VULKAN_GEMM_TILE, a tuning knob read once: "MxNxK" (e.g. "128x128x8", "64x128x16"; an
// entry of gemm_tiles) makes every f32 x f32 matmul, whatever its shape, run
// matmul_f32_large.comp with that tile; "legacy" makes them all run the old 64x64x16 tiled shader;
// unset or empty: the default choice. So a sweep on a GPU needs no rebuild. An invalid value makes
// every f32 x f32 matmul throw, naming the valid ones.
std::optional<ForcedGemm> const& env_gemm_tile() {
    static std::optional<ForcedGemm> const tile = []() -> std::optional<ForcedGemm> {
        char const* env = std::getenv("RAYO_VULKAN_GEMM_TILE");
        if (!env || !*env) return std::nullopt;
        return parse_gemm_tile(env, "RAYO_VULKAN_GEMM_TILE");
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

// The tile of matmul_f32_large.comp for an f32 x f32 GEMM, or nullopt for the old shader.
std::optional<GemmTile> large_gemm_tile(detail::MatmulShape shape, std::uint32_t max_shared_bytes) {
    std::optional<ForcedGemm> forced;
    {
        auto& state = gemm_tile_state();
        std::lock_guard lock(state.mutex);
        forced = state.forced;
    }
    if (!forced) forced = env_gemm_tile();
    if (forced) {
        if (forced->legacy) return std::nullopt;
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

// Operand type codes of the shaders (A_TYPE / B_TYPE).
std::uint32_t type_code(DType t) {
    switch (t) {
        case DType::f32: return 0;
        case DType::f16: return 1;
        case DType::bf16: return 2;
        case DType::q4_k: return 3;
        case DType::q6_k: return 4;
        default: throw Unsupported("vulkan matmul: no shader reads " + std::string(to_string(t)) + " operands");
    }
}

bool is_kquant(DType t) { return t == DType::q4_k || t == DType::q6_k; }

}  // namespace

void VulkanBackend::matmul(detail::MatmulShape shape, TensorView const& a, TensorView const& b, TensorView const& out) {
    bool const quantized = is_kquant(b.dtype);
    bool const same = a.dtype == b.dtype && !quantized;
    bool const mixed = a.dtype == DType::f32 && (b.dtype == DType::f16 || b.dtype == DType::bf16 || quantized);
    if (out.dtype != DType::f32 || (!same && !mixed))
        throw Unsupported("vulkan matmul: " + std::string(to_string(a.dtype)) + " x " + std::string(to_string(b.dtype)) +
                          " -> " + std::string(to_string(out.dtype)) + " is not a supported combination");
    if (quantized && (!shape.b_transposed || shape.k % quant_block_values != 0))
        throw Unsupported("vulkan matmul: K-quant weights are taken by linear(x, w) with rows of whole blocks");
    std::uint32_t const a_type = type_code(a.dtype);
    if (shape.m == 0 || shape.n == 0) return;
    if (quantized && shape.m <= gemv_max_rows) {
        linear_quantized_gemv(shape, a, b, out);
        return;
    }
    auto const& physical = device_.physical();
    // Many rows of x against K-quant weights: the weights decoded once, exactly, into an f32
    // scratch copy that the f32 GEMM multiplies (H200, 512 x 4096 x 14336 q4_k: 5.4 ms decoding in
    // the tiled shader's loads), where that copy fits one binding.
    std::size_t const decoded_bytes = shape.n * shape.k * sizeof(float);
    bool const decode_first =
        quantized && use_decoded_kquant_gemm_ && decoded_bytes <= physical.properties.limits.maxStorageBufferRange;
    bool const f32 = (a.dtype == DType::f32 && b.dtype == DType::f32) || decode_first;
    std::optional<GemmTile> const large =
        f32 ? large_gemm_tile(shape, physical.properties.limits.maxComputeSharedMemorySize) : std::nullopt;
    // f16 · f16, and linear's f32 x with f16 weights (x rounded to f16 as it is staged, as on CUDA's
    // tensor cores; H200, 512 x 4096 x 14336: 21 TFLOP/s in f32 arithmetic, 131 here).
    bool const cooperative = !large && (a.dtype == DType::f16 || a.dtype == DType::f32) && b.dtype == DType::f16 &&
                             has_cooperative_matrix() && use_cooperative_matrix_ &&
                             physical.properties.limits.maxComputeSharedMemorySize >= coopmat_shared_bytes;
    GemmTile const tile = large.value_or(cooperative ? coopmat_tile : legacy_tile);
    std::size_t const groups_x = (shape.n + tile.n - 1) / tile.n, groups_y = (shape.m + tile.m - 1) / tile.m;

    std::lock_guard lock(mutex_);
    reclaim();
    if (groups_x > max_groups() || groups_y > max_groups())
        throw Unsupported("vulkan matmul: " + std::to_string(shape.m) + "x" + std::to_string(shape.n) +
                          " needs more workgroups than one dispatch may have");
    if (physical.properties.limits.maxComputeWorkGroupInvocations < 256)
        throw Unsupported("vulkan matmul: the device runs fewer than 256 invocations per workgroup");
    Binding const ba = bind(a, bytes_for(a.dtype, shape.m * shape.k), Access::read, "matmul a");
    Binding bb = bind(b, bytes_for(b.dtype, shape.k * shape.n), Access::read, "matmul b");
    Binding const bo = bind(out, shape.m * shape.n * sizeof(float), Access::write, "matmul output");
    if (decode_first) {
        if (!kquant_decoded_ || kquant_decoded_->size() < decoded_bytes) {
            kquant_decoded_.reset();
            kquant_decoded_.emplace(scratch(decoded_bytes));
        }
        record_dequantize(bb, b.dtype, shape.n * shape.k, kquant_decoded_->bind(Access::write, decoded_bytes));
        bb = kquant_decoded_->bind(Access::read, decoded_bytes);
    }
    bool const b_quantized = quantized && !decode_first;  // the shader decodes b itself
    std::uint32_t const b_type = decode_first ? type_code(DType::f32) : type_code(b.dtype);
    MatmulParams params{};
    params.m = static_cast<std::uint32_t>(shape.m);
    params.n = static_cast<std::uint32_t>(shape.n);
    params.k = static_cast<std::uint32_t>(shape.k);
    params.a_offset = ba.element_offset(size_of(a.dtype));
    params.b_offset = b_quantized ? static_cast<std::uint32_t>(bb.offset)
                                  : bb.element_offset(decode_first ? sizeof(float) : size_of(b.dtype));
    params.out_offset = bo.element_offset(sizeof(float));
    params.b_row_bytes = static_cast<std::uint32_t>(bytes_for(b.dtype, shape.k));
    std::uint32_t const transposed = shape.b_transposed ? 1 : 0;
    Groups const groups{static_cast<std::uint32_t>(groups_x), static_cast<std::uint32_t>(groups_y), 1};

    if (large) {
        // vec4 global loads / stores where every run of 4 elements starts 16-byte aligned: the
        // view offset and the row stride are multiples of 4 floats; else guarded scalars.
        bool const vec4_a = params.a_offset % 4 == 0 && params.k % 4 == 0;
        bool const vec4_b = params.b_offset % 4 == 0 && (shape.b_transposed ? params.k : params.n) % 4 == 0;
        bool const vec4_out = params.out_offset % 4 == 0 && params.n % 4 == 0;
        dispatch(Shader::matmul_f32_large,
                 {tile.m, 256, tile.n, transposed, tile.k, vec4_a ? 1u : 0u, vec4_b ? 1u : 0u, vec4_out ? 1u : 0u},
                 {ba, bb, bo}, params, groups);
        auto& state = gemm_tile_state();
        std::lock_guard state_lock(state.mutex);
        state.last = to_string(tile) + (vec4_a ? " a:vec4" : " a:scalar") + (vec4_b ? " b:vec4" : " b:scalar") +
                     (vec4_out ? " out:vec4" : " out:scalar");
    } else if (cooperative) {
        // Tensor cores: f16 products, f32 accumulation (untested on lavapipe, which lacks the extension).
        // 16-byte loads where every run of 8 halves starts aligned and lies wholly inside or outside.
        bool const a_f32 = a.dtype == DType::f32;
        bool const vec8 = params.a_offset % (a_f32 ? 4 : 8) == 0 && params.b_offset % 8 == 0 && params.k % 8 == 0 &&
                          (shape.b_transposed || params.n % 8 == 0);
        dispatch(Shader::matmul_coopmat, {0, 128, 0, 0, 0, vec8 ? 1u : 0u, a_f32 ? 1u : 0u, transposed},
                 {ba, bb, bo}, params, groups);
    } else {
        bool const reads_f16 = a.dtype == DType::f16 || b.dtype == DType::f16;
        Shader const shader = reads_f16 && physical.storage_buffer_16bit && use_storage16_ ? Shader::matmul_storage16
                                                                                           : Shader::matmul;
        dispatch(shader, {a_type, 256, b_type, transposed}, {ba, bb, bo}, params, groups);
        if (f32) {
            auto& state = gemm_tile_state();
            std::lock_guard state_lock(state.mutex);
            state.last = std::string(legacy_name);
        }
    }
    stream_.submit_if_large();
}

void VulkanBackend::use_matmul_features(bool storage16, bool cooperative_matrix) {
    std::lock_guard lock(mutex_);
    use_storage16_ = storage16;
    use_cooperative_matrix_ = cooperative_matrix;
}

void VulkanBackend::use_decoded_kquant_gemm(bool decode_first) {
    std::lock_guard lock(mutex_);
    use_decoded_kquant_gemm_ = decode_first;
}

void use_decoded_kquant_gemm(Device device, bool decode_first) {
    backend_of(device).use_decoded_kquant_gemm(decode_first);
}

bool has_cooperative_matrix(Device device) { return backend_of(device).has_cooperative_matrix(); }

std::vector<std::uint32_t> cooperative_matrix_gemm_spirv(bool khr) {
    std::span<std::uint32_t const> const nv = shaders::matmul_coopmat;
    if (!khr) return {nv.begin(), nv.end()};
    return spirv::cooperative_matrix_nv_to_khr(nv, spirv::gemm_matrix_types);
}

void use_matmul_features(Device device, bool storage16, bool cooperative_matrix) {
    backend_of(device).use_matmul_features(storage16, cooperative_matrix);
}

// Tests only (diagnostics.hpp): run every f32 x f32 matmul with `tile`,
// a value of RAYO_VULKAN_GEMM_TILE, overriding it; "" restores the variable or the default choice.
void use_gemm_tile(std::string_view tile) {
    std::optional<ForcedGemm> forced;
    if (!tile.empty()) forced = parse_gemm_tile(tile, "use_gemm_tile");
    auto& state = gemm_tile_state();
    std::lock_guard lock(state.mutex);
    state.forced = forced;
}

// Tests only: the values use_gemm_tile and RAYO_VULKAN_GEMM_TILE take, gemm_tiles' first.
std::vector<std::string> gemm_tile_names() {
    std::vector<std::string> names;
    for (GemmTile t : gemm_tiles) names.push_back(to_string(t));
    names.emplace_back(legacy_name);
    return names;
}

// Tests only: what the last f32 x f32 matmul ran: "legacy" (matmul_tiled.glsl), or the tile of
// matmul_f32_large.comp and how it read and wrote, e.g. "128x128x8 a:vec4 b:scalar out:vec4".
std::string last_gemm_tile() {
    auto& state = gemm_tile_state();
    std::lock_guard lock(state.mutex);
    return state.last;
}

}  // namespace rayo::vulkan
