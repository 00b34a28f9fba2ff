// Reduction kernels. Every thread folds its share of a row (or column) in index order into an
// accumulator; warps combine accumulators with butterfly shuffles (partners compute the same
// commutative combination, so every lane ends with the same bits), blocks through shared memory.
// The combination of two (value, index) pairs for argmax/argmin is a strict total order — NaN above
// every number, then the value, then the lower index — so the result does not depend on the tree's
// shape, and max/min use max.NaN/min.NaN (sm_80), which propagate NaN.
#include "rayo/ptx/kernels/reduction.hpp"
#include "ptx/kernels/element_access.hpp"
#include "ptx/kernels/strided_loop.hpp"

#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace rayo::ptx::kernels {

namespace {

using loop_detail::strided_loop;

constexpr float infinity = std::numeric_limits<float>::infinity();

// ---- instructions the builder has no emitter for

// setp with any PTX comparison (gtu, ltu, nan, num: the unordered ones) of a and b.
Reg setp_raw(Kernel& k, std::string const& cmp, Type type, Reg a, Reg b) {
    Reg p = k.reg(Type::pred);
    k.instruction("setp." + cmp + "." + std::string(name_of(type)),
                  {RegUse{p, Type::pred, Access::write}, RegUse{a, type}, RegUse{b, type}});
    return p;
}
// setp.<cmp>.and: (a cmp b) && q in one instruction.
Reg setp_and(Kernel& k, std::string const& cmp, Type type, Reg a, Reg b, Reg q) {
    Reg p = k.reg(Type::pred);
    k.instruction("setp." + cmp + ".and." + std::string(name_of(type)),
                  {RegUse{p, Type::pred, Access::write}, RegUse{a, type}, RegUse{b, type}, RegUse{q, Type::pred}});
    return p;
}
Reg or_pred(Kernel& k, Reg a, Reg b) {
    Reg p = k.reg(Type::pred);
    k.instruction("or.pred", {RegUse{p, Type::pred, Access::write}, RegUse{a, Type::pred}, RegUse{b, Type::pred}});
    return p;
}
// dst = max.NaN(a, b) or min.NaN(a, b): NaN when either is NaN (sm_80).
void extreme_nan(Kernel& k, bool is_max, Reg dst, Reg a, Reg b) {
    k.instruction(std::string(is_max ? "max" : "min") + ".NaN.f32",
                  {RegUse{dst, Type::f32, Access::write}, RegUse{a, Type::f32}, RegUse{b, Type::f32}},
                  {.compute_capability = 80});
}
Reg extreme_nan(Kernel& k, bool is_max, Reg a, Reg b) {
    Reg r = k.reg(Type::f32);
    extreme_nan(k, is_max, r, a, b);
    return r;
}
// A 64-bit register as two 32-bit halves, and back (shfl.sync moves 32 bits).
std::pair<Reg, Reg> unpack64(Kernel& k, Reg r) {
    auto const [lo, hi] = k.split(r, Type::b32);
    return {lo, hi};
}
Reg pack64(Kernel& k, Type type, Reg lo, Reg hi) { return k.join(type, lo, hi); }
Reg shuffle_xor(Kernel& k, Reg value, int lane_mask) {
    if (bits_of(value.type()) == 32) return k.shfl(ShuffleMode::bfly, value, lane_mask);
    auto [lo, hi] = unpack64(k, value);
    return pack64(k, value.type(), k.shfl(ShuffleMode::bfly, lo, lane_mask), k.shfl(ShuffleMode::bfly, hi, lane_mask));
}

Reg address(Kernel& k, Reg base, Reg index, unsigned shift) { return k.add(base, k.shl(index, shift)); }

// f32 values summed as a balanced tree: ((x0 + x1) + (x2 + x3)) + ...
Reg pairwise_sum(Kernel& k, std::vector<Reg> xs) {
    while (xs.size() > 1) {
        std::vector<Reg> next;
        for (std::size_t i = 0; i + 1 < xs.size(); i += 2) next.push_back(k.add(xs[i], xs[i + 1]));
        if (xs.size() % 2) next.push_back(xs.back());
        xs = std::move(next);
    }
    return xs.front();
}

// One thread's partial result: an f64 sum, an f32 extreme, or an (f32 value, u64 index) pair.
class Accumulator {
public:
    Accumulator(Kernel& k, Op op) : k_(k), op_(op), value_(k.reg(op == Op::sum ? Type::f64 : Type::f32)) {
        if (is_arg_reduction(op)) index_ = k.reg(Type::u64);
    }

