// The direct conv2d kernel (rayo/ptx/kernels/convolution.hpp).
#include "rayo/ptx/kernels/convolution.hpp"

#include <string>

#include "ptx/kernels/convolution_params.hpp"
#include "ptx/kernels/element_access.hpp"
#include "ptx/kernels/strided_layout.hpp"

namespace rayo::ptx::kernels {

Kernel conv2d_direct(Conv2dKernelConfig const& config) {
    using namespace element_detail;
    DType const e = config.element;
    std::string const name =
        "rayo_conv2d_direct" + element_suffix(e) + (config.flip ? "_flip" : "") + (config.bias ? "_bias" : "");
    check_floating(name, e);
    Kernel k(name);
    k.max_threads(config.block_threads);
    conv_detail::Conv2dParams const p = conv_detail::declare_params(k, "total");
    Reg const taps = k.mul(p.kh, p.kw);
    Reg const plane = k.mul(p.h, p.w_in);
    layout_detail::grid_loop_u32(k, p.count, [&](Reg index) {
        // index = ((n·o + oc)·oh + y)·ow + x
        Reg rest = k.div(index, p.ow);
        Reg const ox = k.sub(index, k.mul(rest, p.ow));
        Reg const next = k.div(rest, p.oh);
        Reg const oy = k.sub(rest, k.mul(next, p.oh));
        Reg const n = k.div(next, p.o);
        Reg const oc = k.sub(next, k.mul(n, p.o));
        // Input coordinates wrap below 0 as .u32, so one unsigned compare bounds both sides.
        Reg const y0 = k.sub(k.mul(oy, p.stride_h), p.pad_h);
        Reg const x0 = k.sub(k.mul(ox, p.stride_w), p.pad_w);
        Reg const channel0 = k.add(k.mul(n, p.c), k.mul(k.div(oc, p.og), p.cg));
        Reg const acc = config.bias ? load_at(k, e, p.bias, oc) : k.mov(Type::f32, 0.0f);
        Reg const ci = k.reg(Type::u32), i = k.reg(Type::u32), j = k.reg(Type::u32);
        k.for_range(ci, 0u, p.cg, 1u, [&] {
            Reg const x_plane = k.mul(k.add(channel0, ci), plane);
            Reg const kernel = k.mul(k.add(k.mul(oc, p.cg), ci), taps);
            k.for_range(i, 0u, p.kh, 1u, [&] {
                Reg const y = k.add(y0, k.mul(i, p.dilation_h));
                k.if_then(k.setp(Cmp::lt, y, p.h), [&] {
                    Reg const row = k.add(x_plane, k.mul(y, p.w_in));
                    k.for_range(j, 0u, p.kw, 1u, [&] {
                        Reg const x = k.add(x0, k.mul(j, p.dilation_w));
                        k.if_then(k.setp(Cmp::lt, x, p.w_in), [&] {
                            Reg tap = k.add(k.mul(i, p.kw), j);
                            if (config.flip) tap = k.sub(k.sub(taps, 1u), tap);
                            Reg const xv = load_at(k, e, p.x, k.add(row, x));
                            Reg const wv = load_at(k, e, p.w, k.add(kernel, tap));
                            k.fma(acc, xv, wv, acc);
                        });
                    });
                });
            });
        });
        store(k, e, k.element_address(p.out, index, 1u << size_shift(e)), acc);
    });
    return k;
}

}  // namespace rayo::ptx::kernels
