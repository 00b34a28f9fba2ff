// The cast kernel (rayo/ptx/kernels/conversion.hpp): a load of the source type, the conversion as
// a few cvt instructions, a store of the destination type.
#include "rayo/ptx/kernels/conversion.hpp"

#include <string>

#include "ptx/kernels/element_access.hpp"
#include "ptx/kernels/strided_loop.hpp"

namespace rayo::ptx::kernels {

namespace {

using element_detail::is_16bit;
using element_detail::raw_type;

bool castable(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::i32; }

// v (.s32) as a float rounded toward zero with its last bit set when inexact: rounding it once
// more to a narrower float gives v rounded directly.
Reg round_to_odd(Kernel& k, Reg v) {
    Reg const t = k.cvt(Type::f32, v, Rounding::rz);
    Reg const inexact = k.setp(Cmp::ne, k.cvt(Type::s32, t, Rounding::rzi), v);
    Reg const bits = k.or_(k.bitcast(Type::b32, t), k.selp(1u, 0u, inexact, Type::b32));
    return k.bitcast(Type::f32, bits);
}

// The value (an .f32, or the .s32 of an i32 source) converted to `to`, as the register to store.
Reg convert(Kernel& k, DType from, DType to, Reg value) {
    if (from == DType::i32) {
        if (to == DType::i32) return value;
        if (to == DType::bf16) return k.bitcast(Type::b16, k.cvt(Type::bf16, round_to_odd(k, value), Rounding::rn));
        // f32: one rounding; f16: the f32 is exact below 2^24, and past 65520 both give ±Inf.
        value = k.cvt(Type::f32, value, Rounding::rn);
    }
    if (to == DType::i32) return k.cvt(Type::s32, value, Rounding::rzi);  // saturating; NaN gives 0
    return element_detail::narrow(k, to, value);
}

// The raw register of one converted element.
Reg cast_element(Kernel& k, CastKernelConfig const& config, Reg raw) {
    if (config.from == config.to) return raw;
    return convert(k, config.from, config.to, element_detail::widen(k, config.from, raw));
}

// Four consecutive elements at a 4-element aligned address: one 16-byte (32-bit types) or 8-byte
// (16-bit types) access each way.
void cast_four(Kernel& k, CastKernelConfig const& config, Reg in, Reg out, Reg group) {
    std::vector<Reg> results;
    for (Reg raw :
         element_detail::load_four_raw(k, config.from, k.add(in, k.shl(group, is_16bit(config.from) ? 3 : 4))))
        results.push_back(cast_element(k, config, raw));
    element_detail::store_four_raw(k, config.to, k.add(out, k.shl(group, is_16bit(config.to) ? 3 : 4)), results);
}

}  // namespace

Kernel cast(CastKernelConfig const& config) {
    std::string const name = "rayo_cast_" + std::string(to_string(config.from)) + "_" +
                             std::string(to_string(config.to)) + (config.vectorized ? "_v4" : "");
    if (!castable(config.from) || !castable(config.to))
        throw BuildError("ptx kernel '" + name + "': cast takes f32, f16, bf16 and i32");
    Kernel k(name);
    k.max_threads(config.block_threads);
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const in = k.cvta_to_global(k.param(Type::u64, "in"));
    Reg const n = k.param(Type::u64, "n");
    Reg const tid = k.special(Special::tid_x), ntid = k.special(Special::ntid_x);
    Reg const ctaid = k.special(Special::ctaid_x), nctaid = k.special(Special::nctaid_x);
    Reg const first = k.add(k.mul_wide(ctaid, ntid), k.cvt(Type::u64, tid));
    Reg const step = k.mul_wide(nctaid, ntid);
    auto element = [&](Reg i) {
        Address const from = k.add(in, k.shl(i, is_16bit(config.from) ? 1 : 2));
        Address const to = k.add(out, k.shl(i, is_16bit(config.to) ? 1 : 2));
        k.st(Space::global, raw_type(config.to), to,
             cast_element(k, config, k.ld(Space::global, raw_type(config.from), from)));
    };
    if (!config.vectorized) {
        loop_detail::strided_loop(k, first, n, step, 1, [&](std::vector<Reg> const& i) { element(i[0]); });
        return k;
    }
    // Groups of 4, two at a time per thread for memory-level parallelism; then the n % 4 last
    // elements, one per thread.
    Reg const groups = k.shr(n, 2);
    loop_detail::strided_loop(k, first, groups, step, 2, [&](std::vector<Reg> const& g) {
        for (Reg group : g) cast_four(k, config, in, out, group);
    });
    Reg const tail = k.add(k.shl(groups, 2), first);
    k.if_then(k.setp(Cmp::lt, tail, n), [&] { element(tail); });
    return k;
}

}  // namespace rayo::ptx::kernels