    [[nodiscard]] Reg value() const { return value_; }
    [[nodiscard]] Reg index() const { return index_; }
    [[nodiscard]] bool is_max() const { return op_ == Op::max || op_ == Op::argmax; }

    // The identity: 0, ∓inf, and for the arg ops the largest index (loses every tie).
    void reset() {
        if (op_ == Op::sum)
            k_.mov(value_, 0.0);
        else
            k_.mov(value_, is_max() ? -infinity : infinity);
        if (is_arg_reduction(op_)) k_.mov(index_, std::int64_t{-1});
    }

    // Consecutive f32 elements in index order; first_index is the index of xs[0] (arg ops only).
    void add_values(std::vector<Reg> const& xs, Reg first_index = {}) {
        if (op_ == Op::sum) {
            k_.add(value_, value_, k_.cvt(Type::f64, pairwise_sum(k_, xs)));
        } else if (!is_arg_reduction(op_)) {
            std::vector<Reg> level = xs;
            while (level.size() > 1) {
                std::vector<Reg> next;
                for (std::size_t i = 0; i + 1 < level.size(); i += 2)
                    next.push_back(extreme_nan(k_, is_max(), level[i], level[i + 1]));
                if (level.size() % 2) next.push_back(level.back());
                level = std::move(next);
            }
            extreme_nan(k_, is_max(), value_, value_, level.front());
        } else {
            for (std::size_t i = 0; i < xs.size(); ++i)
                combine(xs[i], i == 0 ? first_index : k_.add(first_index, static_cast<std::int64_t>(i)));
        }
    }

    // Another accumulator's state (a partial result, a shuffled partner, a shared-memory slot).
    void combine(Reg value, Reg index = {}) {
        if (op_ == Op::sum) {
            k_.add(value_, value_, value);
            return;
        }
        if (!is_arg_reduction(op_)) {
            extreme_nan(k_, is_max(), value_, value_, value);
            return;
        }
        // Take (value, index) when it is NaN and ours is not, strictly more extreme, or tied (equal,
        // or both NaN) with a lower index.
        Reg beyond = setp_raw(k_, is_max() ? "gtu" : "ltu", Type::f32, value, value_);  // or either is NaN
        Reg take = setp_and(k_, "num", Type::f32, value_, value_, beyond);
        Reg value_nan = setp_raw(k_, "nan", Type::f32, value, value);
        Reg both_nan = setp_and(k_, "nan", Type::f32, value_, value_, value_nan);
        Reg tie = or_pred(k_, k_.setp(Cmp::eq, value, value_), both_nan);
        take = or_pred(k_, take, setp_and(k_, "lt", Type::u64, index, index_, tie));
        k_.selp(value_, value, value_, take);
        k_.selp(index_, index, index_, take);
    }

    // Combines the 32 lanes of a warp; every lane ends with the result.
    void warp_reduce() {
        for (int mask = 16; mask >= 1; mask /= 2) {
            Reg v = shuffle_xor(k_, value_, mask);
            Reg i = is_arg_reduction(op_) ? shuffle_xor(k_, index_, mask) : Reg{};
            combine(v, i);
        }
    }

