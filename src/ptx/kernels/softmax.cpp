// softmax and log_softmax over rows (see rayo/ptx/kernels/softmax.hpp).
#include "rayo/ptx/kernels/softmax.hpp"

#include <string>
#include <vector>

#include "ptx/kernels/row_kernel.hpp"

namespace rayo::ptx::kernels {

namespace {

using namespace row_detail;

// Every element of a list of vectors, flattened.
std::vector<Reg> flatten(std::vector<std::vector<Reg>> const& vectors) {
    std::vector<Reg> all;
    for (auto const& v : vectors) all.insert(all.end(), v.begin(), v.end());
    return all;
}

// log_softmax writes x - (max + log sum): the constant as hi + lo, exactly, so the result is
// rounded about once.
struct LogShift {
    Reg hi, lo;
};
LogShift log_shift(Kernel& k, Reg max, Reg sum) {
    TwoSum const c = two_sum(k, max, log_positive(k, sum));
    return {c.s, c.e};
}
Reg log_output(Kernel& k, Reg x, LogShift const& shift) { return k.sub(k.sub(x, shift.hi), shift.lo); }

// The row in registers: one read, max, exponentials and their sum, one write.
void softmax_registers(Kernel& k, SoftmaxConfig const& config, RowFrame const& f, Reg in, Reg out) {
    RowConfig const& c = config.row;
    Held h = load_held(k, c, f, thread_address(k, f, in), -infinity);  // -inf: no effect on max or sum
    Reg const max = reduce_row(k, c, f, {tree_max(k, flatten(h.x))}, {-infinity}, max_combine(k), "row_max")[0];
    Reg const neg_max = k.neg(max);
    std::vector<Reg> exps;
    for (auto& v : h.x)
        for (Reg& x : v) {
            Reg const e = exp_difference(k, x, max, neg_max);
            exps.push_back(e);
            if (config.op != Op::log_softmax) x = e;  // softmax needs the exponentials; log_softmax keeps x
        }
    Reg const sum = reduce_row(k, c, f, {tree_sum(k, exps)}, {0.0f}, sum_combine(k), "row_sum")[0];
    std::vector<std::vector<Reg>> y(h.x.size());
    if (config.op == Op::log_softmax) {
        LogShift const shift = log_shift(k, max, sum);
        for (std::size_t i = 0; i < h.x.size(); ++i)
            for (Reg x : h.x[i]) y[i].push_back(log_output(k, x, shift));
    } else {
        Reg const inverse = k.rcp(sum);
        for (std::size_t i = 0; i < h.x.size(); ++i)
            for (Reg e : h.x[i]) y[i].push_back(k.mul(e, inverse));
    }
    store_vectors(k, f.element, thread_address(k, f, out), f.stride_bytes, y, h.ok);
}

// The online pair (max m, sum s of e^(x - m)) folded with more values or another pair. A maximum
// of -inf (nothing but -inf seen) is replaced by 0 in the exponents, so -inf - -inf never occurs
// and the sum stays 0. The side that holds the maximum is never rescaled (not even by an
// approximate e^0), so rounding only enters where the maximum grows.
struct Online {
    Reg max, sum;
};
Reg safe_max(Kernel& k, Reg max) { return k.selp(0.0f, max, k.setp(Cmp::eq, max, -infinity), Type::f32); }

Online fold_values(Kernel& k, Online const& running, std::vector<Reg> const& values) {
    Reg const max = max_nan(k, running.max, tree_max(k, values));
    Reg const shift = safe_max(k, max);
    Reg const neg_shift = k.neg(shift);
    std::vector<Reg> exps;
    for (Reg x : values) exps.push_back(exp_difference(k, x, shift, neg_shift));
    Reg const rescale =
        k.selp(1.0f, exp_difference(k, running.max, shift, neg_shift), k.setp(Cmp::eq, running.max, max), Type::f32);
    return {max, k.fma(running.sum, rescale, tree_sum(k, exps))};
}

Online fold_pair(Kernel& k, Online const& a, Online const& b) {
    Reg const a_holds_max = k.setp(Cmp::ge, a.max, b.max);  // false for NaN: the sum becomes NaN below
    Reg const max = max_nan(k, a.max, b.max);
    Reg const other_max = k.selp(b.max, a.max, a_holds_max, Type::f32);
    Reg const sum_at_max = k.selp(a.sum, b.sum, a_holds_max, Type::f32);
    Reg const other_sum = k.selp(b.sum, a.sum, a_holds_max, Type::f32);
    Reg const shift = safe_max(k, max);
    return {max, k.fma(other_sum, exp_difference(k, other_max, shift, k.neg(shift)), sum_at_max)};
}

// Rows too long for registers: pass 1 folds the row into (max, sum) online, pass 2 re-reads it
// (from L2 when the row was just read) and writes.
void softmax_loop(Kernel& k, SoftmaxConfig const& config, RowFrame const& f, Reg in, Reg out) {
    RowConfig const& c = config.row;
    Reg const vectors = k.mov(Type::s32, k.shr(f.cols, log2_exact(c.vector)));
    Reg const row_in = k.add(in, f.row_offset);
    Reg const row_out = k.add(out, f.row_offset);
    unsigned const bytes = vector_bytes(c, f);
    std::int64_t const stride = static_cast<std::int64_t>(c.block) * bytes;

    Online running{k.mov(Type::f32, -infinity), k.mov(Type::f32, 0.0f)};
    loop_row(k, c, f, vectors, [&](Reg j, std::vector<Reg> const& ok) {
        auto const x =
            load_vectors(k, f.element, c.vector, k.element_address(row_in, j, bytes), c.items, stride, ok, -infinity);
        Online const next = fold_values(k, running, flatten(x));
        k.mov(running.max, next.max);
        k.mov(running.sum, next.sum);
    });
    auto const combined = reduce_row(
        k, c, f, {running.max, running.sum}, {-infinity, 0.0f},
        [&k](std::vector<Reg> const& a, std::vector<Reg> const& b) {
            Online const r = fold_pair(k, {a[0], a[1]}, {b[0], b[1]});
            return std::vector<Reg>{r.max, r.sum};
        },
        "row_max_sum");
    Reg const max = combined[0], sum = combined[1];

    LogShift shift;
    Reg inverse, neg_max;
    if (config.op == Op::log_softmax) {
        shift = log_shift(k, max, sum);
    } else {
        inverse = k.rcp(sum);
        neg_max = k.neg(max);
    }
    loop_row(k, c, f, vectors, [&](Reg j, std::vector<Reg> const& ok) {
        Reg const at_in = k.element_address(row_in, j, bytes);
        Reg const at_out = k.element_address(row_out, j, bytes);
        auto const x = load_vectors(k, f.element, c.vector, at_in, c.items, stride, ok, 0.0f);
        std::vector<std::vector<Reg>> y(x.size());
        for (std::size_t i = 0; i < x.size(); ++i)
            for (Reg v : x[i])
                y[i].push_back(config.op == Op::log_softmax ? log_output(k, v, shift)
                                                            : k.mul(exp_difference(k, v, max, neg_max), inverse));
        store_vectors(k, f.element, at_out, stride, y, ok);
    });
}

}  // namespace

std::string softmax_name(SoftmaxConfig const& config) {
    return std::string(to_string(config.op)) + "_" + to_string(config.row) +
           element_detail::element_suffix(config.element);
}

Kernel softmax(SoftmaxConfig const& config) {
    if (config.op != Op::softmax && config.op != Op::log_softmax)
        throw BuildError("ptx: softmax generates softmax and log_softmax, not " + std::string(to_string(config.op)));
    std::string const name = softmax_name(config);
    validate(config.row, name);
    Kernel k(name);
    k.max_threads(config.row.block);
    Reg const in = k.cvta_to_global(k.param(Type::u64, "in"));
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const rows = k.param(Type::u32, "rows");
    Reg const cols = k.param(Type::u32, "cols");
    RowFrame const f = row_frame(k, config.row, config.element, rows, cols);
    if (config.row.layout == RowLayout::block_loop)
        softmax_loop(k, config, f, in, out);
    else
        softmax_registers(k, config, f, in, out);
    return k;
}

}  // namespace rayo::ptx::kernels
