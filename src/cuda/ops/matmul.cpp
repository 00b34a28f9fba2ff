// The matmul family on CUDA: f32 x f32 runs on the CUDA cores (f32 FMA, exact products), or, where
// the caller allows TF32, on Hopper's warpgroup MMAs (b given as [k, n] transposed into a temporary
// [n, k] first: wgmma reads tf32 K-major only); a 16-bit b
// on the tensor cores with f32 accumulation (on Hopper, large f16/bf16 products on the warpgroup
// MMAs, their tiles copied by the TMA through tensor maps encoded here per launch), an f32 a
// rounded to b's type on the way (rayo::ptx::kernels::gemm says how accurate that is); the GEMM variant comes from
// rayo::ptx::kernels::choose_gemm_config. Block-quantized weights (q4_k, q5_k, q6_k, q8_0, q4_0) go to
// linear_kquant (quantization.cpp),
// linear's bias added by its one-row GEMV as it stores, else by the element-wise add.
#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/environment.hpp"
#include "cuda/ops/ops.hpp"
#include "dispatch/linear_input.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/ptx/kernels/gemm.hpp"
#include "rayo/ptx/kernels/quant.hpp"
#include "rayo/quant.hpp"

namespace rayo::cuda::ops {

namespace {

// Block-quantized weights, which linear_kquant (quantization.cpp) multiplies.
bool is_kquant(DType t) {
    return t == DType::q4_k || t == DType::q5_k || t == DType::q6_k || t == DType::q8_0 || t == DType::q4_0;
}
bool is_floating(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

ptx::Type element_type(DType t) {
    switch (t) {
        case DType::f16: return ptx::Type::f16;
        case DType::bf16: return ptx::Type::bf16;
        default: return ptx::Type::f32;
    }
}

bool has_bias(OpViews const& v) { return v.in.size() > 2 && v.in[2].present; }

// linear's bias added to every row of a K-quant product whose kernel has no epilogue: out +=
// bias seen as [rows, n] with a row stride of 0, by the element-wise add.
void add_bias_rows(KernelRunner& runner, op::MatmulShape const& shape, TensorView const& bias, TensorView const& out) {
    auto const rows = static_cast<std::int64_t>(shape.batch * shape.m), n = static_cast<std::int64_t>(shape.n);
    TensorView product = out, repeated = bias;
    for (TensorView* t : {&product, &repeated}) {
        t->rank = 2;
        t->shape[0] = rows;
        t->shape[1] = n;
        t->strides[1] = 1;
    }
    product.strides[0] = n;
    repeated.strides[0] = 0;
    std::array<TensorView, 2> const in{product, repeated};
    run(runner, op::Binary{.op = Op::add}, OpViews{in, std::span<TensorView const>(&product, 1)});
}

// RAYO_CUDA_WGMMA, a tuning knob read once: "off" keeps every product off the wgmma kernel;
// "MxN,S,G" runs every product the kernel can take (aligned f16 x f16 or bf16 x bf16 on sm_90)
// on it, whatever its size, with an m x n tile, S slots and groups of G tile rows; unset or empty:
// the default choice. So a sweep on a GPU needs no rebuild. An invalid value makes those products
// throw, naming the form.
struct ForcedWgmma {
    bool off = false;
    ptx::kernels::GemmConfig config;
};
std::optional<ForcedWgmma> parse_wgmma_knob(std::string_view text) {
    if (text == "off") return ForcedWgmma{.off = true, .config = {}};
    unsigned values[4] = {};
    char const* at = text.data();
    char const* const end = text.data() + text.size();
    for (int i = 0; i < 4; ++i) {
        auto const [next, error] = std::from_chars(at, end, values[i]);
        bool const last = i == 3;
        if (error != std::errc{} || (last ? next != end : next == end || *next != (i == 0 ? 'x' : ',')))
            throw Error(
                "RAYO_CUDA_WGMMA='" + std::string(text.substr(0, 64)) +
                "' is neither off nor MxN,S,G (tile rows x columns, slots, group of tile rows; e.g. 128x256,4,8)");
        at = last ? next : next + 1;
    }
    ForcedWgmma forced;
    forced.config.algorithm = ptx::kernels::GemmAlgorithm::wgmma;
    forced.config.tile = {values[0], values[1], 0};
    forced.config.stages = values[2];
    forced.config.group_m = values[3];
    return forced;
}
std::optional<ForcedWgmma> const& wgmma_knob() {
    static std::optional<ForcedWgmma> const knob = []() -> std::optional<ForcedWgmma> {
        auto const env = detail::environment("RAYO_CUDA_WGMMA");
        if (!env || env->empty()) return std::nullopt;
        return parse_wgmma_knob(*env);
    }();
    return knob;
}

// 16-byte accesses need 16-byte aligned tensors whose rows, and the steps between a batch's
// matrices, are whole 16-byte multiples.
bool operands_aligned(op::MatmulShape const& shape, GemmAddresses const& at) {
    std::uint64_t const a_bytes = ptx::bytes_of(at.a_type), b_bytes = ptx::bytes_of(at.b_type);
    std::uint64_t const b_row = shape.b_transposed ? shape.k : shape.n;
    return (at.a | at.b | at.out | shape.a_batch * a_bytes | shape.b_batch * b_bytes | shape.m * shape.n * 4) % 16 ==
               0 &&
           shape.k * a_bytes % 16 == 0 && b_row * b_bytes % 16 == 0 && shape.n * 4 % 16 == 0;
}

}  // namespace

Support supports(KernelRunner const& runner, op::Matmul const& d, OpViews const& v) {
    if (d.input != op::LinearInput::x)
        return detail::supports_with_formed_input(
            d, v, detail::formed_input_view(v.in[0], detail::unbound_buffer),
            [&](auto const& op, OpViews const& views) { return supports(runner, op, views); });
    auto const& shape = d.shape;
    DType const a = v.in[0].dtype, b = v.in[1].dtype;
    if (v.out[0].dtype != DType::f32 || !is_floating(a) || !(is_floating(b) || is_kquant(b)) ||
        (a != b && a != DType::f32))
        return Support::no("cuda matmul: " + std::string(to_string(a)) + " x " + std::string(to_string(b)) + " -> " +
                           std::string(to_string(v.out[0].dtype)) + " is not a GEMM rayo runs");
    if (is_kquant(b) && (!shape.b_transposed || shape.k % block_elements(b) != 0 || shape.k == 0))
        return Support::no(
            "cuda: block-quantized weights are taken by linear(x, w) with f32 x and rows of whole "
            "blocks (k > 0)");
    constexpr std::size_t size_limit = std::numeric_limits<std::uint32_t>::max();
    if (shape.m > size_limit || shape.n > size_limit || shape.k > size_limit)
        return Support::no("cuda matmul: " + std::to_string(shape.m) + "x" + std::to_string(shape.n) + "x" +
                           std::to_string(shape.k) + " has a size of 2^32 or more");
    if (!detail::all_contiguous(v)) return Support::no("cuda matmul takes contiguous operands");
    if (shape.batch > 65535) return Support::no("cuda matmul: a batch of more than 65535 products (the grid's y)");
    return Support::yes();
}

bool warpgroup_mma_enabled(KernelRunner const& runner) {
    std::optional<ForcedWgmma> const& knob = wgmma_knob();
    return ptx::compute_capability(runner.target()) >= 90 && runner.encodes_tensor_maps() && !(knob && knob->off);
}

// The configuration for a product of these types and alignment, RAYO_CUDA_WGMMA applied.
ptx::kernels::GemmConfig gemm_config(KernelRunner const& runner, op::MatmulShape const& shape, ptx::Type a_type,
                                     ptx::Type b_type, bool aligned) {
    bool const wgmma = warpgroup_mma_enabled(runner);
    ptx::kernels::GemmConfig config = ptx::kernels::choose_gemm_config(
        shape.m, shape.n, shape.k, a_type, b_type, shape.b_transposed, aligned, runner.multiprocessor_count(),
        runner.target(), shape.batch, wgmma, shape.tf32);
    std::optional<ForcedWgmma> const& knob = wgmma_knob();
    bool const tensor_core_types = b_type != ptx::Type::f32 || (shape.tf32 && shape.b_transposed);
    if (knob && wgmma && aligned && a_type == b_type && tensor_core_types) {
        config = knob->config;
        config.a = config.b = b_type;
        config.b_transposed = shape.b_transposed;
        config.batched = shape.batch > 1;
    }
    return config;
}

bool runs_on_warpgroup_mma(KernelRunner const& runner, op::MatmulShape const& shape) {
    return gemm_config(runner, shape, ptx::Type::f16, ptx::Type::f16, true).algorithm ==
           ptx::kernels::GemmAlgorithm::wgmma;
}

void gemm(KernelRunner& runner, op::MatmulShape const& shape, GemmAddresses const& at) {
    if (shape.m == 0 || shape.n == 0) return;
    std::uint64_t a_address = at.a, b_address = at.b, out_address = at.out, bias_address = at.bias;
    // The bytes between consecutive products' matrices.
    std::uint64_t a_batch = shape.a_batch * ptx::bytes_of(at.a_type),
                  b_batch = shape.b_batch * ptx::bytes_of(at.b_type), out_batch = shape.m * shape.n * 4;
    bool const aligned = operands_aligned(shape, at);
    ptx::kernels::GemmConfig config = gemm_config(runner, shape, at.a_type, at.b_type, aligned);
    config.bias = at.bias != 0;
    auto m = static_cast<std::uint32_t>(shape.m), n = static_cast<std::uint32_t>(shape.n),
         k = static_cast<std::uint32_t>(shape.k);
    auto batch = static_cast<std::uint32_t>(shape.batch);
    ptx::kernels::GemmLaunch const launch =
        ptx::kernels::gemm_launch(config, m, n, batch, static_cast<std::uint32_t>(runner.multiprocessor_count()));
    LaunchDims const dims{
        .grid = {launch.grid, launch.grid_y, 1}, .block = {launch.threads, 1, 1}, .shared_bytes = launch.shared_bytes};
    // The kernel's name spells every generator parameter; the target completes the key.
    std::string const key =
        "matmul/" + ptx::kernels::gemm_name(config) + "/" + std::string(ptx::to_string(runner.target()));
    // The parameters the variant declares, in order (rayo/ptx/kernels/gemm.hpp), on the stack: no
    // allocation per launch.
    std::array<void*, 12> arguments{};
    std::size_t count = 0;
    std::array<ptx::TensorMap, 2> maps;
    std::uint32_t a_step = a_batch != 0 ? 1 : 0, b_step = b_batch != 0 ? 1 : 0;
    if (config.algorithm == ptx::kernels::GemmAlgorithm::wgmma) {
        auto const specs = ptx::kernels::gemm_tensor_maps(config, {.a = a_address,
                                                                   .b = b_address,
                                                                   .m = shape.m,
                                                                   .n = shape.n,
                                                                   .k = shape.k,
                                                                   .batch = shape.batch,
                                                                   .a_batch_bytes = a_batch,
                                                                   .b_batch_bytes = b_batch});
        for (std::size_t i = 0; i < maps.size(); ++i) {
            maps[i] = runner.encode_tensor_map(specs[i]);
            arguments[count++] = &maps[i];
        }
        for (void* p :
             {static_cast<void*>(&out_address), static_cast<void*>(&m), static_cast<void*>(&n), static_cast<void*>(&k)})
            arguments[count++] = p;
        if (config.batched)
            for (void* p : {static_cast<void*>(&batch), static_cast<void*>(&a_step), static_cast<void*>(&b_step),
                            static_cast<void*>(&out_batch)})
                arguments[count++] = p;
    } else {
        for (void* p :
             {static_cast<void*>(&a_address), static_cast<void*>(&b_address), static_cast<void*>(&out_address),
              static_cast<void*>(&m), static_cast<void*>(&n), static_cast<void*>(&k)})
            arguments[count++] = p;
        if (config.batched)
            for (void* batch_step :
                 {static_cast<void*>(&a_batch), static_cast<void*>(&b_batch), static_cast<void*>(&out_batch)})
                arguments[count++] = batch_step;
    }
    if (config.bias) arguments[count++] = &bias_address;
    runner.launch(
        key, [config] { return ptx::kernels::gemm(config); }, dims, std::span(arguments.data(), count));
}

namespace {

// An f32 product allowed to run as TF32 with b given as [k, n]: b transposed into a temporary
// [n, k] (wgmma reads tf32 K-major only; the copy costs 2·k·n·4 bytes of traffic, a few percent of
// a large product), then the wgmma GEMM. False where the product would not take the wgmma kernel
// (then nothing ran).
bool tf32_with_b_transposed(KernelRunner& runner, op::MatmulShape const& shape, GemmAddresses const& at) {
    op::MatmulShape transposed = shape;
    transposed.b_transposed = true;
    std::size_t const matrices = shape.b_batch != 0 ? shape.batch : 1;
    if (shape.b_batch != 0) transposed.b_batch = shape.n * shape.k;
    GemmAddresses rows_at = at;
    rows_at.b = 0;  // the temporary, 16-byte aligned
    if (!operands_aligned(transposed, rows_at) || shape.n > 65535u * 32 || matrices > 65535 ||
        shape.k > std::numeric_limits<std::uint32_t>::max() / 32 ||
        gemm_config(runner, transposed, ptx::Type::f32, ptx::Type::f32, true).algorithm !=
            ptx::kernels::GemmAlgorithm::wgmma)
        return false;
    TemporaryBuffer b_rows(runner, matrices * shape.n * shape.k * 4);
    transpose_matrices(runner,
                       {.batch = matrices,
                        .rows = shape.n,
                        .cols = shape.k,
                        .in_stride = shape.n,
                        .out_stride = shape.k,
                        .in_batch = shape.b_batch,
                        .out_batch = shape.n * shape.k},
                       4, b_rows.address(), at.b);
    rows_at.b = b_rows.address();
    gemm(runner, transposed, rows_at);
    return true;
}

}  // namespace

void run(KernelRunner& runner, op::Matmul const& d, OpViews const& v) {
    if (d.input != op::LinearInput::x) {
        TensorView const* bias = has_bias(v) ? &v.in[2] : nullptr;
        FormedInput const formed{.second = v.in[3], .rms_norm = d.input == op::LinearInput::rms_norm, .eps = d.eps};
        if (is_kquant(v.in[1].dtype) && linear_kquant_formed(runner, d.shape, v.in[0], v.in[1], bias, formed, v.out[0]))
            return;
        TemporaryTensor const input(runner, v.in[0].numel() * sizeof(float));
        detail::run_with_formed_input(d, v, detail::formed_input_view(v.in[0], input.handle()),
                                      [&](auto const& op, OpViews const& views) { run(runner, op, views); });
        return;
    }
    auto const& shape = d.shape;
    TensorView const &a = v.in[0], &b = v.in[1], &out = v.out[0];
    if (is_kquant(b.dtype)) {
        TensorView const* bias = has_bias(v) ? &v.in[2] : nullptr;
        if (!linear_kquant(runner, shape, a, b, bias, out) && bias) add_bias_rows(runner, shape, *bias, out);
        return;
    }
    if (shape.m == 0 || shape.n == 0) return;
    GemmAddresses at{.a = runner.address(a),
                     .b = runner.address(b),
                     .out = runner.address(out),
                     .bias = has_bias(v) ? runner.address(v.in[2]) : 0,
                     .a_type = element_type(a.dtype),
                     .b_type = element_type(b.dtype)};
    if (a.dtype == DType::f32 && b.dtype == DType::f32 && shape.tf32 && !shape.b_transposed &&
        tf32_with_b_transposed(runner, shape, at))
        return;
    // f32 x with f16 weights on Hopper: x rounded to f16 once (as the mma.sync kernel rounds it on
    // its way into shared memory), then the warpgroup-MMA GEMM.
    std::size_t const values = shape.batch * shape.m * shape.k;
    bool const x_contiguous = shape.batch == 1 || shape.a_batch == shape.m * shape.k;
    if (a.dtype == DType::f32 && b.dtype == DType::f16 && at.a % 16 == 0 && values % 8 == 0 && x_contiguous &&
        values <= std::numeric_limits<std::uint32_t>::max() && runs_on_warpgroup_mma(runner, shape)) {
        TemporaryBuffer x_half(runner, values * 2);
        ptx::kernels::GemmActivationsConfig const convert{.threads = 256};
        auto const blocks = static_cast<unsigned>((values / 8 + convert.threads - 1) / convert.threads);
        runner.run(
            "matmul/x_to_f16/t256/" + std::string(ptx::to_string(runner.target())),
            [=] { return ptx::kernels::gemm_activations(convert); },
            LaunchDims{.grid = {blocks, 1, 1}, .block = {convert.threads, 1, 1}}, at.a, x_half.address(),
            static_cast<std::uint32_t>(values));
        at.a = x_half.address();
        at.a_type = ptx::Type::f16;
        gemm(runner, shape, at);
        return;
    }
    gemm(runner, shape, at);
}

}  // namespace rayo::cuda::ops