    // Combines a block: warps, then warp 0 over the warps' results in shared memory. Thread 0
    // ends with the result. Two barriers: the slots are free again before the next round writes.
    void block_reduce(Reg tid, Symbol const& values, Symbol const& indices) {
        warp_reduce();
        Reg lane = k_.and_(tid, 31);
        Reg warp = k_.shr(tid, 5);
        Reg warps = k_.shr(k_.special(Special::ntid_x), 5);
        unsigned const value_bytes = op_ == Op::sum ? 8 : 4;
        Type const value_type = op_ == Op::sum ? Type::f64 : Type::f32;
        Reg value_base = k_.shared_address(values);
        Reg index_base = is_arg_reduction(op_) ? k_.shared_address(indices) : Reg{};
        k_.bar_sync();
        k_.if_then(k_.setp(Cmp::eq, lane, 0), [&] {
            k_.st(Space::shared, value_type, k_.fma(warp, value_bytes, value_base), value_);
            if (is_arg_reduction(op_)) k_.st(Space::shared, Type::u64, k_.fma(warp, 8, index_base), index_);
        });
        k_.bar_sync();
        k_.if_then(k_.setp(Cmp::eq, warp, 0), [&] {
            reset();
            k_.if_then(k_.setp(Cmp::lt, lane, warps), [&] {
                k_.ld(value_, Space::shared, value_type, k_.fma(lane, value_bytes, value_base));
                if (is_arg_reduction(op_)) k_.ld(index_, Space::shared, Type::u64, k_.fma(lane, 8, index_base));
            });
            warp_reduce();
        });
    }

private:
    Kernel& k_;
    Op op_;
    Reg value_;
    Reg index_;
};

// Writes an accumulator's result: the final value of output `output`, or partial result `slot`.
void store_result(Kernel& k, Op op, bool mean, ReduceStage stage, Accumulator const& acc, Reg out, Reg out_index,
                  Reg slot, Reg count) {
    if (stage == ReduceStage::partial) {
        if (op == Op::sum) {
            k.st(Space::global, Type::f64, address(k, out, slot, 3), acc.value());
        } else {
            k.st(Space::global, Type::f32, address(k, out, slot, 2), acc.value());
            if (is_arg_reduction(op)) k.st(Space::global, Type::u64, address(k, out_index, slot, 3), acc.index());
        }
        return;
    }
    if (is_arg_reduction(op)) {
        k.st(Space::global, Type::u64, address(k, out, slot, 3), acc.index());
    } else if (op == Op::sum) {
        // Divide in f64 and round once, as the CPU does.
        Reg total = mean ? k.div(acc.value(), k.cvt(Type::f64, count)) : acc.value();
        k.st(Space::global, Type::f32, address(k, out, slot, 2), k.cvt(Type::f32, total));
    } else {
        k.st(Space::global, Type::f32, address(k, out, slot, 2), acc.value());
    }
}

using element_detail::element_suffix;

void check_common(std::string const& name, Op op, bool mean, unsigned unroll, unsigned block_threads, DType element) {
    element_detail::check_floating(name, element);
    if (unroll != 1 && unroll != 2 && unroll != 4)
        throw BuildError("ptx kernel '" + name + "': unroll must be 1, 2 or 4, not " + std::to_string(unroll));
    if (block_threads == 0 || block_threads > 1024 || block_threads % 32 != 0)
        throw BuildError("ptx kernel '" + name + "': block_threads must be a multiple of 32 in [32, 1024], not " +
                         std::to_string(block_threads));
    if (op != Op::sum && op != Op::max && op != Op::min && op != Op::argmax && op != Op::argmin)
        throw BuildError("ptx kernel '" + name + "': " + std::string(to_string(op)) +
                         " is not sum, max, min, argmax or argmin (a mean is a sum with `mean` set)");
    if (mean && op != Op::sum) throw BuildError("ptx kernel '" + name + "': mean is a sum divided by the count");
}

// reduce_rows' kernel name: every choice that changes the code.
std::string reduce_rows_name(ReduceRowsConfig const& config, bool vectorized) {
    return "rayo_reduce_rows_" + std::string(to_string(config.op)) + (config.mean ? "_mean" : "") + "_" +
           std::string(to_string(config.source)) + "_" + std::string(to_string(config.stage)) + "_" +
           std::string(to_string(config.group)) + (vectorized ? "_v4" : "_scalar") + "_u" +
           std::to_string(config.unroll) + element_suffix(config.element);
}

// reduce_rows' body, one stage per member function. The builder allocates registers as it emits,
// so the stages run in the order the kernel lists them (their numbering follows that order).
struct ReduceRowsBuilder {
    ReduceRowsBuilder(Kernel& kernel, ReduceRowsConfig const& rows_config, bool vector_loads)
        : k(kernel),
          config(rows_config),
          op(rows_config.op),
          arg(is_arg_reduction(rows_config.op)),
          vectorized(vector_loads) {}

