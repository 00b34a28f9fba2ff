// The quantization family: quantize to q8_0, q4_0, q4_k, q5_k, q6_k and q8_k, byte for byte the
// scalar reference quantizers (src/quant/, themselves checked against ggml's vectors in
// tests/quant_test.cpp), non-finite inputs included; dequantize of each, bit for bit the reference
// decoders, of quantized data and of arbitrary bytes. Outputs sit between poisoned rows (blocks).
#include "ops/harness.hpp"
#include "ops/references.hpp"

#include <array>
#include <bit>
#include <cstring>
#include <random>

#include "quant/reference_quantizer.hpp"

namespace rayo::test::ops {
namespace {

// Shapes in whole blocks of B: for the 32-value blocks also rows of odd block counts.
template <QuantBlock B>
std::vector<Shape> value_shapes() {
    std::vector<Shape> shapes{Shape{1, 256}, Shape{3, 512},    Shape{7, 2304},  Shape{64, 1024},
                              Shape{0, 256}, Shape{2, 3, 256}, Shape{1000, 256}};
    if constexpr (block_values_of<B> != quant_block_values)
        for (Shape s : {Shape{1, 32}, Shape{5, 96}, Shape{3, 2080}, Shape{0, 32}, Shape{33, 224}}) shapes.push_back(s);
    return shapes;
}

// Rows of `shape` (its leading axes merged) and the blocks of B of each.
template <QuantBlock B>
std::pair<std::size_t, std::size_t> rows_and_blocks(Shape const& shape) {
    std::size_t const cols = static_cast<std::size_t>(shape[shape.rank() - 1]);
    return {cols ? shape.numel() / cols : 0, cols / block_values_of<B>};
}

template <class B>
B poison_block() {
    std::array<unsigned char, sizeof(B)> bytes;
    bytes.fill(0xA5);
    return std::bit_cast<B>(bytes);
}

template <QuantBlock B>
void check_quantize(CaseContext& ctx) {
    constexpr std::size_t block = block_values_of<B>;
    std::size_t index = 0;
    for (Shape const& shape : ctx.shapes(value_shapes<B>())) {
        SCOPED_TRACE("shape " + shape.to_string());
        // Values of one block span ranges far apart, with special values in every other shape.
        std::vector<float> v = ctx.values(shape.numel(), {-3, 3}, index++ % 2 ? Specials::ieee : Specials::none);
        std::mt19937 rng(ctx.seed());
        for (std::size_t i = 0; i < v.size(); i += 97) v[i] *= static_cast<float>(1 + rng() % 1000);
        auto const [rows, blocks] = rows_and_blocks<B>(shape);
        // The output: rows 1..rows of a [rows + 2, cols] tensor whose first and last rows are poison.
        std::vector<B> host((rows + 2) * blocks, poison_block<B>());
        Tensor<B> const all = Tensor<B>::from(host, {rows + 2, blocks * block}, ctx.device());
        Tensor<B> const out = all.slice(1, static_cast<std::int64_t>(rows + 1));
        // The values 16-byte aligned: the GPUs' kernels read them as vectors.
        quantize_into(ctx.input(v, Shape{rows, blocks * block}, 0), out);
        std::vector<B> want(rows * blocks);
        quant::reference::quantize<B>(v.data(), want.data(), want.size());
        std::vector<B> const got = all.to_vector();
        std::size_t wrong = 0, first = 0;
        for (std::size_t b = 0; b < want.size(); ++b)
            if (std::memcmp(&got[blocks + b], &want[b], sizeof(B)) != 0 && wrong++ == 0) first = b;
        EXPECT_EQ(wrong, 0u) << "blocks differ from the reference on " << ctx.target().id << ", the first is block "
                             << first << " (seed " << ctx.seed() << ")";
        B const p = poison_block<B>();
        for (std::size_t b = 0; b < blocks; ++b) {
            EXPECT_EQ(std::memcmp(&got[b], &p, sizeof(B)), 0) << "a block before the output view was written";
            EXPECT_EQ(std::memcmp(&got[(rows + 1) * blocks + b], &p, sizeof(B)), 0) << "a block after it was written";
        }
    }
}

template <QuantBlock B>
void check_dequantize(CaseContext& ctx) {
    constexpr std::size_t block = block_values_of<B>;
    std::size_t index = 0;
    for (Shape const& shape : ctx.shapes(value_shapes<B>())) {
        SCOPED_TRACE("shape " + shape.to_string());
        auto const [rows, blocks] = rows_and_blocks<B>(shape);
        std::vector<B> q(rows * blocks);
        if (index++ % 2) {
            // Arbitrary bytes: every bit pattern is a block (a scale may be Inf or NaN). A device
            // that flushes subnormals reads a subnormal f32 scale (q8_k's) as 0: not here.
            std::mt19937 rng(ctx.seed());
            for (B& b : q) {
                for (std::size_t i = 0; i < sizeof(B); ++i)
                    reinterpret_cast<unsigned char*>(&b)[i] = static_cast<unsigned char>(rng());
                if constexpr (std::same_as<B, q8_k>)
                    if (ctx.flushes_subnormals()) b.d = flush(b.d);
            }
        } else {
            std::vector<float> const v = ctx.values(q.size() * block, {-3, 3}, Specials::none);
            quant::reference::quantize<B>(v.data(), q.data(), q.size());
        }
        Guarded<float> out = ctx.output<float>(shape, 1);  // 16-byte aligned, for the GPUs' vector stores
        dequantize_into(Tensor<B>::from(q, shape, ctx.device()), out.tensor());
        std::vector<float> want(q.size() * block);
        quant::reference::dequantize<B>(q.data(), want.data(), q.size());
        ctx.expect_equal(out, want, [&](std::size_t i) {
            return "value " + std::to_string(i % block) + " of block " + std::to_string(i / block);
        });
    }
}

std::vector<OpCase> cases() {
    return {
        // q4_k, q6_k, q8_0, q4_0 and q5_k quantization: the reference's per-block search is
        // sequential, and its bytes are the contract; the GPU backends run it on the CPU (documented).
        {"quantize_q4_k", Op::quantize, DType::q4_k, check_quantize<q4_k>, true},
        {"quantize_q6_k", Op::quantize, DType::q6_k, check_quantize<q6_k>, true},
        {"quantize_q8_k", Op::quantize, DType::q8_k, check_quantize<q8_k>},
        {"dequantize_q4_k", Op::dequantize, DType::q4_k, check_dequantize<q4_k>},
        {"dequantize_q6_k", Op::dequantize, DType::q6_k, check_dequantize<q6_k>},
        {"dequantize_q8_k", Op::dequantize, DType::q8_k, check_dequantize<q8_k>},
        {"quantize_q8_0", Op::quantize, DType::q8_0, check_quantize<q8_0>, true},
        {"quantize_q4_0", Op::quantize, DType::q4_0, check_quantize<q4_0>, true},
        {"quantize_q5_k", Op::quantize, DType::q5_k, check_quantize<q5_k>, true},
        {"dequantize_q8_0", Op::dequantize, DType::q8_0, check_dequantize<q8_0>},
        {"dequantize_q4_0", Op::dequantize, DType::q4_0, check_dequantize<q4_0>},
        {"dequantize_q5_k", Op::dequantize, DType::q5_k, check_dequantize<q5_k>},
    };
}

CaseRegistration const registration(cases());

}  // namespace
}  // namespace rayo::test::ops
