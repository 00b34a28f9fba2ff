// The matmul family on the CPU: the packed GEMM (gemm_driver.cpp) for f32, f16 and bf16 operands,
// transposed weights as strides; block-quantized weights go to linear_kquant (quantization.cpp).
// linear's bias is added to the product's rows afterwards, for either. A formed input (swiglu_linear,
// rms_norm_linear) is formed into a scratch buffer of the calling thread first.
#include <algorithm>
#include <string>

#include "cpu/gemm_driver.hpp"
#include "cpu/ops/ops.hpp"
#include "cpu/scratch_buffer.hpp"
#include "dispatch/linear_input.hpp"
#include "dispatch/operand_checks.hpp"
#include "rayo/quant.hpp"

namespace rayo::cpu::ops {

namespace {

// The weight block types (q8_k is for activations only).
bool is_kquant(DType t) { return block_elements(t) > 1 && t != DType::q8_k; }
bool is_floating(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

GemmType gemm_type(DType t) {
    switch (t) {
        case DType::f16: return GemmType::f16;
        case DType::bf16: return GemmType::bf16;
        default: return GemmType::f32;
    }
}

}  // namespace

Support supports(KernelRunner const& r, op::Matmul const& d, OpViews const& v) {
    if (d.input != op::LinearInput::x)
        return detail::supports_with_formed_input(
            d, v, detail::formed_input_view(v.in[0], detail::unbound_buffer),
            [&](auto const& op, OpViews const& views) { return supports(r, op, views); });
    DType const a = v.in[0].dtype, b = v.in[1].dtype;
    if (v.out[0].dtype != DType::f32 || !is_floating(a) || !(is_floating(b) || is_kquant(b)))
        return Support::no("cpu matmul: " + std::string(to_string(a)) + " x " + std::string(to_string(b)) + " -> " +
                           std::string(to_string(v.out[0].dtype)) + " has no kernel");
    if (is_kquant(b) && (a != DType::f32 || !d.shape.b_transposed || d.shape.k % block_elements(b) != 0))
        return Support::no(
            "cpu: block-quantized weights are taken by linear(x, w) with f32 x and rows of whole "
            "blocks");
    if (!detail::all_contiguous(v)) return Support::no("cpu matmul takes contiguous operands");
    return Support::yes();
}

namespace {

// The f32, f16 and bf16 products: one GEMM per product of the batch, each split over the pool.
void gemm_batch(KernelRunner& r, op::MatmulShape const& shape, TensorView const& a, TensorView const& b,
                TensorView const& out) {
    auto const& k = r.kernels();
    GemmArgs args;
    args.m = shape.m;
    args.n = shape.n;
    args.k = shape.k;
    args.a = data<void const>(a);
    args.a_type = gemm_type(a.dtype);
    args.a_row = shape.k;
    args.a_col = 1;
    args.b = data<void const>(b);
    args.b_type = gemm_type(b.dtype);
    if (shape.b_transposed) {  // b is [n, k]: B(p, j) = b[j*k + p]
        args.b_row = 1;
        args.b_col = shape.k;
    } else {
        args.b_row = shape.n;
        args.b_col = 1;
    }
    args.c = data<float>(out);
    args.ldc = shape.n;
    std::size_t const a_step = bytes_for(a.dtype, shape.a_batch), b_step = bytes_for(b.dtype, shape.b_batch);
    for (std::size_t i = 0; i < shape.batch; ++i) {
        gemm(args, k);
        args.a = static_cast<std::byte const*>(args.a) + a_step;
        args.b = static_cast<std::byte const*>(args.b) + b_step;
        args.c += shape.m * shape.n;
    }
}

}  // namespace

void run(KernelRunner& r, op::Matmul const& d, OpViews const& v) {
    if (d.input != op::LinearInput::x) {
        thread_local ScratchBuffer formed;
        auto const buffer = reinterpret_cast<std::uintptr_t>(formed.get(v.in[0].numel()));
        detail::run_with_formed_input(d, v, detail::formed_input_view(v.in[0], buffer),
                                      [&](auto const& op, OpViews const& views) { run(r, op, views); });
        return;
    }
    auto const& shape = d.shape;
    TensorView const &a = v.in[0], &b = v.in[1];
    if (is_kquant(b.dtype))
        linear_kquant(r, shape, a, b, v.out[0]);
    else
        gemm_batch(r, shape, a, b, v.out[0]);
    if (v.in.size() > 2 && v.in[2].present) {  // the bias, added to every row of the product
        float const* bias = data<float const>(v.in[2]);
        float* out = data<float>(v.out[0]);
        r.pool().parallel_for(shape.batch * shape.m,
                              std::max<std::size_t>(1, elementwise_grain / std::max<std::size_t>(shape.n, 1)),
                              [&](std::size_t r0, std::size_t r1) {
                                  for (std::size_t row = r0; row < r1; ++row)
                                      for (std::size_t j = 0; j < shape.n; ++j) out[row * shape.n + j] += bias[j];
                              });
    }
}

}  // namespace rayo::cpu::ops
