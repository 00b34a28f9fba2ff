// The tolerance of every (op, element type) the harness checks, and where a backend documents a
// different accuracy, its own column. docs/ops.md states the same figures to users.
#include "ops/tolerances.hpp"

#include <stdexcept>
#include <string>

namespace rayo::test::ops {

namespace {

constexpr Tolerance exact{.ulp = 0};
constexpr Tolerance correctly_rounded{.ulp = 0.5};
constexpr Tolerance ulps(double u) { return {.ulp = u}; }
constexpr Tolerance relative(double rel, double abs = 0) { return {.rel = rel, .abs = abs}; }
// Products: rel of √k·Σ|a·b|, and an operand rounded on the way.
constexpr Tolerance product(double rel, double rounding = 0) { return {.rel = rel, .rounding = rounding}; }

struct Row {
    Op op;
    DType dtype;
    Tolerance cpu, vulkan, cuda;
};

constexpr Row same(Op op, DType dtype, Tolerance t) { return {op, dtype, t, t, t}; }

// f16 and bf16 are computed in f32 and rounded once to the type, and ulps count the type's units:
// ops whose f32 result is exact (relu, clip, abs, neg) give the exact value; maximum and minimum the
// exact value rounded to nearest (the scalar operand is an f32), 0.5 ulp; the others the exact value
// rounded to nearest, or its other neighbour where it lies within the f32 computation's few ulp
// (under 2^-10 ulp of the type) of a rounding midpoint: 0.5 + 2^-10.
constexpr Tolerance nearly_correctly_rounded = ulps(0.5 + 0x1p-10);
#define RAYO_SIXTEEN_BIT_ROWS(OP, TOLERANCE) same(OP, DType::f16, TOLERANCE), same(OP, DType::bf16, TOLERANCE)
#define RAYO_SIXTEEN_BIT_ROWS_OF(OP, F16, BF16) same(OP, DType::f16, F16), same(OP, DType::bf16, BF16)

// The rows. Element-wise transcendentals: within 4 ulp over their documented ranges (the CPU's
// polynomials, which the shaders and the PTX generators repeat). Vulkan's sqrt and division refine
// the device's approximations by one Newton step (1 ulp). Sums accumulate in double (CPU, CUDA) or
// double-float pairs (Vulkan): 1e-6 of Σ|x|. Row ops: a few ulp of each term, stated relative to the
// result (softmax), to |result| + 1 (log_softmax), or to the normalised value (norms). Products:
// 1e-5·√k of Σ|a·b| in f32; 16-bit operands on tensor cores add f32 accumulation of exact products
// in another order (5e-5·√k), and an f32 x rounded to the weights' type on the way (2^-11 of Σ|a·b|
// for f16, 2^-8 for bf16) where the GPU does so. K-quant linear: 1e-3 of ‖ref‖ in ‖y − ref‖, against
// the product with the dequantized weights (the activations' q8_k pair errs ~1e-4); 1e-5 on Vulkan,
// whose GEMV reads x as f32.
constexpr Row rows[] = {
    same(Op::relu, DType::f32, exact),
    same(Op::leaky_relu, DType::f32, correctly_rounded),
    same(Op::elu, DType::f32, ulps(4)),
    same(Op::sigmoid, DType::f32, ulps(4)),
    same(Op::tanh, DType::f32, ulps(4)),
    same(Op::silu, DType::f32, ulps(4)),
    same(Op::gelu, DType::f32, ulps(4)),
    same(Op::gelu_tanh, DType::f32, ulps(4)),
    same(Op::clip, DType::f32, exact),
    same(Op::exp, DType::f32, ulps(4)),
    same(Op::log, DType::f32, ulps(4)),
    {Op::sqrt, DType::f32, correctly_rounded, ulps(1), correctly_rounded},
    same(Op::abs, DType::f32, exact),
    same(Op::neg, DType::f32, exact),
    same(Op::add, DType::f32, correctly_rounded),
    same(Op::sub, DType::f32, correctly_rounded),
    same(Op::mul, DType::f32, correctly_rounded),
    {Op::div, DType::f32, correctly_rounded, ulps(1), correctly_rounded},
    same(Op::maximum, DType::f32, exact),
    same(Op::minimum, DType::f32, exact),
    same(Op::swiglu, DType::f32, ulps(5)),  // silu's 4 ulps, then one rounded product
    RAYO_SIXTEEN_BIT_ROWS(Op::relu, exact),
    RAYO_SIXTEEN_BIT_ROWS(Op::leaky_relu, nearly_correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::elu, nearly_correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::sigmoid, nearly_correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::tanh, nearly_correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::silu, nearly_correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::gelu, nearly_correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::gelu_tanh, nearly_correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::clip, exact),
    RAYO_SIXTEEN_BIT_ROWS(Op::exp, nearly_correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::log, nearly_correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::sqrt, nearly_correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::abs, exact),
    RAYO_SIXTEEN_BIT_ROWS(Op::neg, exact),
    RAYO_SIXTEEN_BIT_ROWS(Op::add, nearly_correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::sub, nearly_correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::mul, nearly_correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::div, nearly_correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::maximum, correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::minimum, correctly_rounded),
    RAYO_SIXTEEN_BIT_ROWS(Op::swiglu, nearly_correctly_rounded),
    same(Op::sum, DType::f32, relative(1e-6)),
    same(Op::mean, DType::f32, relative(1e-6)),
    same(Op::max, DType::f32, exact),
    same(Op::min, DType::f32, exact),
    same(Op::argmax, DType::f32, exact),
    same(Op::argmin, DType::f32, exact),
    same(Op::dot, DType::f32, relative(1e-6)),
    // f16 and bf16 inputs are exact in f32 (and so are their products): the same accumulation and
    // the same f32 results as above.
    RAYO_SIXTEEN_BIT_ROWS(Op::sum, relative(1e-6)),
    RAYO_SIXTEEN_BIT_ROWS(Op::mean, relative(1e-6)),
    RAYO_SIXTEEN_BIT_ROWS(Op::max, exact),
    RAYO_SIXTEEN_BIT_ROWS(Op::min, exact),
    RAYO_SIXTEEN_BIT_ROWS(Op::argmax, exact),
    RAYO_SIXTEEN_BIT_ROWS(Op::argmin, exact),
    RAYO_SIXTEEN_BIT_ROWS(Op::dot, relative(1e-6)),
    // cast checks its results bit for bit against the float64 reference (conversion_cases.cpp).
    same(Op::cast, DType::f32, exact),
    same(Op::cast, DType::f16, exact),
    same(Op::cast, DType::bf16, exact),
    same(Op::cast, DType::i32, exact),
    // The layout ops copy bits: layout_cases.cpp compares them bit for bit.
    same(Op::copy, DType::f32, exact),
    same(Op::copy, DType::f16, exact),
    same(Op::copy, DType::bf16, exact),
    same(Op::copy, DType::i32, exact),
    // The gathers copy rows (a K-quant row decoded as dequantize does): gather_cases.cpp compares
    // them bit for bit.
    same(Op::embedding, DType::f32, exact),
    same(Op::embedding, DType::f16, exact),
    same(Op::embedding, DType::bf16, exact),
    same(Op::embedding, DType::q4_k, exact),
    same(Op::embedding, DType::q6_k, exact),
    same(Op::embedding, DType::q8_0, exact),
    same(Op::embedding, DType::q4_0, exact),
    same(Op::embedding, DType::q5_k, exact),
    same(Op::index_select, DType::f32, exact),
    same(Op::index_select, DType::f16, exact),
    same(Op::index_select, DType::bf16, exact),
    same(Op::index_select, DType::i32, exact),
    same(Op::index_copy, DType::f32, exact),
    same(Op::index_copy, DType::f16, exact),
    same(Op::index_copy, DType::bf16, exact),
    same(Op::index_copy, DType::i32, exact),
    same(Op::softmax, DType::f32, relative(4e-6, 1e-37)),
    same(Op::log_softmax, DType::f32, relative(2e-6, 4e-6)),
    same(Op::layer_norm, DType::f32, relative(4e-6, 1e-6)),
    same(Op::rms_norm, DType::f32, relative(4e-6, 1e-6)),
    // f16 and bf16 rows: computed in f32 (the figures above) and rounded once, against the reference
    // rounded to the type: one ulp of the type (2^-10 of the value for f16, 2^-7 for bf16, where the
    // exact value lies next to a rounding midpoint), and one ulp of the smallest subnormal (the norms:
    // with the absolute error of f32 near zero, as above).
    RAYO_SIXTEEN_BIT_ROWS_OF(Op::softmax, relative(0x1p-10 + 1e-5, 0x1p-24), relative(0x1p-7 + 1e-5, 1e-37)),
    RAYO_SIXTEEN_BIT_ROWS_OF(Op::log_softmax, relative(0x1p-10 + 1e-5, 4e-6), relative(0x1p-7 + 1e-5, 4e-6)),
    RAYO_SIXTEEN_BIT_ROWS_OF(Op::layer_norm, relative(0x1p-10 + 1e-5, 1e-6 + 0x1p-24), relative(0x1p-7 + 1e-5, 1e-6)),
    RAYO_SIXTEEN_BIT_ROWS_OF(Op::rms_norm, relative(0x1p-10 + 1e-5, 1e-6 + 0x1p-24), relative(0x1p-7 + 1e-5, 1e-6)),
    same(Op::matmul, DType::f32, product(1e-5)),
    {Op::matmul, DType::f16, product(1e-5), product(5e-5), product(5e-5)},
    {Op::matmul, DType::bf16, product(1e-5), product(5e-5), product(5e-5)},
    same(Op::linear, DType::f32, product(1e-5)),
    {Op::linear, DType::f16, product(1e-5), product(5e-5, 0x1p-11), product(5e-5, 0x1p-11)},
    {Op::linear, DType::bf16, product(1e-5), product(5e-5), product(5e-5, 0x1p-8)},
    {Op::linear, DType::q4_k, relative(1e-3), relative(1e-5), relative(1e-3)},
    {Op::linear, DType::q6_k, relative(1e-3), relative(1e-5), relative(1e-3)},
    {Op::linear, DType::q8_0, relative(1e-3), relative(1e-5), relative(1e-3)},
    {Op::linear, DType::q4_0, relative(1e-3), relative(1e-5), relative(1e-3)},
    {Op::linear, DType::q5_k, relative(1e-3), relative(1e-5), relative(1e-3)},
    // conv2d: a product of depth K = C/groups·KH·KW (1e-5·√K of Σ|x·w| in f32, 5e-5 where a GPU
    // sums 16-bit products in another order), and for f16 and bf16 the result's rounding to the type
    // (one ulp: 2^-10 or 2^-7 of Σ|x·w|, and f16's smallest subnormal).
    same(Op::conv2d, DType::f32, product(1e-5)),
    {Op::conv2d,
     DType::f16,
     {.rel = 1e-5, .abs = 0x1p-24, .rounding = 0x1p-10},
     {.rel = 5e-5, .abs = 0x1p-24, .rounding = 0x1p-10},
     {.rel = 5e-5, .abs = 0x1p-24, .rounding = 0x1p-10}},
    {Op::conv2d,
     DType::bf16,
     {.rel = 1e-5, .rounding = 0x1p-7},
     {.rel = 5e-5, .rounding = 0x1p-7},
     {.rel = 5e-5, .rounding = 0x1p-7}},
    same(Op::quantize, DType::q4_k, exact),
    same(Op::quantize, DType::q6_k, exact),
    same(Op::quantize, DType::q8_0, exact),
    same(Op::quantize, DType::q4_0, exact),
    same(Op::quantize, DType::q5_k, exact),
    same(Op::quantize, DType::q8_k, exact),
    same(Op::dequantize, DType::q4_k, exact),
    same(Op::dequantize, DType::q6_k, exact),
    same(Op::dequantize, DType::q8_0, exact),
    same(Op::dequantize, DType::q4_0, exact),
    same(Op::dequantize, DType::q5_k, exact),
    same(Op::dequantize, DType::q8_k, exact),
    // rope, relative to each pair's magnitude |(a, b)|: rel of |(a, b)|·|angle| (the angle's error: the
    // GPUs compute it in f32, within 8 ulp of the angle; the CPU in double) and `rounding` of |(a, b)|
    // (the f32 rotation, 8·2^-24; f16 and bf16 one unit of the type more). See rotary_cases.cpp.
    // Vulkan allows 2^-125 more: a driver that flushes f32 subnormals flushes x·cos and y·sin
    // before their sum, whose exact value may be normal.
    {Op::rope,
     DType::f32,
     {.abs = 1e-44, .rounding = 0x1p-21},
     {.rel = 0x1p-21, .abs = 0x1p-125, .rounding = 0x1p-21},
     {.rel = 0x1p-21, .abs = 1e-44, .rounding = 0x1p-21}},
    {Op::rope,
     DType::f16,
     {.abs = 0x1p-24, .rounding = 0x1p-10 + 0x1p-21},
     {.rel = 0x1p-21, .abs = 0x1p-24, .rounding = 0x1p-10 + 0x1p-21},
     {.rel = 0x1p-21, .abs = 0x1p-24, .rounding = 0x1p-10 + 0x1p-21}},
    {Op::rope,
     DType::bf16,
     {.abs = 0x1p-130, .rounding = 0x1p-7 + 0x1p-21},
     {.rel = 0x1p-21, .abs = 0x1p-125, .rounding = 0x1p-7 + 0x1p-21},
     {.rel = 0x1p-21, .abs = 0x1p-130, .rounding = 0x1p-7 + 0x1p-21}},
    // The pools: max picks a value (exact); the mean sums the window in f32 (2^-24 of Σ|x| per cell,
    // the case's scale Σ|x|·cells/divisor) and rounds once to f16 or bf16 (one unit of the type).
    same(Op::max_pool2d, DType::f32, exact),
    same(Op::max_pool2d, DType::f16, exact),
    same(Op::max_pool2d, DType::bf16, exact),
    same(Op::avg_pool2d, DType::f32, {.rel = 0x1p-23}),
    same(Op::avg_pool2d, DType::f16, {.rel = 0x1p-23, .abs = 0x1p-24, .rounding = 0x1p-10}),
    same(Op::avg_pool2d, DType::bf16, {.rel = 0x1p-23, .abs = 0x1p-130, .rounding = 0x1p-7}),
    // Attention: the error of element c of row i, relative to max|v| · (1 + scale·|q_i|·max_j|k_j|)
    // (attention_cases.cpp): the scores' f32 error grows with |q_i|·|k_j|, and moves the output by
    // at most twice that times max|v|. 16-bit types add the output's rounding (one ulp of the type,
    // |out| ≤ max|v|) and the weights rounded to the type on the way into weights·v on a GPU.
    same(Op::attention, DType::f32, relative(2e-6)),
    RAYO_SIXTEEN_BIT_ROWS_OF(Op::attention, relative(0x1p-10 + 0x1p-11 + 1e-5), relative(0x1p-7 + 0x1p-8 + 1e-5)),
};

}  // namespace

#undef RAYO_SIXTEEN_BIT_ROWS
#undef RAYO_SIXTEEN_BIT_ROWS_OF

Tolerance tolerance(Op op, DType dtype, DeviceKind backend) {
    for (Row const& r : rows) {
        if (r.op != op || r.dtype != dtype) continue;
        switch (backend) {
            case DeviceKind::cpu: return r.cpu;
            case DeviceKind::vulkan: return r.vulkan;
            case DeviceKind::cuda: return r.cuda;
        }
    }
    throw std::logic_error("tests/ops/tolerances.cpp has no row for " + std::string(to_string(op)) + " on " +
                           std::string(to_string(dtype)));
}

}  // namespace rayo::test::ops