    // The whole kernel body after the kernel's declaration.
    void emit() {
        declare_parameters();
        find_group();
        declare_shared();
        loop_over_items();
    }

    // Declares the kernel's parameters, the pointers converted to global addresses.
    void declare_parameters() {
        out = k.cvta_to_global(k.param(Type::u64, "out"));
        out_index = k.cvta_to_global(k.param(Type::u64, "out_index"));
        in = k.cvta_to_global(k.param(Type::u64, "in"));
        in_aux = k.cvta_to_global(k.param(Type::u64, "in_aux"));
        rows = k.param(Type::u64, "rows");
        extent = k.param(Type::u64, "extent");
        chunk = k.param(Type::u64, "chunk");
        parts = k.param(Type::u64, "parts");
        count = k.param(Type::u64, "count");
    }

    // The group this thread belongs to, how many there are, and its lane within the group.
    void find_group() {
        tid = k.special(Special::tid_x);
        ntid = k.special(Special::ntid_x);
        ctaid = k.special(Special::ctaid_x);
        nctaid = k.special(Special::nctaid_x);
        switch (config.group) {
            case ReduceGroup::thread:
                group_id = k.add(k.mul_wide(ctaid, ntid), k.cvt(Type::u64, tid));
                groups = k.mul_wide(nctaid, ntid);
                lane = k.mov(Type::u64, 0);
                lanes = k.mov(Type::u64, 1);
                break;
            case ReduceGroup::warp:
                group_id = k.shr(k.add(k.mul_wide(ctaid, ntid), k.cvt(Type::u64, tid)), 5);
                groups = k.shr(k.mul_wide(nctaid, ntid), 5);
                lane = k.cvt(Type::u64, k.and_(tid, 31));
                lanes = k.mov(Type::u64, 32);
                break;
            case ReduceGroup::block:
                group_id = k.cvt(Type::u64, ctaid);
                groups = k.cvt(Type::u64, nctaid);
                lane = k.cvt(Type::u64, tid);
                lanes = k.cvt(Type::u64, ntid);
                break;
        }
    }

    // Declares the shared-memory slots a block combines its warps' results in.
    void declare_shared() {
        if (config.group == ReduceGroup::block) {
            std::size_t const warps = config.block_threads / 32;
            shared_values = k.shared_array("reduce_values", op == Op::sum ? Type::f64 : Type::f32, warps, 8);
            if (is_arg_reduction(op)) shared_indices = k.shared_array("reduce_indices", Type::u64, warps, 8);
        }
    }

    // The group-strided loop over the items: rows, or (row, part) ranges for partial results.
    void loop_over_items() {
        bool const partial = config.stage == ReduceStage::partial;
        Reg items = partial ? k.mul(rows, parts) : rows;
        Accumulator acc(k, op);
        Reg item = k.mov(Type::u64, group_id);
        Label top = k.label(), done = k.label();
        k.place(top);
        // Uniform across the group: every lane of a warp (or thread of a block) takes the same path.
        k.bra_if(k.setp(Cmp::ge, item, items), done);
        reduce_item(acc, item);
        k.add(item, item, groups);
        k.bra(top);
        k.place(done);
    }

    // Reduces one item into `acc` and writes its result.
    void reduce_item(Accumulator& acc, Reg item) {
        find_range(item);
        acc.reset();
        if (config.source == ReduceSource::partials)
            fold_partials(acc);
        else
            fold_elements(acc);
        write_result(acc, item);
    }

    // The item's range of elements: [begin, begin + length) of its row, at element offset `first`.
    void find_range(Reg item) {
        Reg row = item, end;
        if (config.stage == ReduceStage::partial) {
            row = k.div(item, parts);
            Reg part = k.sub(item, k.mul(row, parts));
            begin = k.mul(part, chunk);
            end = k.min(k.add(begin, chunk), extent);
        } else {
            begin = k.mov(Type::u64, 0);
            end = extent;
        }
        length = k.sub(end, begin);
        first = k.add(k.mul(row, extent), begin);  // element offset of the range in the arrays
    }

