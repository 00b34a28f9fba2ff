// What the broadcast and strided-copy generators share: the collapsed layout of two operands
// (src/dispatch/broadcast.hpp) as kernel parameters, each operand's element offset of an output
// element, and a 32-bit grid-stride loop. Not part of the API.
#pragma once

#include <array>
#include <functional>
#include <string>

#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels::layout_detail {

inline constexpr unsigned max_rank = 8;

struct StridedParams {
    std::array<Reg, max_rank> dims, first, second;  // .u32: lengths, and each operand's strides in elements
};

// Declares dim0..dim7, <first>0..7 and <second>0..7 as .u32 parameters, in that order.
inline StridedParams strided_params(Kernel& k, std::string const& first, std::string const& second) {
    StridedParams p;
    for (unsigned d = 0; d < max_rank; ++d) p.dims[d] = k.param(Type::u32, "dim" + std::to_string(d));
    for (unsigned d = 0; d < max_rank; ++d) p.first[d] = k.param(Type::u32, first + std::to_string(d));
    for (unsigned d = 0; d < max_rank; ++d) p.second[d] = k.param(Type::u32, second + std::to_string(d));
    return p;
}

// The two operands' element offsets (.u32) of flat element `index` over the first `rank` axes,
// the innermost axis first.
inline std::array<Reg, 2> strided_offsets(Kernel& k, StridedParams const& p, unsigned rank, Reg index) {
    Reg rest = k.mov(Type::u32, index), first = k.mov(Type::u32, 0u), second = k.mov(Type::u32, 0u);
    for (unsigned d = rank; d-- > 0;) {
        Reg const coordinate = d ? k.rem(rest, p.dims[d]) : rest;
        if (d) rest = k.div(rest, p.dims[d]);
        first = k.fma(coordinate, p.first[d], first);
        second = k.fma(coordinate, p.second[d], second);
    }
    return {first, second};
}

// body(i) for the .u32 indices i < count, one per thread and step of a grid-stride loop.
inline void grid_loop_u32(Kernel& k, Reg count, std::function<void(Reg)> const& body) {
    Reg i = k.global_thread_index();
    Reg const step = k.mul(k.special(Special::nctaid_x), k.special(Special::ntid_x));
    Label top = k.label(), done = k.label();
    k.place(top);
    k.bra_if(k.setp(Cmp::ge, i, count), done);
    body(i);
    k.add(i, i, step);
    k.bra(top);
    k.place(done);
}

}  // namespace rayo::ptx::kernels::layout_detail
