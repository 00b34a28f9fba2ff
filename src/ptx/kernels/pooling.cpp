// The pooling kernel (rayo/ptx/kernels/pooling.hpp).
#include "rayo/ptx/kernels/pooling.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "ptx/kernels/element_access.hpp"
#include "ptx/kernels/strided_layout.hpp"

namespace rayo::ptx::kernels {

namespace {

namespace ed = element_detail;

// The rows or columns [first, last) of the image a window starting at `start` covers (.s32).
struct Extent {
    Reg first, last;
};
Extent window(Kernel& k, Reg start, Reg size, Reg extent) {
    return {k.max(start, 0), k.min(k.add(start, size), extent)};
}

Reg as_s32(Kernel& k, Reg u) { return k.bitcast(Type::s32, u); }

}  // namespace

Kernel pool2d(Pool2dKernelConfig const& config) {
    bool const is_max = config.op == Op::max_pool2d;
    if (!is_max && config.op != Op::avg_pool2d)
        throw BuildError("ptx kernel 'rayo_pool2d': the op must be max_pool2d or avg_pool2d");
    std::string const name = "rayo_" + std::string(to_string(config.op)) +
                             (!is_max && !config.count_include_pad ? "_exclude_pad" : "") +
                             ed::element_suffix(config.element);
    ed::check_floating(name, config.element);
    Kernel k(name);
    k.max_threads(config.block_threads);
    Reg const out = k.cvta_to_global(k.param(Type::u64, "out"));
    Reg const x = k.cvta_to_global(k.param(Type::u64, "x"));
    Reg const total = k.param(Type::u32, "total");
    Reg const h = as_s32(k, k.param(Type::u32, "h"));
    Reg const w = as_s32(k, k.param(Type::u32, "w"));
    Reg const oh = k.param(Type::u32, "oh");
    Reg const ow = k.param(Type::u32, "ow");
    Reg const kh = as_s32(k, k.param(Type::u32, "kh"));
    Reg const kw = as_s32(k, k.param(Type::u32, "kw"));
    Reg const stride_h = k.param(Type::u32, "stride_h");
    Reg const stride_w = k.param(Type::u32, "stride_w");
    Reg const pad_h = as_s32(k, k.param(Type::u32, "pad_h"));
    Reg const pad_w = as_s32(k, k.param(Type::u32, "pad_w"));
    layout_detail::grid_loop_u32(k, total, [&](Reg i) {
        Reg const rest = k.div(i, ow);
        Reg const ox = k.sub(i, k.mul(rest, ow));
        Reg const plane = k.div(rest, oh);
        Reg const oy = k.sub(rest, k.mul(plane, oh));
        Extent const ys = window(k, k.sub(as_s32(k, k.mul(oy, stride_h)), pad_h), kh, h);
        Extent const xs = window(k, k.sub(as_s32(k, k.mul(ox, stride_w)), pad_w), kw, w);
        Reg const base = k.mul(as_s32(k, plane), k.mul(h, w));
        Reg const acc = k.mov(Type::f32, is_max ? -std::numeric_limits<float>::infinity() : 0.0f);
        Reg const r = k.reg(Type::s32), c = k.reg(Type::s32);
        k.for_range(r, ys.first, ys.last, 1, [&] {
            Reg const row = k.add(base, k.mul(r, w));
            k.for_range(c, xs.first, xs.last, 1, [&] {
                Reg const v = ed::load_at(k, config.element, x, k.add(row, c));
                if (is_max) {
                    // v when v > acc or v is NaN, unless acc is NaN already.
                    Reg const take = k.and_pred(k.not_pred(k.setp(Cmp::le, v, acc)), k.setp(Cmp::eq, acc, acc));
                    k.predicated(take, true, [&] { k.mov(acc, v); });
                } else {
                    k.add(acc, acc, v);
                }
            });
        });
        Reg result = acc;
        if (!is_max) {
            Reg const cells =
                config.count_include_pad ? k.mul(kh, kw) : k.mul(k.sub(ys.last, ys.first), k.sub(xs.last, xs.first));
            result = k.div(acc, k.cvt(Type::f32, cells, Rounding::rn));
        }
        ed::store(k, config.element, Address(k.element_address(out, i, 1u << ed::size_shift(config.element))), result);
    });
    return k;
}

}  // namespace rayo::ptx::kernels