    // The index of element `offset` of the range (arg ops only; else no register).
    Reg element_index(Reg offset) { return arg ? k.add(begin, offset) : Reg{}; }

    // Folds earlier partial results (an f64 sum, an f32 extreme, or f32 values with u64 indices).
    void fold_partials(Accumulator& acc) {
        unsigned const value_shift = op == Op::sum ? 3 : 2;
        Type const value_type = op == Op::sum ? Type::f64 : Type::f32;
        strided_loop(k, lane, length, lanes, config.unroll, [&](std::vector<Reg> const& offsets) {
            std::vector<Reg> values, indices;
            for (Reg offset : offsets) {
                Reg at = k.add(first, offset);
                values.push_back(k.ld(Space::global, value_type, address(k, in, at, value_shift)));
                if (arg) indices.push_back(k.ld(Space::global, Type::u64, address(k, in_aux, at, 3)));
            }
            for (std::size_t g = 0; g < values.size(); ++g) acc.combine(values[g], arg ? indices[g] : Reg{});
        });
    }

    // Folds the range's elements (or products of two arrays' elements), scalar or in vectors of 4.
    void fold_elements(Accumulator& acc) {
        products = config.source == ReduceSource::products;
        shift = element_detail::size_shift(config.element);
        a_start = address(k, in, first, shift);
        b_start = products ? address(k, in_aux, first, shift) : Reg{};
        if (!vectorized)
            fold_scalars(acc);
        else
            fold_vectorized(acc);
    }

    // Element `offset` (u64) of the range, as .f32.
    Reg load_scalar(Reg offset) {
        Reg x = element_detail::load(k, config.element, address(k, a_start, offset, shift));
        return products ? k.mul(x, element_detail::load(k, config.element, address(k, b_start, offset, shift))) : x;
    }

    // Every element with a scalar load.
    void fold_scalars(Accumulator& acc) {
        strided_loop(k, lane, length, lanes, config.unroll, [&](std::vector<Reg> const& offsets) {
            std::vector<Reg> xs;
            for (Reg offset : offsets) xs.push_back(load_scalar(offset));
            if (arg) {
                for (std::size_t g = 0; g < xs.size(); ++g) acc.add_values({xs[g]}, element_index(offsets[g]));
            } else {
                acc.add_values(xs);
            }
        });
    }

    // A scalar head up to a group boundary, groups of 4 elements read as vectors, a scalar tail.
    void fold_vectorized(Accumulator& acc) {
        Reg head = fold_head(acc);
        Reg rest = k.sub(length, head);
        Reg vectors = k.shr(rest, 2);
        fold_vectors(acc, head, vectors);
        fold_tail(acc, head, vectors, rest);
    }

    // Head: the elements before a_start reaches a group boundary (16 bytes for f32, 8 for
    // 16-bit elements), one per lane. Returns their count.
    Reg fold_head(Accumulator& acc) {
        std::int64_t const group_bytes = std::int64_t{4} << shift;
        Reg head = k.min(k.shr(k.and_(k.neg(a_start), group_bytes - 1), shift), length);
        k.if_then(k.setp(Cmp::lt, lane, head), [&] { acc.add_values({load_scalar(lane)}, element_index(lane)); });
        return head;
    }

    // The `vectors` groups of 4 elements after the head, one group per lane.
    void fold_vectors(Accumulator& acc, Reg head, Reg vectors) {
        Reg a_vectors = address(k, a_start, head, shift);
        Reg b_vectors = products ? address(k, b_start, head, shift) : Reg{};
        strided_loop(k, lane, vectors, lanes, config.unroll, [&](std::vector<Reg> const& vs) {
            std::vector<std::vector<Reg>> loaded;
            for (Reg v : vs) {
                auto xs = element_detail::load_four(k, config.element, address(k, a_vectors, v, shift + 2));
                if (products) {
                    auto ys = element_detail::load_four(k, config.element, address(k, b_vectors, v, shift + 2));
                    for (int e = 0; e < 4; ++e) xs[e] = k.mul(xs[e], ys[e]);
                }
                loaded.push_back(std::move(xs));
            }
            if (arg) {
                for (std::size_t g = 0; g < vs.size(); ++g)
                    acc.add_values(loaded[g], element_index(k.add(head, k.shl(vs[g], 2))));
            } else {
                // One f64 addition per group: the group's values are summed in f32 first.
                std::vector<Reg> all;
                for (auto const& xs : loaded) all.insert(all.end(), xs.begin(), xs.end());
                acc.add_values(all);
            }
        });
    }

