// layer_norm and rms_norm over rows (see rayo/ptx/kernels/normalization.hpp).
#include "rayo/ptx/kernels/normalization.hpp"

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

// Per-row statistics, the same in every thread of the row: y = fma(x - center, scale, shift).
struct RowScale {
    Reg center;  // layer_norm: the f32 mean (x - center is exact for most x); rms_norm: unused
    Reg scale;   // 1/sqrt(var + eps)
    Reg shift;   // layer_norm: -t·scale, t the mean of x - center; rms_norm: unused
};

// Σ v² over one vector (a short fma chain).
Reg sum_of_squares(Kernel& k, std::vector<Reg> const& v) {
    Reg s = k.mul(v[0], v[0]);
    for (std::size_t i = 1; i < v.size(); ++i) s = k.fma(v[i], v[i], s);
    return s;
}

// 1/sqrt(mean + eps), each step correctly rounded.
Reg inverse_root(Kernel& k, Reg mean, Reg eps) { return k.rcp(k.sqrt(k.add(mean, eps))); }

// The second layer_norm statistics from Σ(x - center) and Σ(x - center)².
RowScale layer_scale(Kernel& k, Params const& p, Reg center, Reg sum, Reg sum_squares) {
    Reg const t = k.mul(sum, p.inverse_count);
    // var = E[(x - c)²] - t², t tiny next to the spread; clamped as rounding could make it < 0.
    Reg const var = k.max(k.fma(k.neg(t), t, k.mul(sum_squares, p.inverse_count)), 0.0f);
    Reg const scale = inverse_root(k, var, p.eps);
    return {center, scale, k.neg(k.mul(t, scale))};
}

Reg normalized(Kernel& k, NormConfig const& config, RowScale const& s, Reg x) {
    if (config.op == Op::rms_norm) return k.mul(x, s.scale);
    return k.fma(k.sub(x, s.center), s.scale, s.shift);
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
    unsigned const vector = static_cast<unsigned>(x.front().size());
    bool const layer = config.op == Op::layer_norm;
    for (std::size_t i = 0; i < x.size(); ++i) {
        auto const offset = static_cast<std::int64_t>(i) * stride;
        auto const present = [&](Reg has) { return ok[i].valid() ? k.and_pred(ok[i], has) : has; };
        auto const g = load_vector(k, vector, Address(gamma_at, offset), present(p.has_gamma), 1.0f, Cache::nc);
        std::vector<Reg> b;
        if (layer) b = load_vector(k, vector, Address(beta_at, offset), present(p.has_beta), 0.0f, Cache::nc);
        std::vector<Reg> y;
        for (std::size_t e = 0; e < x[i].size(); ++e) {
            Reg const n = normalized(k, config, s, x[i][e]);
            y.push_back(layer ? k.fma(n, g[e], b[e]) : k.mul(n, g[e]));
        }
        store_vector(k, Address(out_at, offset), y, ok[i]);
    }
}

// The row in registers: one read, the statistics from the registers, one write.
void norm_registers(Kernel& k, NormConfig const& config, RowFrame const& f, Params const& p) {
    RowConfig const& c = config.row;
    Held h = load_held(k, c, f, thread_address(k, f, p.in), 0.0f);  // 0: adds nothing to the sums
    RowScale s;
    if (config.op == Op::rms_norm) {
        std::vector<Reg> squares;
        for (auto const& v : h.x) squares.push_back(sum_of_squares(k, v));
        Reg const total = reduce_row(k, c, f, {tree_sum(k, squares)}, {0.0f}, sum_combine(k), "row_squares")[0];
        s.scale = inverse_root(k, k.mul(total, p.inverse_count), p.eps);
    } else {
        std::vector<Reg> all;
        for (auto const& v : h.x) all.insert(all.end(), v.begin(), v.end());
        Reg const total = reduce_row(k, c, f, {tree_sum(k, all)}, {0.0f}, sum_combine(k), "row_sum")[0];
        Reg const center = k.mul(total, p.inverse_count);
        std::vector<Reg> sums, squares;
        for (std::size_t i = 0; i < h.x.size(); ++i) {
            std::vector<Reg> d;
            for (Reg x : h.x[i]) d.push_back(k.sub(x, center));
            // Slots past the row end would add -center.
            sums.push_back(k.selp(tree_sum(k, d), 0.0f, h.ok[i], Type::f32));
            squares.push_back(k.selp(sum_of_squares(k, d), 0.0f, h.ok[i], Type::f32));
        }
        auto const second = reduce_row(k, c, f, {tree_sum(k, sums), tree_sum(k, squares)}, {0.0f, 0.0f},
                                       sum_combine(k), "row_centred");
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
    std::int64_t const stride = static_cast<std::int64_t>(c.block) * c.vector * 4;
    unsigned const bytes = c.vector * 4;
    auto load = [&](Reg j, std::vector<Reg> const& ok) {
        return load_vectors(k, c.vector, k.element_address(row_in, j, bytes), c.items, stride, ok, 0.0f);
    };

    RowScale s;
    if (config.op == Op::rms_norm) {
        Reg const acc = k.mov(Type::f32, 0.0f);
        loop_row(k, c, f, vectors, [&](Reg j, std::vector<Reg> const& ok) {
            std::vector<Reg> squares;
            for (auto const& v : load(j, ok)) squares.push_back(sum_of_squares(k, v));
            k.add(acc, acc, tree_sum(k, squares));
        });
        Reg const total = reduce_row(k, c, f, {acc}, {0.0f}, sum_combine(k), "row_squares")[0];
        s.scale = inverse_root(k, k.mul(total, p.inverse_count), p.eps);
    } else {
        Reg const acc = k.mov(Type::f32, 0.0f);
        loop_row(k, c, f, vectors, [&](Reg j, std::vector<Reg> const& ok) {
            std::vector<Reg> all;
            for (auto const& v : load(j, ok)) all.insert(all.end(), v.begin(), v.end());
            k.add(acc, acc, tree_sum(k, all));
        });
        Reg const total = reduce_row(k, c, f, {acc}, {0.0f}, sum_combine(k), "row_sum")[0];
        Reg const center = k.mul(total, p.inverse_count);
        Reg const acc_sum = k.mov(Type::f32, 0.0f), acc_squares = k.mov(Type::f32, 0.0f);
        loop_row(k, c, f, vectors, [&](Reg j, std::vector<Reg> const& ok) {
            auto const x = load(j, ok);
            std::vector<Reg> sums, squares;
            for (std::size_t i = 0; i < x.size(); ++i) {
                std::vector<Reg> d;
                for (Reg v : x[i]) d.push_back(k.sub(v, center));
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
        auto const second =
            reduce_row(k, c, f, {acc_sum, acc_squares}, {0.0f, 0.0f}, sum_combine(k), "row_centred");
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
    return std::string(to_string(config.op)) + "_" + to_string(config.row);
}

Kernel normalization(NormConfig const& config) {
    if (config.op != Op::layer_norm && config.op != Op::rms_norm)
        throw BuildError("ptx: normalization generates layer_norm and rms_norm, not " + std::string(to_string(config.op)));
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
    RowFrame const f = row_frame(k, config.row, rows, cols);
    if (config.row.layout == RowLayout::block_loop) norm_loop(k, config, f, p);
    else norm_registers(k, config, f, p);
    return k;
}

}  // namespace rayo::ptx::kernels
