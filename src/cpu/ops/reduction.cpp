// The reduction family on the CPU: sum, mean, max, min, argmax, argmin over [outer, extent, inner],
// and dot. One long run is split into contiguous chunks whose partials are combined in order;
// rows and column blocks are spread over the thread pool.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cpu/ops/ops.hpp"
#include "dispatch/operand_checks.hpp"

namespace rayo::cpu::ops {

namespace {

// Combines two partial results of one reduction; `a` covers earlier indices than `b`.
ReduceResult combine(Op op, ReduceResult a, ReduceResult b) {
    switch (op) {
        case Op::max: case Op::argmax:
            if (std::isnan(a.value)) return a;
            if (std::isnan(b.value)) return b;
            return b.value > a.value ? b : a;
        case Op::min: case Op::argmin:
            if (std::isnan(a.value)) return a;
            if (std::isnan(b.value)) return b;
            return b.value < a.value ? b : a;
        default: return {a.value + b.value, 0};  // sum, mean
    }
}

}  // namespace

Support supports(KernelRunner const&, op::Reduce const& d, OpViews const& v) {
    DType const result = is_arg_reduction(d.op) ? DType::i64 : DType::f32;
    if (v.in[0].dtype != DType::f32 || v.out[0].dtype != result)
        return Support::no("cpu reductions take f32 and write " + std::string(to_string(result)));
    if (!detail::all_contiguous(v)) return Support::no("cpu reductions take contiguous tensors");
    return Support::yes();
}

void run(KernelRunner& r, op::Reduce const& d, OpViews const& v) {
    auto const& k = r.kernels();
    ThreadPool& pool = r.pool();
    auto const shape = d.shape;
    Op const op = d.op == Op::mean ? Op::sum : d.op;
    float const* x = data<float const>(v.in[0]);
    bool const arg = is_arg_reduction(op);
    bool const mean = d.op == Op::mean;
    TensorView const& out = v.out[0];
    auto store = [&](std::size_t i, ReduceResult res) {
        if (arg) data<std::int64_t>(out)[i] = res.index;
        else data<float>(out)[i] = static_cast<float>(mean ? res.value / static_cast<double>(shape.extent) : res.value);
    };
    if (shape.outer * shape.inner == 0) return;
    if (shape.outer == 1 && shape.inner == 1) {
        // One long run: each thread reduces a contiguous chunk, then the partials are combined in order.
        std::size_t const parts = std::clamp<std::size_t>(shape.extent / reduce_grain, 1, pool.size());
        std::vector<ReduceResult> partial(parts);
        pool.run_parts(parts, [&](std::size_t p, std::size_t n) {
            std::size_t const b = shape.extent * p / n, e = shape.extent * (p + 1) / n;
            partial[p] = k.reduce(op, x + b, e - b);
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
            for (std::size_t o = b; o < e; ++o) store(o, k.reduce(op, x + o * shape.extent, shape.extent));
        });
        return;
    }
    // Reduction over a middle axis: column reductions of [extent, inner] blocks, split over
    // (outer x column chunks) so that few outer slices still use every thread.
    constexpr std::size_t column_chunk = 256;
    std::size_t const chunks = (shape.inner + column_chunk - 1) / column_chunk;
    std::size_t const grain = std::max<std::size_t>(1, reduce_grain / std::max<std::size_t>(shape.extent * column_chunk, 1));
    pool.parallel_for(shape.outer * chunks, grain, [&](std::size_t b, std::size_t e) {
        double value[column_chunk];
        std::int64_t index[column_chunk];
        for (std::size_t t = b; t < e; ++t) {
            std::size_t const o = t / chunks, c0 = (t % chunks) * column_chunk;
            std::size_t const cols = std::min(column_chunk, shape.inner - c0);
            k.reduce_columns(op, x + o * shape.extent * shape.inner + c0, shape.extent, cols, shape.inner, value,
                             arg ? index : nullptr);
            for (std::size_t j = 0; j < cols; ++j) store(o * shape.inner + c0 + j, {value[j], arg ? index[j] : 0});
        }
    });
}

Support supports(KernelRunner const&, op::Dot const& d, OpViews const& v) { return detail::contiguous_f32("cpu", d.op, v); }

void run(KernelRunner& r, op::Dot const&, OpViews const& v) {
    auto const& k = r.kernels();
    ThreadPool& pool = r.pool();
    std::size_t const n = v.in[0].numel();
    std::size_t const parts = std::clamp<std::size_t>(n / reduce_grain, 1, pool.size());
    std::vector<double> partial(parts);
    float const* a = data<float const>(v.in[0]);
    float const* b = data<float const>(v.in[1]);
    pool.run_parts(parts, [&](std::size_t p, std::size_t count) {
        std::size_t const s = n * p / count, e = n * (p + 1) / count;
        partial[p] = k.dot(a + s, b + s, e - s);
    });
    double total = 0;
    for (double x : partial) total += x;
    *data<float>(v.out[0]) = static_cast<float>(total);
}

}  // namespace rayo::cpu::ops
