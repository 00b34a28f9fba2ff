// The reduction family on the CPU: sum, mean, max, min, argmax, argmin over [outer, extent, inner],
// and dot. One long run is split into contiguous chunks whose partials are combined in order;
// rows and column blocks are spread over the thread pool.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cpu/ops/f32_staging.hpp"
#include "cpu/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"

namespace rayo::cpu::ops {

namespace {

// Combines two partial results of one reduction; `a` covers earlier indices than `b`.
ReduceResult combine(Op op, ReduceResult a, ReduceResult b) {
    switch (op) {
        case Op::max:
        case Op::argmax:
            if (std::isnan(a.value)) return a;
            if (std::isnan(b.value)) return b;
            return b.value > a.value ? b : a;
        case Op::min:
        case Op::argmin:
            if (std::isnan(a.value)) return a;
            if (std::isnan(b.value)) return b;
            return b.value < a.value ? b : a;
        default: return {a.value + b.value, 0};  // sum, mean
    }
}

// Columns a task reduces at once in a reduction over a middle axis.
constexpr std::size_t column_chunk = 256;

// The address of element `index` of `type` at `base`.
std::byte const* element_at(std::byte const* base, DType type, std::size_t index) {
    return base + index * size_of(type);
}

// k.reduce over the n values of `type` at `in`: f32 directly; f16 and bf16 a staged block at a time,
// the blocks' results combined in order.
ReduceResult reduce_run(KernelTable const& k, Op op, DType type, std::byte const* in, std::size_t n) {
    if (type == DType::f32) return k.reduce(op, reinterpret_cast<float const*>(in), n);
    float block[staging_block];
    ReduceResult result{};  // an empty run: a sum of 0
    for (std::size_t s = 0; s < n; s += staging_block) {
        std::size_t const m = std::min(staging_block, n - s);
        k.widen(type, element16(in, s), block, m);
        ReduceResult part = k.reduce(op, block, m);
        part.index += static_cast<std::int64_t>(s);
        result = s == 0 ? part : combine(op, result, part);
    }
    return result;
}

// k.reduce_columns over `rows` rows of `cols` values of `type` (`row_stride` apart) at `in`: f32
// directly; f16 and bf16 a block of rows at a time, widened, the blocks' results combined in order.
// cols <= column_chunk.
void reduce_columns_run(KernelTable const& k, Op op, DType type, std::byte const* in, std::size_t rows,
                        std::size_t cols, std::size_t row_stride, double* value, std::int64_t* index) {
    if (type == DType::f32)
        return k.reduce_columns(op, reinterpret_cast<float const*>(in), rows, cols, row_stride, value, index);
    constexpr std::size_t capacity = 8 * staging_block;
    float block[capacity];
    double block_value[column_chunk];
    std::int64_t block_index[column_chunk];
    std::size_t const step = std::max<std::size_t>(1, capacity / cols);
    for (std::size_t r0 = 0; r0 < rows; r0 += step) {
        std::size_t const count = std::min(step, rows - r0);
        for (std::size_t r = 0; r < count; ++r)
            k.widen(type, element16(in, (r0 + r) * row_stride), block + r * cols, cols);
        k.reduce_columns(op, block, count, cols, cols, r0 ? block_value : value,
                         index ? (r0 ? block_index : index) : nullptr);
        if (r0 == 0) continue;
        for (std::size_t j = 0; j < cols; ++j) {
            ReduceResult const part{block_value[j], index ? block_index[j] + static_cast<std::int64_t>(r0) : 0};
            ReduceResult const merged = combine(op, {value[j], index ? index[j] : 0}, part);
            value[j] = merged.value;
            if (index) index[j] = merged.index;
        }
    }
}

}  // namespace

Support supports(KernelRunner const&, op::Reduce const& d, OpViews const& v) {
    return detail::reduction_floating("cpu", d.op, v, is_arg_reduction(d.op) ? DType::i64 : DType::f32);
}

void run(KernelRunner& r, op::Reduce const& d, OpViews const& v) {
    auto const& k = r.kernels();
    ThreadPool& pool = r.pool();
    auto const shape = d.shape;
    Op const op = d.op == Op::mean ? Op::sum : d.op;
    DType const type = v.in[0].dtype;
    std::byte const* x = data<std::byte const>(v.in[0]);
    bool const arg = is_arg_reduction(op);
    bool const mean = d.op == Op::mean;
    TensorView const& out = v.out[0];
    auto store = [&](std::size_t i, ReduceResult res) {
        if (arg)
            data<std::int64_t>(out)[i] = res.index;
        else
            data<float>(out)[i] = static_cast<float>(mean ? res.value / static_cast<double>(shape.extent) : res.value);
    };
    if (shape.outer * shape.inner == 0) return;
    if (shape.outer == 1 && shape.inner == 1) {
        // One long run: each thread reduces a contiguous chunk, then the partials are combined in order.
        std::size_t const parts = std::clamp<std::size_t>(shape.extent / reduce_grain, 1, pool.size());
        std::vector<ReduceResult> partial(parts);
        pool.run_parts(parts, [&](std::size_t p, std::size_t n) {
            std::size_t const b = shape.extent * p / n, e = shape.extent * (p + 1) / n;
            partial[p] = reduce_run(k, op, type, element_at(x, type, b), e - b);
            partial[p].index += static_cast<std::int64_t>(b);
        });
        ReduceResult res = partial[0];
        for (std::size_t p = 1; p < parts; ++p) res = combine(op, res, partial[p]);
        store(0, res);
        return;
    }
    if (shape.inner == 1) {
        std::size_t const grain = std::max<std::size_t>(1, reduce_grain / std::max<std::size_t>(shape.extent, 1));
        pool.parallel_for(shape.outer, grain, [&](std::size_t b, std::size_t e) {
            for (std::size_t o = b; o < e; ++o)
                store(o, reduce_run(k, op, type, element_at(x, type, o * shape.extent), shape.extent));
        });
        return;
    }
    // Reduction over a middle axis: column reductions of [extent, inner] blocks, split over
    // (outer x column chunks) so that few outer slices still use every thread.
    std::size_t const chunks = (shape.inner + column_chunk - 1) / column_chunk;
    std::size_t const grain =
        std::max<std::size_t>(1, reduce_grain / std::max<std::size_t>(shape.extent * column_chunk, 1));
    pool.parallel_for(shape.outer * chunks, grain, [&](std::size_t b, std::size_t e) {
        double value[column_chunk];
        std::int64_t index[column_chunk];
        for (std::size_t t = b; t < e; ++t) {
            std::size_t const o = t / chunks, c0 = (t % chunks) * column_chunk;
            std::size_t const cols = std::min(column_chunk, shape.inner - c0);
            reduce_columns_run(k, op, type, element_at(x, type, o * shape.extent * shape.inner + c0), shape.extent,
                               cols, shape.inner, value, arg ? index : nullptr);
            for (std::size_t j = 0; j < cols; ++j) store(o * shape.inner + c0 + j, {value[j], arg ? index[j] : 0});
        }
    });
}

Support supports(KernelRunner const&, op::Dot const& d, OpViews const& v) {
    return detail::reduction_floating("cpu", d.op, v, DType::f32);
}

namespace {

// Σ a[i]·b[i] over n values of `type`: f32 directly; f16 and bf16 a staged block at a time.
double dot_run(KernelTable const& k, DType type, std::byte const* a, std::byte const* b, std::size_t n) {
    if (type == DType::f32) return k.dot(reinterpret_cast<float const*>(a), reinterpret_cast<float const*>(b), n);
    float wa[staging_block], wb[staging_block];
    double total = 0;
    for (std::size_t s = 0; s < n; s += staging_block) {
        std::size_t const m = std::min(staging_block, n - s);
        k.widen(type, element16(a, s), wa, m);
        k.widen(type, element16(b, s), wb, m);
        total += k.dot(wa, wb, m);
    }
    return total;
}

}  // namespace

void run(KernelRunner& r, op::Dot const&, OpViews const& v) {
    auto const& k = r.kernels();
    ThreadPool& pool = r.pool();
    std::size_t const n = v.in[0].numel();
    std::size_t const parts = std::clamp<std::size_t>(n / reduce_grain, 1, pool.size());
    std::vector<double> partial(parts);
    DType const type = v.in[0].dtype;
    std::byte const* a = data<std::byte const>(v.in[0]);
    std::byte const* b = data<std::byte const>(v.in[1]);
    pool.run_parts(parts, [&](std::size_t p, std::size_t count) {
        std::size_t const s = n * p / count, e = n * (p + 1) / count;
        partial[p] = dot_run(k, type, element_at(a, type, s), element_at(b, type, s), e - s);
    });
    double total = 0;
    for (double x : partial) total += x;
    *data<float>(v.out[0]) = static_cast<float>(total);
}

}  // namespace rayo::cpu::ops
