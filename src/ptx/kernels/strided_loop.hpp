// The strided loop the element-wise and reduction generators share. Not part of the API.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx::kernels::loop_detail {

// Calls `group` with the .u64 indices start, start + step, ... below `count`: `unroll` at a time
// while all of them are in range (so the group's loads are issued together, for memory-level
// parallelism), then one at a time. The indices of one call, and of successive calls, increase.
inline void strided_loop(Kernel& k, Reg start, Reg count, Reg step, unsigned unroll,
                         std::function<void(std::vector<Reg> const&)> const& group) {
    Reg index = k.mov(Type::u64, start);
    if (unroll > 1) {
        Reg last = k.mul(step, std::int64_t{unroll - 1});
        Reg stride = k.mul(step, std::int64_t{unroll});
        Label top = k.label(), done = k.label();
        k.place(top);
        k.bra_if(k.setp(Cmp::ge, k.add(index, last), count), done);
        std::vector<Reg> indices{index};
        for (unsigned u = 1; u < unroll; ++u) indices.push_back(k.add(indices.back(), step));
        group(indices);
        k.add(index, index, stride);
        k.bra(top);
        k.place(done);
    }
    Label top = k.label(), done = k.label();
    k.place(top);
    k.bra_if(k.setp(Cmp::ge, index, count), done);
    group({index});
    k.add(index, index, step);
    k.bra(top);
    k.place(done);
}

}  // namespace rayo::ptx::kernels::loop_detail
