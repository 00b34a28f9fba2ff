// layer_norm and rms_norm over rows (see rayo/ptx/kernels/normalization.hpp).
#include "rayo/ptx/kernels/normalization.hpp"

#include <limits>
#include <string>
#include <vector>

#include "ptx/kernels/row_kernel.hpp"

namespace rayo::ptx::kernels {

namespace {

using namespace row_detail;

struct Params {
    Reg in, gamma, beta, out;  // global addresses
    Reg has_gamma, has_beta;   // .pred: the address is not 0 (rms_norm: has_beta unused)
    Reg eps;
    Reg inverse_count;  // 1/cols, correctly rounded: means are sums times this (no div.rn per row)
};

// Per-row statistics, the same in every thread of the row: y = fma(fma(x, k, -center), scale,
// shift). k is 1, or 2^-96 for a row whose plain sums or squares overflow (any |x| past ~2^64):
// then every statistic is of x·2^-96, whose squares and sums cannot overflow (|x·2^-96| < 2^32),
// and the normalised values are the same. fma(x, 1, -c) is x - c, so ordinary rows are unchanged.
struct RowScale {
    Reg k;       // 1 or 2^-96
    Reg center;  // layer_norm: the f32 mean of x·k (x·k - center is exact for most x); rms_norm: unused
    Reg scale;   // 1/sqrt(var + eps) in the units of x·k
    Reg shift;   // layer_norm: -t·scale, t the mean of x·k - center; rms_norm: unused
};

constexpr float huge_scale = 0x1p-96f;

// Whether v is finite (NaN fails).
Reg is_finite(Kernel& k, Reg v) { return k.setp(Cmp::lt, k.abs(v), std::numeric_limits<float>::infinity()); }

// Σ v² over one vector (a short fma chain).
Reg sum_of_squares(Kernel& k, std::vector<Reg> const& v) {
    Reg s = k.mul(v[0], v[0]);
    for (std::size_t i = 1; i < v.size(); ++i) s = k.fma(v[i], v[i], s);
    return s;
}

// 1/sqrt(mean + eps), each step correctly rounded.
Reg inverse_root(Kernel& k, Reg mean, Reg eps) { return k.rcp(k.sqrt(k.add(mean, eps))); }

// The first layer_norm statistic from Σx, Σx·2^-96 and Σx²: the mean of x·k, and k. Plain units
// while Σx² < 2^125: then no centred square, (x - c)² <= 4·max x², nor their sum can overflow.
struct Center {
    Reg k, center;
};
Center layer_center(Kernel& k, Params const& p, Reg sum, Reg sum_scaled, Reg squares) {
    Reg const plain = k.setp(Cmp::lt, squares, 0x1p125f);
    return {k.selp(1.0f, huge_scale, plain, Type::f32),
            k.selp(k.mul(sum, p.inverse_count), k.mul(sum_scaled, p.inverse_count), plain, Type::f32)};
}

// The second layer_norm statistics from Σd and Σd², d = x·k - center.
RowScale layer_scale(Kernel& k, Params const& p, Center c, Reg sum, Reg sum_squares) {
    Reg const t = k.mul(sum, p.inverse_count);
    // var = E[d²] - t², t tiny next to the spread; clamped as rounding could make it < 0.
    Reg const var = k.max(k.fma(k.neg(t), t, k.mul(sum_squares, p.inverse_count)), 0.0f);
    Reg const scale = inverse_root(k, var, k.mul(k.mul(p.eps, c.k), c.k));  // eps in units of (x·k)²
    return {c.k, c.center, scale, k.neg(k.mul(t, scale))};
}

// rms_norm from Σx² and Σ(x·2^-96)²: 1/sqrt(E[x²] + eps), in the units of x·2^-96 when the plain
// squares overflowed (x/sqrt(E[x²] + eps) = x·2^-96/sqrt(E[(x·2^-96)²] + eps·2^-192)); the scale
// stays in those units, as 1/sqrt(E[x²]) of such a row is subnormal and would lose its precision.
RowScale rms_scale(Kernel& k, Params const& p, Reg squares, Reg squares_scaled) {
    Reg const plain = is_finite(k, squares);
    Reg const scaled =
        inverse_root(k, k.mul(squares_scaled, p.inverse_count), k.mul(k.mul(p.eps, huge_scale), huge_scale));
    RowScale s;
    s.k = k.selp(1.0f, huge_scale, plain, Type::f32);
    s.scale = k.selp(inverse_root(k, k.mul(squares, p.inverse_count), p.eps), scaled, plain, Type::f32);
    return s;
}

// x·k - center as one rounding, for the statistics and the output.
Reg centred(Kernel& k, Center const& c, Reg x) { return k.fma(x, c.k, k.neg(c.center)); }

Reg normalized(Kernel& k, NormConfig const& config, RowScale const& s, Reg x) {
    if (config.op == Op::rms_norm) return k.mul(k.mul(x, s.k), s.scale);
    return k.fma(k.fma(x, s.k, k.neg(s.center)), s.scale, s.shift);
}

// Σ(x·2^-96)² over one vector.
Reg sum_of_scaled_squares(Kernel& k, std::vector<Reg> const& v) {
    std::vector<Reg> scaled;
    for (Reg x : v) scaled.push_back(k.mul(x, huge_scale));
    return sum_of_squares(k, scaled);
}

// Σx·2^-96 over a list (exact scaling of each term).
Reg scaled_sum(Kernel& k, std::vector<Reg> const& v) {
    std::vector<Reg> scaled;
    for (Reg x : v) scaled.push_back(k.mul(x, huge_scale));
    return tree_sum(k, scaled);
}

// Writes the outputs of the vectors x, held at out_at + i·stride, with gamma and beta (1 and 0
// where absent) read at the same offsets from gamma_at and beta_at. Item by item, so only one
// item's gamma and beta are live at a time. gamma and beta are read-only for the kernel, so they
// come through the non-coherent (texture) path; an absent one is skipped by a predicate the whole
// block agrees on. The output is formed as the CPU forms it: layer_norm fma(y, gamma, beta),
// rms_norm y·gamma (exact for gamma = 1, beta = 0).
void write_outputs(Kernel& k, NormConfig const& config, Params const& p, RowScale const& s,
                   std::vector<std::vector<Reg>> const& x, Reg gamma_at, Reg beta_at, Reg out_at, std::int64_t stride,
                   std::vector<Reg> const& ok) {
    DType const element = config.element;
    unsigned const vector = static_cast<unsigned>(x.front().size());
    bool const layer = config.op == Op::layer_norm;
    for (std::size_t i = 0; i < x.size(); ++i) {
        auto const offset = static_cast<std::int64_t>(i) * stride;
        auto const present = [&](Reg has) { return ok[i].valid() ? k.and_pred(ok[i], has) : has; };
        auto const g =
            load_vector(k, element, vector, Address(gamma_at, offset), present(p.has_gamma), 1.0f, Cache::nc);
        std::vector<Reg> b;
        if (layer) b = load_vector(k, element, vector, Address(beta_at, offset), present(p.has_beta), 0.0f, Cache::nc);
        std::vector<Reg> y;
        for (std::size_t e = 0; e < x[i].size(); ++e) {
            Reg const n = normalized(k, config, s, x[i][e]);
            y.push_back(layer ? k.fma(n, g[e], b[e]) : k.mul(n, g[e]));
        }
        store_vector(k, element, Address(out_at, offset), y, ok[i]);
    }
}

// The row in registers: one read, the statistics from the registers, one write.
void norm_registers(Kernel& k, NormConfig const& config, RowFrame const& f, Params const& p) {
    RowConfig const& c = config.row;
    Held h = load_held(k, c, f, thread_address(k, f, p.in), 0.0f);  // 0: adds nothing to the sums
    RowScale s;
    if (config.op == Op::rms_norm) {
        std::vector<Reg> squares, scaled;
        for (auto const& v : h.x) {
            squares.push_back(sum_of_squares(k, v));
            scaled.push_back(sum_of_scaled_squares(k, v));
        }
        auto const totals = reduce_row(k, c, f, {tree_sum(k, squares), tree_sum(k, scaled)}, {0.0f, 0.0f},
                                       sum_combine(k), "row_squares");
        s = rms_scale(k, p, totals[0], totals[1]);
    } else {
        std::vector<Reg> all;
        for (auto const& v : h.x) all.insert(all.end(), v.begin(), v.end());
        std::vector<Reg> plain_squares;
        for (auto const& v : h.x) plain_squares.push_back(sum_of_squares(k, v));
        auto const totals = reduce_row(k, c, f, {tree_sum(k, all), scaled_sum(k, all), tree_sum(k, plain_squares)},
                                       {0.0f, 0.0f, 0.0f}, sum_combine(k), "row_sum");
        Center const center = layer_center(k, p, totals[0], totals[1], totals[2]);
        std::vector<Reg> sums, squares;
        for (std::size_t i = 0; i < h.x.size(); ++i) {
            std::vector<Reg> d;
            for (Reg x : h.x[i]) d.push_back(centred(k, center, x));
            // Slots past the row end would add -center.
            sums.push_back(k.selp(tree_sum(k, d), 0.0f, h.ok[i], Type::f32));
            squares.push_back(k.selp(sum_of_squares(k, d), 0.0f, h.ok[i], Type::f32));
        }
        auto const second =
            reduce_row(k, c, f, {tree_sum(k, sums), tree_sum(k, squares)}, {0.0f, 0.0f}, sum_combine(k), "row_centred");
        s = layer_scale(k, p, center, second[0], second[1]);
    }
    Reg const beta_at = config.op == Op::layer_norm ? thread_address(k, f, p.beta, false) : Reg{};
    write_outputs(k, config, p, s, h.x, thread_address(k, f, p.gamma, false), beta_at, thread_address(k, f, p.out),
                  f.stride_bytes, h.ok);
}

// Rows too long for registers: the statistics pass(es), then a pass that writes, each re-reading
// the row (from L2 when it was just read).
void norm_loop(Kernel& k, NormConfig const& config, RowFrame const& f, Params const& p) {
    RowConfig const& c = config.row;
    Reg const vectors = k.mov(Type::s32, k.shr(f.cols, log2_exact(c.vector)));
    Reg const row_in = k.add(p.in, f.row_offset);
    Reg const row_out = k.add(p.out, f.row_offset);
    unsigned const bytes = vector_bytes(c, f);
    std::int64_t const stride = static_cast<std::int64_t>(c.block) * bytes;
    auto load = [&](Reg j, std::vector<Reg> const& ok) {
        return load_vectors(k, f.element, c.vector, k.element_address(row_in, j, bytes), c.items, stride, ok, 0.0f);
    };

    RowScale s;
    if (config.op == Op::rms_norm) {
        Reg const acc = k.mov(Type::f32, 0.0f), acc_scaled = k.mov(Type::f32, 0.0f);
        loop_row(k, c, f, vectors, [&](Reg j, std::vector<Reg> const& ok) {
            std::vector<Reg> squares, scaled;
            for (auto const& v : load(j, ok)) {
                squares.push_back(sum_of_squares(k, v));
                scaled.push_back(sum_of_scaled_squares(k, v));
            }
            k.add(acc, acc, tree_sum(k, squares));
            k.add(acc_scaled, acc_scaled, tree_sum(k, scaled));
        });
        auto const totals = reduce_row(k, c, f, {acc, acc_scaled}, {0.0f, 0.0f}, sum_combine(k), "row_squares");
        s = rms_scale(k, p, totals[0], totals[1]);
    } else {
        Reg const acc = k.mov(Type::f32, 0.0f), acc_scaled = k.mov(Type::f32, 0.0f),
                  acc_plain_squares = k.mov(Type::f32, 0.0f);
        loop_row(k, c, f, vectors, [&](Reg j, std::vector<Reg> const& ok) {
            std::vector<Reg> all, squares;
            for (auto const& v : load(j, ok)) {
                all.insert(all.end(), v.begin(), v.end());
                squares.push_back(sum_of_squares(k, v));
            }
            k.add(acc, acc, tree_sum(k, all));
            k.add(acc_scaled, acc_scaled, scaled_sum(k, all));
            k.add(acc_plain_squares, acc_plain_squares, tree_sum(k, squares));
        });
        auto const totals =
            reduce_row(k, c, f, {acc, acc_scaled, acc_plain_squares}, {0.0f, 0.0f, 0.0f}, sum_combine(k), "row_sum");
        Center const center = layer_center(k, p, totals[0], totals[1], totals[2]);
        Reg const acc_sum = k.mov(Type::f32, 0.0f), acc_squares = k.mov(Type::f32, 0.0f);
        loop_row(k, c, f, vectors, [&](Reg j, std::vector<Reg> const& ok) {
            auto const x = load(j, ok);
            std::vector<Reg> sums, squares;
            for (std::size_t i = 0; i < x.size(); ++i) {
                std::vector<Reg> d;
                for (Reg v : x[i]) d.push_back(centred(k, center, v));
                Reg sum = tree_sum(k, d), square = sum_of_squares(k, d);
                if (ok[i].valid()) {  // vectors past the row end would add -center
                    sum = k.selp(sum, 0.0f, ok[i], Type::f32);
                    square = k.selp(square, 0.0f, ok[i], Type::f32);
                }
                sums.push_back(sum);
                squares.push_back(square);
            }
            k.add(acc_sum, acc_sum, tree_sum(k, sums));
            k.add(acc_squares, acc_squares, tree_sum(k, squares));
        });
        auto const second = reduce_row(k, c, f, {acc_sum, acc_squares}, {0.0f, 0.0f}, sum_combine(k), "row_centred");
        s = layer_scale(k, p, center, second[0], second[1]);
    }
    loop_row(k, c, f, vectors, [&](Reg j, std::vector<Reg> const& ok) {
        auto const x = load(j, ok);
        Reg const beta_at = config.op == Op::layer_norm ? k.element_address(p.beta, j, bytes) : Reg{};
        write_outputs(k, config, p, s, x, k.element_address(p.gamma, j, bytes), beta_at,
                      k.element_address(row_out, j, bytes), stride, ok);
    });
}

}  // namespace

std::string normalization_name(NormConfig const& config) {
    return std::string(to_string(config.op)) + "_" + to_string(config.row) +
           element_detail::element_suffix(config.element);
}

Kernel normalization(NormConfig const& config) {
    if (config.op != Op::layer_norm && config.op != Op::rms_norm)
        throw BuildError("ptx: normalization generates layer_norm and rms_norm, not " +
                         std::string(to_string(config.op)));
    std::string const name = normalization_name(config);
    validate(config.row, name);
    Kernel k(name);
    k.max_threads(config.row.block);
    Params p;
    p.in = k.cvta_to_global(k.param(Type::u64, "in"));
    Reg const gamma = k.param(Type::u64, "gamma");
    Reg const beta = k.param(Type::u64, "beta");
    p.out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const rows = k.param(Type::u32, "rows");
    Reg const cols = k.param(Type::u32, "cols");
    p.eps = k.param(Type::f32, "eps");
    p.has_gamma = k.setp(Cmp::ne, gamma, 0);
    p.gamma = k.cvta_to_global(gamma);
    if (config.op == Op::layer_norm) {
        p.has_beta = k.setp(Cmp::ne, beta, 0);
        p.beta = k.cvta_to_global(beta);
    }
    p.inverse_count = k.rcp(k.cvt(Type::f32, cols));
    RowFrame const f = row_frame(k, config.row, config.element, rows, cols);
    if (config.row.layout == RowLayout::block_loop)
        norm_loop(k, config, f, p);
    else
        norm_registers(k, config, f, p);
    return k;
}

}  // namespace rayo::ptx::kernels
