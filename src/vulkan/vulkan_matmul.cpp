// matmul on the Vulkan backend: the shared-memory tiled GEMM (shaders/matmul_tiled.glsl) for
// f32, f16 and bf16 operands, mixed f32 x f16/bf16 included, with q4_k / q6_k weights decoded
// into its tiles for linear with many rows of x; the cooperative-matrix GEMM
// (shaders/matmul_coopmat.comp) for f16 x f16 where the device has VK_NV_cooperative_matrix.
// Few rows of x against K-quant weights take the integer GEMV (vulkan_quant.cpp).
#include <string>

#include "dispatch/registry.hpp"
#include "rayo/error.hpp"
#include "rayo/quant.hpp"
#include "vulkan/vulkan_backend.hpp"

namespace rayo::vulkan {

using detail::TensorView;

namespace {

// Mirrors the push constants of matmul_tiled.glsl and matmul_coopmat.comp.
struct MatmulParams {
    std::uint32_t m, n, k;
    std::uint32_t a_offset, b_offset, out_offset;
    std::uint32_t b_row_bytes;
};

constexpr std::uint32_t tile_m = 64, tile_n = 64;
// Up to this many rows of x, K-quant linear takes the integer GEMV (quant_gemv.comp's MAX_ROWS):
// it reads each weight byte once for all rows; beyond, the GEMM's dequantized tiles pay off.
constexpr std::size_t gemv_max_rows = 16;

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
    std::uint32_t const a_type = type_code(a.dtype), b_type = type_code(b.dtype);
    if (shape.m == 0 || shape.n == 0) return;
    if (quantized && shape.m <= gemv_max_rows) {
        linear_quantized_gemv(shape, a, b, out);
        return;
    }
    std::size_t const groups_x = (shape.n + tile_n - 1) / tile_n, groups_y = (shape.m + tile_m - 1) / tile_m;

    std::lock_guard lock(mutex_);
    reclaim();
    if (groups_x > max_groups() || groups_y > max_groups())
        throw Unsupported("vulkan matmul: " + std::to_string(shape.m) + "x" + std::to_string(shape.n) +
                          " needs more workgroups than one dispatch may have");
    auto const& physical = device_.physical();
    if (physical.properties.limits.maxComputeWorkGroupInvocations < 256)
        throw Unsupported("vulkan matmul: the device runs fewer than 256 invocations per workgroup");
    Binding const ba = bind(a, bytes_for(a.dtype, shape.m * shape.k), Access::read, "matmul a");
    Binding const bb = bind(b, bytes_for(b.dtype, shape.k * shape.n), Access::read, "matmul b");
    Binding const bo = bind(out, shape.m * shape.n * sizeof(float), Access::write, "matmul output");
    MatmulParams params{};
    params.m = static_cast<std::uint32_t>(shape.m);
    params.n = static_cast<std::uint32_t>(shape.n);
    params.k = static_cast<std::uint32_t>(shape.k);
    params.a_offset = ba.element_offset(size_of(a.dtype));
    params.b_offset = quantized ? static_cast<std::uint32_t>(bb.offset) : bb.element_offset(size_of(b.dtype));
    params.out_offset = bo.element_offset(sizeof(float));
    params.b_row_bytes = static_cast<std::uint32_t>(bytes_for(b.dtype, shape.k));
    std::uint32_t const transposed = shape.b_transposed ? 1 : 0;
    Groups const groups{static_cast<std::uint32_t>(groups_x), static_cast<std::uint32_t>(groups_y), 1};

    if (a.dtype == DType::f16 && b.dtype == DType::f16 && physical.cooperative_matrix_n != 0 && use_cooperative_matrix_) {
        // Tensor cores: f16 products, f32 accumulation (untested on lavapipe, which lacks the extension).
        dispatch(Shader::matmul_coopmat, {0, 128, 0, transposed, physical.cooperative_matrix_n}, {ba, bb, bo}, params,
                 groups);
    } else {
        bool const reads_f16 = a.dtype == DType::f16 || b.dtype == DType::f16;
        Shader const shader = reads_f16 && physical.storage_buffer_16bit && use_storage16_ ? Shader::matmul_storage16
                                                                                           : Shader::matmul;
        dispatch(shader, {a_type, 256, b_type, transposed}, {ba, bb, bo}, params, groups);
    }
    stream_.submit_if_large();
}

void VulkanBackend::use_matmul_features(bool storage16, bool cooperative_matrix) {
    std::lock_guard lock(mutex_);
    use_storage16_ = storage16;
    use_cooperative_matrix_ = cooperative_matrix;
}

void use_matmul_features(Device device, bool storage16, bool cooperative_matrix) {
    auto* b = dynamic_cast<VulkanBackend*>(&detail::Registry::instance().backend(device));
    if (!b) throw Error(device.id() + " is not a Vulkan device");
    b->use_matmul_features(storage16, cooperative_matrix);
}

}  // namespace rayo::vulkan
