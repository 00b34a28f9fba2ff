// The rope kernel (rayo/ptx/kernels/rotary.hpp).
#include "rayo/ptx/kernels/rotary.hpp"

#include <cstdint>
#include <string>

#include "ptx/kernels/element_access.hpp"
#include "ptx/kernels/strided_layout.hpp"

namespace rayo::ptx::kernels {

namespace {

namespace ed = element_detail;

// e^x's reduction x = n·ln2 + r (the CPU's constants, vector_math.hpp) and its polynomial.
constexpr float log2e = 0x1.715476p+0f, ln2_hi = 0x1.63p-1f, ln2_lo = -0x1.bd0106p-13f, round_magic = 0x1.8p+23f;
// π/2 = pio2_1 + pio2_2 + pio2_3 (the first two floats, the third the rest rounded), and 2/π.
constexpr float pio2_1 = 0x1.921fb6p+0f, pio2_2 = -0x1.777a5cp-25f, pio2_3 = -0x1.ee59dap-50f,
                two_over_pi = 0x1.45f306p-1f;

// e^(x_hi + x_lo) for x_hi in [−104, 88] (the caller clamps), x_lo a small correction.
Reg exp_double_float(Kernel& k, Reg x_hi, Reg x_lo) {
    Reg t = k.fma(x_hi, log2e, round_magic);
    Reg n = k.sub(t, round_magic);
    Reg r = k.add(k.fma(n, -ln2_lo, k.fma(n, -ln2_hi, x_hi)), x_lo);
    Reg r2 = k.mul(r, r);
    Reg p01 = k.fma(r, 1.6666665459e-1f, 5.0000001201e-1f);
    Reg p23 = k.fma(r, 8.3334519073e-3f, 4.1665795894e-2f);
    Reg p45 = k.fma(r, 1.9875691500e-4f, 1.3981999507e-3f);
    Reg p = k.add(k.fma(k.fma(k.fma(p45, r2, p23), r2, p01), r2, r), 1.0f);
    // 2^n as two power-of-two factors, so that a subnormal result is rounded once.
    Reg bits = k.sub(k.bitcast(Type::s32, t), static_cast<std::int64_t>(0x4b400000));
    Reg n1 = k.shr(bits, 1);
    Reg n2 = k.sub(bits, n1);
    Reg s1 = k.bitcast(Type::f32, k.shl(k.add(n1, 127), 23));
    Reg s2 = k.bitcast(Type::f32, k.shl(k.add(n2, 127), 23));
    return k.mul(k.mul(p, s1), s2);
}

struct SinCos {
    Reg sin, cos;
};

// sin and cos of a (|a| < 2^21): a = q·π/2 + r, r from exact products of q and the parts of π/2
// (a − q·pio2_1 is exact), Taylor series to r^11 and r^12 (truncation under 1e-11 for
// |r| <= π/4), then q's quadrant.
SinCos sin_cos(Kernel& k, Reg a) {
    // q = a·2/π rounded to an integer by the magic number (|q| < 2^22); t's low bits hold q.
    Reg t = k.fma(a, two_over_pi, round_magic);
    Reg q = k.sub(t, round_magic);
    Reg p1 = k.mul(q, pio2_1);
    Reg e1 = k.fma(q, pio2_1, k.neg(p1));
    Reg p2 = k.mul(q, pio2_2);
    Reg e2 = k.fma(q, pio2_2, k.neg(p2));
    Reg r = k.sub(k.sub(k.sub(k.sub(a, p1), p2), e1), e2);
    r = k.fma(q, -pio2_3, r);
    Reg r2 = k.mul(r, r);
    Reg sp = k.fma(k.fma(k.fma(k.fma(k.mov(Type::f32, -0x1.ae6456p-26f), r2, 0x1.71de3ap-19f), r2, -0x1.a01a02p-13f),
                         r2, 0x1.111112p-7f),
                   r2, -0x1.555556p-3f);
    Reg sin_r = k.fma(k.mul(r, r2), sp, r);
    Reg cp = k.fma(k.fma(k.fma(k.fma(k.mov(Type::f32, 0x1.1eed8ep-29f), r2, -0x1.27e4fcp-22f), r2, 0x1.a01a02p-16f), r2,
                         -0x1.6c16c2p-10f),
                   r2, 0x1.555556p-5f);
    Reg cos_r = k.fma(r2, k.fma(r2, cp, -0.5f), 1.0f);
    // Quadrant q: (sin, cos) = (S, C), (C, −S), (−S, −C), (−C, S).
    Reg const quadrant = k.and_(k.bitcast(Type::b32, t), 3);
    Reg const odd = k.setp(Cmp::ne, k.and_(quadrant, 1), 0);
    Reg const negate_sin = k.setp(Cmp::ne, k.and_(quadrant, 2), 0);
    Reg const negate_cos = k.setp(Cmp::ne, k.and_(k.add(quadrant, 1), 2), 0);
    Reg const s = k.selp(cos_r, sin_r, odd, Type::f32);
    Reg const c = k.selp(sin_r, cos_r, odd, Type::f32);
    return {k.selp(k.neg(s), s, negate_sin, Type::f32), k.selp(k.neg(c), c, negate_cos, Type::f32)};
}

}  // namespace

Kernel rope(RopeKernelConfig const& config) {
    std::string const name = std::string("rayo_rope") + (config.halves ? "_halves" : "") +
                             (config.has_factors ? "_factors" : "") + ed::element_suffix(config.element);
    ed::check_floating(name, config.element);
    Kernel k(name);
    k.max_threads(config.block_threads);
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const x = k.cvta_to_global(k.param(Type::u64, "x"));
    Reg const positions = k.cvta_to_global(k.param(Type::u64, "positions"));
    Reg const factors = k.cvta_to_global(k.param(Type::u64, "factors"));
    Reg const total = k.param(Type::u32, "total");
    Reg const lanes = k.param(Type::u32, "lanes");
    Reg const groups = k.param(Type::u32, "groups");
    Reg const heads = k.param(Type::u32, "heads");
    Reg const head_dim = k.param(Type::u32, "head_dim");
    Reg const n_dims = k.param(Type::u32, "n_dims");
    Reg const entries = k.param(Type::u32, "entries");
    Reg const c_hi = k.param(Type::f32, "c_hi");
    Reg const c_lo = k.param(Type::f32, "c_lo");
    Reg const freq_scale = k.param(Type::f32, "freq_scale");
    unsigned const shift = ed::size_shift(config.element);
    Reg const half = k.shr(n_dims, 1);
    // A thread takes heads g, g + groups, ... of its token and lane.
    Reg const head_step = k.shl(k.cvt(Type::u64, k.mul(head_dim, groups)), shift);
    Reg const token_lanes = k.mul(lanes, groups);
    layout_detail::grid_loop_u32(k, total, [&](Reg i) {
        Reg const t = k.div(i, token_lanes);
        Reg const in_token = k.sub(i, k.mul(t, token_lanes));
        Reg const g = k.div(in_token, lanes);
        Reg const lane = k.sub(in_token, k.mul(g, lanes));
        // The first element of the token's head g, .u64.
        Reg const row = k.add(k.mul_wide(t, k.mul(heads, head_dim)), k.mul_wide(g, head_dim));
        Reg const h = k.reg(Type::u32);
        k.if_then_else(
            k.setp(Cmp::lt, lane, half),
            [&] {
                // The pair's angle, its cosine and sine.
                Reg const pf = k.cvt(Type::f32, lane, Rounding::rn);
                Reg const e_hi = k.mul(pf, c_hi);
                Reg const e_lo = k.fma(pf, c_lo, k.fma(pf, c_hi, k.neg(e_hi)));
                Reg const clamped = k.max(k.min(e_hi, 88.0f), -104.0f);
                Reg const entry = k.rem(t, entries);
                Reg const position = k.ld(Space::global, Type::s32, k.element_address(positions, entry, 4));
                Reg angle = k.mul(k.mul(k.cvt(Type::f32, position, Rounding::rn), exp_double_float(k, clamped, e_lo)),
                                  freq_scale);
                if (config.has_factors)
                    angle = k.div(angle, k.ld(Space::global, Type::f32, k.element_address(factors, lane, 4)));
                SinCos const sc = sin_cos(k, angle);
                Reg const first = config.halves ? lane : k.shl(lane, 1);
                Reg const gap =
                    config.halves ? k.shl(k.cvt(Type::u64, half), shift) : k.mov(Type::u64, std::uint64_t{1} << shift);
                Reg const offset = k.shl(k.add(row, k.cvt(Type::u64, first)), shift);
                Reg const src = k.add(x, offset), dst = k.add(out, offset);
                k.for_range(h, g, heads, groups, [&] {
                    Reg const a = ed::load(k, config.element, Address(src));
                    Reg const b = ed::load(k, config.element, Address(k.add(src, gap)));
                    Reg const u = k.sub(k.mul(a, sc.cos), k.mul(b, sc.sin));
                    Reg const v = k.add(k.mul(a, sc.sin), k.mul(b, sc.cos));
                    ed::store(k, config.element, Address(dst), u);
                    ed::store(k, config.element, Address(k.add(dst, gap)), v);
                    k.add(src, src, head_step);
                    k.add(dst, dst, head_step);
                });
            },
            [&] {
                // A copied dimension of every head.
                Reg const d = k.add(n_dims, k.sub(lane, half));
                Reg const offset = k.shl(k.add(row, k.cvt(Type::u64, d)), shift);
                Reg const src = k.add(x, offset), dst = k.add(out, offset);
                Type const raw = ed::raw_type(config.element);
                k.for_range(h, g, heads, groups, [&] {
                    k.st(Space::global, raw, Address(dst), k.ld(Space::global, raw, Address(src)));
                    k.add(src, src, head_step);
                    k.add(dst, dst, head_step);
                });
            });
    });
    return k;
}

}  // namespace rayo::ptx::kernels
