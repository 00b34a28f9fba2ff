// The matmul family on CUDA: f32 x f32 runs on the CUDA cores (f32 FMA, exact products); a 16-bit b
// on the tensor cores with f32 accumulation (on Hopper, large f16/bf16 products on the warpgroup
// MMAs, their tiles copied by the TMA through tensor maps encoded here per launch), an f32 a rounded to b's type on the way
// (rayo::ptx::kernels::gemm says how accurate that is); the GEMM variant comes from
// rayo::ptx::kernels::choose_gemm_config. K-quant weights go to linear_kquant (quantization.cpp),
// linear's bias then added by the element-wise add.
#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

#include "cuda/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/ptx/kernels/gemm.hpp"
#include "rayo/quant.hpp"

namespace rayo::cuda::ops {

namespace {

bool is_kquant(DType t) { return t == DType::q4_k || t == DType::q6_k; }
bool is_floating(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

ptx::Type element_type(DType t) {
    switch (t) {
        case DType::f16: return ptx::Type::f16;
        case DType::bf16: return ptx::Type::bf16;
        default: return ptx::Type::f32;
    }
}

std::uint64_t element_bytes(DType t) { return t == DType::f32 ? 4 : 2; }

bool has_bias(OpViews const& v) { return v.in.size() > 2 && v.in[2].present; }

// linear's bias added to every row of a K-quant product (whose kernels have no epilogue): out +=
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

}  // namespace

Support supports(KernelRunner const&, op::Matmul const& d, OpViews const& v) {
    auto const& shape = d.shape;
    DType const a = v.in[0].dtype, b = v.in[1].dtype;
    if (v.out[0].dtype != DType::f32 || !is_floating(a) || !(is_floating(b) || is_kquant(b)) ||
        (a != b && a != DType::f32))
        return Support::no("cuda matmul: " + std::string(to_string(a)) + " x " + std::string(to_string(b)) + " -> " +
                           std::string(to_string(v.out[0].dtype)) + " is not a GEMM rayo runs");
    if (is_kquant(b) && (!shape.b_transposed || shape.k % quant_block_values != 0 || shape.k == 0))
        return Support::no("cuda: K-quant weights are taken by linear(x, w) with f32 x and rows of whole blocks (k > 0)");
    constexpr std::size_t size_limit = std::numeric_limits<std::uint32_t>::max();
    if (shape.m > size_limit || shape.n > size_limit || shape.k > size_limit)
        return Support::no("cuda matmul: " + std::to_string(shape.m) + "x" + std::to_string(shape.n) + "x" +
                           std::to_string(shape.k) + " has a size of 2^32 or more");
    if (!detail::all_contiguous(v)) return Support::no("cuda matmul takes contiguous operands");
    if (shape.batch > 65535) return Support::no("cuda matmul: a batch of more than 65535 products (the grid's y)");
    return Support::yes();
}

void run(KernelRunner& runner, op::Matmul const& d, OpViews const& v) {
    auto const& shape = d.shape;
    TensorView const &a = v.in[0], &b = v.in[1], &out = v.out[0];
    if (is_kquant(b.dtype)) {
        linear_kquant(runner, shape, a, b, out);
        if (has_bias(v)) add_bias_rows(runner, shape, v.in[2], out);
        return;
    }
    if (shape.m == 0 || shape.n == 0) return;
    ptx::Type const a_type = element_type(a.dtype), b_type = element_type(b.dtype);

    std::uint64_t a_address = runner.address(a), b_address = runner.address(b), out_address = runner.address(out);
    // The bytes between consecutive products' matrices.
    std::uint64_t a_batch = shape.a_batch * element_bytes(a.dtype), b_batch = shape.b_batch * element_bytes(b.dtype),
                  out_batch = shape.m * shape.n * 4;
    // 16-byte accesses need 16-byte aligned tensors whose rows are whole 16-byte multiples.
    std::uint64_t const b_row = shape.b_transposed ? shape.k : shape.n;
    bool const aligned = (a_address | b_address | out_address | a_batch | b_batch | out_batch) % 16 == 0 &&
                         shape.k * element_bytes(a.dtype) % 16 == 0 && b_row * element_bytes(b.dtype) % 16 == 0 &&
                         shape.n * 4 % 16 == 0;
    ptx::kernels::GemmConfig config = ptx::kernels::choose_gemm_config(
        shape.m, shape.n, shape.k, a_type, b_type, shape.b_transposed, aligned, runner.multiprocessor_count(),
        runner.target(), shape.batch, runner.encodes_tensor_maps());
    config.bias = has_bias(v);
    auto m = static_cast<std::uint32_t>(shape.m), n = static_cast<std::uint32_t>(shape.n), k = static_cast<std::uint32_t>(shape.k);
    auto batch = static_cast<std::uint32_t>(shape.batch);
    ptx::kernels::GemmLaunch const launch = ptx::kernels::gemm_launch(
        config, m, n, batch, static_cast<std::uint32_t>(runner.multiprocessor_count()));
    LaunchDims const dims{.grid = {launch.grid, launch.grid_y, 1},
                          .block = {launch.threads, 1, 1},
                          .shared_bytes = launch.shared_bytes};
    // The kernel's name spells every generator parameter; the target completes the key.
    std::string const key = "matmul/" + ptx::kernels::gemm_name(config) + "/" + std::string(ptx::to_string(runner.target()));
    // The parameters the variant declares, in order (rayo/ptx/kernels/gemm.hpp), on the stack: no
    // allocation per launch.
    std::uint64_t bias_address = config.bias ? runner.address(v.in[2]) : 0;
    std::array<void*, 12> arguments{};
    std::size_t count = 0;
    std::array<ptx::TensorMap, 2> maps;
    std::uint32_t a_step = a_batch != 0 ? 1 : 0, b_step = b_batch != 0 ? 1 : 0;
    if (config.algorithm == ptx::kernels::GemmAlgorithm::wgmma) {
        auto const specs = ptx::kernels::gemm_tensor_maps(
            config, {.a = a_address, .b = b_address, .m = shape.m, .n = shape.n, .k = shape.k, .batch = shape.batch,
                     .a_batch_bytes = a_batch, .b_batch_bytes = b_batch});
        for (std::size_t i = 0; i < maps.size(); ++i) {
            maps[i] = runner.encode_tensor_map(specs[i]);
            arguments[count++] = &maps[i];
        }
        for (void* p : {static_cast<void*>(&out_address), static_cast<void*>(&m), static_cast<void*>(&n), static_cast<void*>(&k)})
            arguments[count++] = p;
        if (config.batched)
            for (void* p : {static_cast<void*>(&batch), static_cast<void*>(&a_step), static_cast<void*>(&b_step),
                            static_cast<void*>(&out_batch)})
                arguments[count++] = p;
    } else {
        for (void* p : {static_cast<void*>(&a_address), static_cast<void*>(&b_address), static_cast<void*>(&out_address),
                        static_cast<void*>(&m), static_cast<void*>(&n), static_cast<void*>(&k)})
            arguments[count++] = p;
        if (config.batched)
            for (void* batch_step : {static_cast<void*>(&a_batch), static_cast<void*>(&b_batch), static_cast<void*>(&out_batch)})
                arguments[count++] = batch_step;
    }
    if (config.bias) arguments[count++] = &bias_address;
    runner.launch(key, [config] { return ptx::kernels::gemm(config); }, dims, std::span(arguments.data(), count));
}

}  // namespace rayo::cuda::ops