    // Tail: the last (length - head) % 4 elements, one per lane.
    void fold_tail(Accumulator& acc, Reg head, Reg vectors, Reg rest) {
        Reg tail_start = k.add(head, k.shl(vectors, 2));
        k.if_then(k.setp(Cmp::lt, lane, k.and_(rest, 3)), [&] {
            Reg offset = k.add(tail_start, lane);
            acc.add_values({load_scalar(offset)}, element_index(offset));
        });
    }

    // Combines the group's accumulators; one thread writes the item's result.
    void write_result(Accumulator& acc, Reg item) {
        Reg writer;
        switch (config.group) {
            case ReduceGroup::thread: writer = k.setp(Cmp::eq, lane, 0); break;  // always true
            case ReduceGroup::warp:
                acc.warp_reduce();
                writer = k.setp(Cmp::eq, lane, 0);
                break;
            case ReduceGroup::block:
                acc.block_reduce(tid, shared_values, shared_indices);
                writer = k.setp(Cmp::eq, tid, 0);
                break;
        }
        k.if_then(writer, [&] { store_result(k, op, config.mean, config.stage, acc, out, out_index, item, count); });
    }

    Kernel& k;
    ReduceRowsConfig const& config;
    Op const op;
    bool const arg;         // an arg reduction: values carry their indices
    bool const vectorized;  // elements are read as vectors of 4 between a scalar head and tail
    Reg out, out_index, in, in_aux, rows, extent, chunk, parts, count;  // parameters
    Reg tid, ntid, ctaid, nctaid;
    Reg group_id, groups, lane, lanes;  // see find_group
    Symbol shared_values, shared_indices;
    Reg begin, length, first;  // the current item's range (find_range)
    // The current item's element arrays (fold_elements).
    bool products = false;  // a dot product: element i is a[i] · b[i]
    unsigned shift = 0;     // log2 of the element's bytes
    Reg a_start, b_start;
};

}  // namespace

Kernel reduce_rows(ReduceRowsConfig const& config) {
    Op const op = config.op;
    // A thread per row reads its row with scalar loads: the vector head and tail take a lane each.
    bool const vectorized =
        config.vectorized && config.source != ReduceSource::partials && config.group != ReduceGroup::thread;
    std::string const name = reduce_rows_name(config, vectorized);
    check_common(name, op, config.mean, config.unroll, config.block_threads, config.element);
    if (config.source == ReduceSource::products && op != Op::sum)
        throw BuildError("ptx kernel '" + name + "': products (dot) are summed, not " + std::string(to_string(op)));

    Kernel k(name);
    k.max_threads(config.block_threads);
    ReduceRowsBuilder(k, config, vectorized).emit();
    return k;
}

