// The gathers: embedding (f32, f16, bf16 tables copied bit for bit; q8_0, q4_0, q4_k, q5_k and q6_k
// rows decoded bit for bit as the reference decoder does) and index_select along every kind of axis, with repeated
// ids, 0 ids, scalar ids, odd row sizes at odd offsets, into guarded outputs; index_copy, the
// scatter back, over the same axes, its other entries left as they were. And an id out of range:
// the CPU raises IndexError before writing; a GPU writes zeros for it (index_copy: nothing) and
// raises the error, naming the id, at the next host read, then runs on as before.
#include "ops/element_bits.hpp"
#include "ops/harness.hpp"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>

#include "quant/reference_quantizer.hpp"

namespace rayo::test::ops {
namespace {

// `count` ids in [0, rows), the first and the last row among them when there is room.
std::vector<std::int32_t> random_ids(std::size_t count, std::size_t rows, std::mt19937& rng) {
    std::uniform_int_distribution<std::int32_t> pick(0, static_cast<std::int32_t>(rows) - 1);
    std::vector<std::int32_t> ids(count);
    for (auto& id : ids) id = pick(rng);
    if (count > 1) ids[0] = static_cast<std::int32_t>(rows - 1);
    if (count > 2) ids[1] = 0;
    return ids;
}

struct EmbeddingShape {
    std::int64_t rows, dim;
    Shape ids;
};

template <class T>
void check_embedding(CaseContext& ctx) {
    std::mt19937 rng(ctx.seed());
    std::vector<EmbeddingShape> const shapes = {{5, 3, Shape{7}},      {1, 1, Shape{1}}, {37, 130, Shape{3, 5}},
                                                {11, 8, Shape{0}},     {9, 4, Shape{}},  {64, 2048, Shape{2, 1, 3}},
                                                {1000, 9, Shape{1031}}};
    for (std::size_t k = 0; k < shapes.size(); ++k) {
        EmbeddingShape const& s = shapes[k];
        SCOPED_TRACE("table [" + std::to_string(s.rows) + ", " + std::to_string(s.dim) + "], ids " + s.ids.to_string());
        std::vector<T> const table = random_elements<T>(static_cast<std::size_t>(s.rows * s.dim), rng);
        std::vector<std::int32_t> const ids = random_ids(s.ids.numel(), static_cast<std::size_t>(s.rows), rng);
        std::vector<std::int64_t> dims(s.ids.dims().begin(), s.ids.dims().end());
        dims.push_back(s.dim);
        Guarded<T> out = ctx.output<T>(Shape(dims), k % 3);
        embedding_into(ctx.input(table, Shape{s.rows, s.dim}, k % 2), ctx.input(ids, s.ids, (k + 1) % 2), out.tensor());
        auto const dim = static_cast<std::size_t>(s.dim);
        expect_elements<T>(
            ctx, out.values(), ids.size() * dim,
            [&](std::size_t e) { return table[static_cast<std::size_t>(ids[e / dim]) * dim + e % dim]; }, "embedding");
        ctx.expect_guards(out);
    }
    // The returning form.
    std::vector<T> const table = random_elements<T>(6 * 5, rng);
    std::vector<std::int32_t> const ids{5, 0, 5, 2};
    std::vector<T> const got = embedding(ctx.input(table, Shape{6, 5}), ctx.input(ids, Shape{2, 2})).to_vector();
    expect_elements<T>(
        ctx, got, 20, [&](std::size_t e) { return table[static_cast<std::size_t>(ids[e / 5]) * 5 + e % 5]; },
        "embedding, returned");
}

template <class B>
void check_embedding_kquant(CaseContext& ctx) {
    std::mt19937 rng(ctx.seed());
    constexpr std::size_t block = block_values_of<B>;
    struct Case {
        std::size_t rows, blocks;
        Shape ids;
    };
    // Blocks of 32 (q8_0, q4_0) also in rows of odd block counts: 3 blocks, 17 blocks.
    for (Case const& c : {Case{5, 1, Shape{7}}, Case{3, 3, Shape{2, 2}}, Case{40, 2, Shape{0}}, Case{17, 1, Shape{}},
                          Case{6, block == quant_block_values ? 2u : 17u, Shape{9}}}) {
        SCOPED_TRACE("table of " + std::to_string(c.rows) + " rows of " + std::to_string(c.blocks) + " blocks, ids " +
                     c.ids.to_string());
        std::vector<float> const values = ctx.values(c.rows * c.blocks * block, {-3, 3}, Specials::none);
        std::vector<B> q(c.rows * c.blocks);
        quant::reference::quantize<B>(values.data(), q.data(), q.size());
        std::vector<float> decoded(values.size());
        quant::reference::dequantize<B>(q.data(), decoded.data(), q.size());
        std::vector<std::int32_t> const ids = random_ids(c.ids.numel(), c.rows, rng);
        auto const dim = static_cast<std::int64_t>(c.blocks * block);
        std::vector<std::int64_t> dims(c.ids.dims().begin(), c.ids.dims().end());
        dims.push_back(dim);
        Guarded<float> out = ctx.output<float>(Shape(dims), 1);
        Tensor<B> const table = Tensor<B>::from(q, Shape{static_cast<std::int64_t>(c.rows), dim}, ctx.device());
        embedding_into(table, ctx.input(ids, c.ids), out.tensor());
        std::vector<float> want;
        for (std::int32_t id : ids) {
            auto const first = decoded.begin() + static_cast<std::ptrdiff_t>(id) * dim;
            want.insert(want.end(), first, first + dim);
        }
        expect_elements<float>(
            ctx, out.values(), want.size(), [&](std::size_t e) { return want[e]; }, "embedding");
        ctx.expect_guards(out);
    }
}

template <class T>
void check_index_select(CaseContext& ctx) {
    std::mt19937 rng(ctx.seed());
    struct Case {
        Shape shape;
        int axis;
        Shape ids;
    };
    std::vector<Case> const cases = {{Shape{4, 5, 6}, 1, Shape{7}},    {Shape{3, 9}, -1, Shape{4}},
                                     {Shape{10}, 0, Shape{3}},         {Shape{2, 3}, 0, Shape{}},
                                     {Shape{5, 0}, 0, Shape{2}},       {Shape{6, 7}, 1, Shape{0}},
                                     {Shape{3, 4, 2, 5}, 2, Shape{9}}, {Shape{130, 3}, 0, Shape{257}}};
    for (std::size_t k = 0; k < cases.size(); ++k) {
        Case const& c = cases[k];
        SCOPED_TRACE("index_select of " + c.shape.to_string() + " along " + std::to_string(c.axis) + ", ids " +
                     c.ids.to_string());
        std::size_t const a = c.shape.axis(c.axis);
        std::size_t const extent = static_cast<std::size_t>(c.shape[a]);
        std::vector<T> const x = random_elements<T>(c.shape.numel(), rng);
        std::vector<std::int32_t> const ids = random_ids(c.ids.numel(), extent, rng);
        std::vector<std::int64_t> dims(c.shape.dims().begin(), c.shape.dims().end());
        dims[a] = static_cast<std::int64_t>(ids.size());
        Guarded<T> out = ctx.output<T>(Shape(dims), k % 3);
        index_select_into(ctx.input(x, c.shape, k % 2), c.axis, ctx.input(ids, c.ids), out.tensor());
        std::size_t inner = 1;
        for (std::size_t i = a + 1; i < c.shape.rank(); ++i) inner *= static_cast<std::size_t>(c.shape[i]);
        expect_elements<T>(
            ctx, out.values(), out.tensor().numel(),
            [&](std::size_t e) {
                std::size_t const o = e / (ids.size() * inner), i = e / inner % ids.size(), r = e % inner;
                return x[(o * extent + static_cast<std::size_t>(ids[i])) * inner + r];
            },
            "index_select");
        ctx.expect_guards(out);
    }
    std::vector<T> const x = random_elements<T>(4 * 3, rng);
    std::vector<T> const got =
        index_select(ctx.input(x, Shape{4, 3}), 0, ctx.input(std::vector<std::int32_t>{3, 1}, Shape{2})).to_vector();
    expect_elements<T>(
        ctx, got, 6, [&](std::size_t e) { return x[(e < 3 ? 9 : 3) + e % 3]; }, "index_select, returned");
}

// `count` distinct ids in [0, rows), in random order, the last row first when there is room.
std::vector<std::int32_t> distinct_ids(std::size_t count, std::size_t rows, std::mt19937& rng) {
    std::vector<std::int32_t> all(rows);
    for (std::size_t i = 0; i < rows; ++i) all[i] = static_cast<std::int32_t>(rows - 1 - i);
    std::shuffle(all.begin() + 1, all.end(), rng);
    all.resize(count);
    return all;
}

// dst's entries ids[i] along `axis` become src's entries i; the rest stay (the guarded output's
// poison). Then a repeated id (one of its entries lands: on the CPU the last) and the errors.
template <class T>
void check_index_copy(CaseContext& ctx) {
    std::mt19937 rng(ctx.seed());
    struct Case {
        Shape dst;
        int axis;
        std::size_t ids;
    };
    std::vector<Case> const cases = {{Shape{4, 5, 6}, 1, 3}, {Shape{9, 3}, -1, 2},      {Shape{10}, 0, 10},
                                     {Shape{6, 7}, 1, 0},    {Shape{3, 4, 2, 5}, 2, 1}, {Shape{513, 8, 128}, 0, 1},
                                     {Shape{130, 3}, 0, 77}};
    for (std::size_t k = 0; k < cases.size(); ++k) {
        Case const& c = cases[k];
        SCOPED_TRACE("index_copy into " + c.dst.to_string() + " along " + std::to_string(c.axis) + ", " +
                     std::to_string(c.ids) + " ids");
        std::size_t const a = c.dst.axis(c.axis), extent = static_cast<std::size_t>(c.dst[a]);
        std::vector<std::int32_t> const ids = distinct_ids(c.ids, extent, rng);
        std::vector<std::int64_t> dims(c.dst.dims().begin(), c.dst.dims().end());
        dims[a] = static_cast<std::int64_t>(ids.size());
        Shape const src_shape(dims);
        std::vector<T> const src = random_elements<T>(src_shape.numel(), rng);
        Guarded<T> dst = ctx.output<T>(c.dst, k % 3);
        std::vector<T> const before = dst.values();
        index_copy_into(ctx.input(src, src_shape, k % 2), c.axis,
                        ctx.input(ids, Shape{static_cast<std::int64_t>(ids.size())}), dst.tensor());
        std::size_t inner = 1;
        for (std::size_t i = a + 1; i < c.dst.rank(); ++i) inner *= static_cast<std::size_t>(c.dst[i]);
        std::vector<std::ptrdiff_t> source(extent, -1);  // dst's entry along the axis -> src's, or none
        for (std::size_t i = 0; i < ids.size(); ++i)
            source[static_cast<std::size_t>(ids[i])] = static_cast<std::ptrdiff_t>(i);
        expect_elements<T>(
            ctx, dst.values(), before.size(),
            [&](std::size_t e) {
                std::size_t const o = e / (extent * inner), j = e / inner % extent, r = e % inner;
                std::ptrdiff_t const i = source[j];
                return i < 0 ? before[e] : src[(o * ids.size() + static_cast<std::size_t>(i)) * inner + r];
            },
            "index_copy");
        ctx.expect_guards(dst);
    }
    // A repeated id: one of its entries lands whole.
    std::vector<T> const src = random_elements<T>(2 * 9, rng);
    Guarded<T> dst = ctx.output<T>(Shape{4, 9}, 1);
    index_copy_into(ctx.input(src, Shape{2, 9}), 0, ctx.input(std::vector<std::int32_t>{2, 2}, Shape{2}), dst.tensor());
    std::vector<T> const got = dst.values();
    bool const first = same_bits(got[18], src[0]);
    std::size_t const from = first ? 0 : 9;
    if (ctx.device().kind() == DeviceKind::cpu) {
        EXPECT_FALSE(first) << "the CPU writes entries in order";
    }
    expect_elements<T>(
        ctx, std::vector<T>(got.begin() + 18, got.begin() + 27), 9, [&](std::size_t e) { return src[from + e]; },
        "index_copy of a repeated id");
    ctx.expect_guards(dst);
}

// An id past the end of index_copy's dst: the CPU throws before writing; a GPU writes the other
// entries and raises the error at the next host read.
template <class T>
void check_index_copy_out_of_range(CaseContext& ctx) {
    std::mt19937 rng(ctx.seed());
    std::vector<T> const src = random_elements<T>(3 * 16, rng);
    std::vector<std::int32_t> const ids{0, 7, 2};
    Guarded<T> dst = ctx.output<T>(Shape{4, 16}, 1);
    std::vector<T> const before = dst.values();
    std::string message;
    try {
        index_copy_into(ctx.input(src, Shape{3, 16}), 0, ctx.input(ids, Shape{3}), dst.tensor());
        ctx.device().synchronize();
        ADD_FAILURE() << "no IndexError on " << ctx.target().id;
    } catch (IndexError const& e) {
        message = e.what();
    }
    EXPECT_TRUE(message.starts_with("index_copy: ") && message.find("id 7 (ids[1])") != std::string::npos &&
                message.find("4 rows") != std::string::npos)
        << message;
    bool const gpu = ctx.device().kind() != DeviceKind::cpu;
    expect_elements<T>(
        ctx, dst.values(), before.size(),
        [&](std::size_t e) {
            std::size_t const row = e / 16;
            if (gpu && row == 0) return src[e];
            if (gpu && row == 2) return src[32 + e % 16];
            return before[e];
        },
        "after the error");
    ctx.expect_guards(dst);
}

// Ids past either end of the table: the error names one of them, and nothing is read out of bounds.
template <class T>
void check_ids_out_of_range(CaseContext& ctx) {
    std::mt19937 rng(ctx.seed());
    std::int64_t const rows = 6, dim = 40;
    std::vector<T> const table = random_elements<T>(static_cast<std::size_t>(rows * dim), rng);
    std::vector<std::int32_t> const ids{1, 5, 6, 0, -1, 2};
    Guarded<T> out = ctx.output<T>(Shape{6, dim}, 1);
    std::vector<T> const before = out.values();
    std::string message;
    bool raised_at_call = false;
    try {
        embedding_into(ctx.input(table, Shape{rows, dim}), ctx.input(ids, Shape{6}), out.tensor());
    } catch (IndexError const& e) {
        raised_at_call = true;
        message = e.what();
    }
    if (raised_at_call) {
        // Before anything was written.
        expect_elements<T>(
            ctx, out.values(), before.size(), [&](std::size_t e) { return before[e]; }, "untouched output");
    } else {
        EXPECT_NE(ctx.device().kind(), DeviceKind::cpu) << "the CPU raises at the call";
        try {
            (void)out.values();
            ADD_FAILURE() << "no IndexError at the host read after the gather on " << ctx.target().id;
        } catch (IndexError const& e) {
            message = e.what();
        }
        // Zeros for the ids out of range, the rows for the others; the device runs on.
        auto const d = static_cast<std::size_t>(dim);
        expect_elements<T>(
            ctx, out.values(), ids.size() * d,
            [&](std::size_t e) {
                std::int32_t const id = ids[e / d];
                return id < 0 || id >= rows ? T{} : table[static_cast<std::size_t>(id) * d + e % d];
            },
            "after the error");
        ctx.device().synchronize();
        // synchronize() raises it as well, and clears it.
        index_select_into(ctx.input(table, Shape{rows, dim}), 0, ctx.input(ids, Shape{6}), out.tensor());
        EXPECT_THROW(ctx.device().synchronize(), IndexError) << "on " << ctx.target().id;
        ctx.device().synchronize();
    }
    bool const names_one =
        message.find("id 6 (ids[2])") != std::string::npos || message.find("id -1 (ids[4])") != std::string::npos;
    EXPECT_TRUE(message.starts_with("embedding: ") && names_one && message.find("6 rows") != std::string::npos)
        << message;
    ctx.expect_guards(out);
}

template <class T>
void add_cases(std::vector<OpCase>& c, std::string const& type) {
    if constexpr (FloatingElement<T>) {
        c.push_back({"embedding_" + type, Op::embedding, dtype_of<T>, check_embedding<T>});
        c.push_back({"embedding_out_of_range_" + type, Op::embedding, dtype_of<T>, check_ids_out_of_range<T>});
    }
    c.push_back({"index_select_" + type, Op::index_select, dtype_of<T>, check_index_select<T>});
    c.push_back({"index_copy_" + type, Op::index_copy, dtype_of<T>, check_index_copy<T>});
    c.push_back({"index_copy_out_of_range_" + type, Op::index_copy, dtype_of<T>, check_index_copy_out_of_range<T>});
}

std::vector<OpCase> cases() {
    std::vector<OpCase> c;
    for_each_castable_type([&]<class T>(std::string const& type) { add_cases<T>(c, type); });
    c.push_back({"embedding_q4_k", Op::embedding, DType::q4_k, check_embedding_kquant<q4_k>});
    c.push_back({"embedding_q6_k", Op::embedding, DType::q6_k, check_embedding_kquant<q6_k>});
    // No GPU kernels for these three: the gathered blocks are decoded on the CPU.
    c.push_back({"embedding_q8_0", Op::embedding, DType::q8_0, check_embedding_kquant<q8_0>});
    c.push_back({"embedding_q4_0", Op::embedding, DType::q4_0, check_embedding_kquant<q4_0>});
    c.push_back({"embedding_q5_k", Op::embedding, DType::q5_k, check_embedding_kquant<q5_k>});
    return c;
}

CaseRegistration const registration(cases());

}  // namespace
}  // namespace rayo::test::ops