Kernel reduce_columns(ReduceColumnsConfig const& config) {
    Op const op = config.op;
    std::string const name = "rayo_reduce_columns_" + std::string(to_string(op)) + (config.mean ? "_mean" : "") + "_" +
                             std::string(to_string(config.stage)) + "_u" + std::to_string(config.unroll) +
                             element_suffix(config.element);
    check_common(name, op, config.mean, config.unroll, config.block_threads, config.element);
    unsigned const shift = element_detail::size_shift(config.element);

    Kernel k(name);
    k.max_threads(config.block_threads);
    Reg out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg out_index = k.cvta_to_global(k.param(Type::u64, "out_index"));
    Reg in = k.cvta_to_global(k.param(Type::u64, "in"));
    Reg outer = k.param(Type::u64, "outer");
    Reg extent = k.param(Type::u64, "extent");
    Reg inner = k.param(Type::u64, "inner");
    Reg chunk = k.param(Type::u64, "chunk");
    Reg parts = k.param(Type::u64, "parts");
    Reg count = k.param(Type::u64, "count");

    Reg column_start = k.add(k.mul_wide(k.special(Special::ctaid_x), k.special(Special::ntid_x)),
                             k.cvt(Type::u64, k.special(Special::tid_x)));
    Reg column_step = k.mul_wide(k.special(Special::nctaid_x), k.special(Special::ntid_x));
    Reg slab_step = k.cvt(Type::u64, k.special(Special::nctaid_y));
    Reg byte_step = k.shl(inner, shift);     // from one element of a column to the next
    std::vector<Reg> byte_steps{byte_step};  // byte_steps[u - 1] = u * byte_step, u = 1 .. unroll
    for (unsigned u = 2; u <= config.unroll; ++u) byte_steps.push_back(k.add(byte_steps.back(), byte_step));
    bool const partial = config.stage == ReduceStage::partial;
    bool const arg = is_arg_reduction(op);
    Reg slabs = partial ? k.mul(outer, parts) : outer;
    Accumulator acc(k, op);

    Reg slab = k.cvt(Type::u64, k.special(Special::ctaid_y));
    Label slab_top = k.label(), slab_done = k.label();
    k.place(slab_top);
    k.bra_if(k.setp(Cmp::ge, slab, slabs), slab_done);
    {
        Reg o = slab, part, begin, end;
        if (partial) {
            o = k.div(slab, parts);
            part = k.sub(slab, k.mul(o, parts));
            begin = k.mul(part, chunk);
            end = k.min(k.add(begin, chunk), extent);
        } else {
            begin = k.mov(Type::u64, 0);
            end = extent;
        }
        Reg length = k.sub(end, begin);
        Reg slab_first = k.mul(k.add(k.mul(o, extent), begin), inner);  // element offset of (o, begin, 0)
        Reg output_first = k.mul(o, inner);
        Reg column = k.mov(Type::u64, column_start);
        Label column_top = k.label(), column_done = k.label();
        k.place(column_top);
        k.bra_if(k.setp(Cmp::ge, column, inner), column_done);
        {
            acc.reset();
            Reg start = address(k, in, k.add(slab_first, column), shift);
            // Walks t = 0 .. length-1 along the axis; the pointer moves by byte_step per element.
            Reg t = k.mov(Type::u64, 0);
            Reg pointer = k.mov(Type::u64, start);
            auto take = [&](unsigned n) {
                std::vector<Reg> xs;
                for (unsigned u = 0; u < n; ++u) {
                    Reg at = u == 0 ? pointer : k.add(pointer, byte_steps[u - 1]);
                    xs.push_back(element_detail::load(k, config.element, at));
                }
                if (arg) {
                    for (unsigned u = 0; u < n; ++u)
                        acc.add_values({xs[u]}, k.add(begin, u == 0 ? t : k.add(t, std::int64_t{u})));
                } else {
                    acc.add_values(xs);
                }
                k.add(t, t, std::int64_t{n});
                k.add(pointer, pointer, byte_steps[n - 1]);
            };
            if (config.unroll > 1) {
                Label group_top = k.label(), group_done = k.label();
                k.place(group_top);
                k.bra_if(k.setp(Cmp::gt, k.add(t, std::int64_t{config.unroll}), length), group_done);
                take(config.unroll);
                k.bra(group_top);
                k.place(group_done);
            }
            Label single_top = k.label(), single_done = k.label();
            k.place(single_top);
            k.bra_if(k.setp(Cmp::ge, t, length), single_done);
            take(1);
            k.bra(single_top);
            k.place(single_done);

            Reg output = k.add(output_first, column);
            Reg slot = partial ? k.add(k.mul(output, parts), part) : output;
            store_result(k, op, config.mean, config.stage, acc, out, out_index, slot, count);
        }
        k.add(column, column, column_step);
        k.bra(column_top);
        k.place(column_done);
    }
    k.add(slab, slab, slab_step);
    k.bra(slab_top);
    k.place(slab_done);
    return k;
}

}  // namespace rayo::ptx::kernels
