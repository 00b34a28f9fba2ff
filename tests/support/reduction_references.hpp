// Float64 references of the reductions over one axis (or everything), with the CPU's rules for
// max/min and their indices: the first index of the extreme wins, and the first NaN wins over
// everything. Shared by the CUDA and Vulkan tests.
#pragma once

#include <rayo/shape.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rayo::test {

struct ReductionReference {
    std::vector<double> sum, abs_sum;
    std::vector<float> max, min;
    std::vector<std::int64_t> argmax, argmin;
};

// Over axis `axis` of `shape`, or everything when axis < 0.
inline ReductionReference reduction_reference(std::vector<float> const& in, Shape const& shape, int axis) {
    std::size_t outer = 1, extent = in.size(), inner = 1;
    if (axis >= 0) {
        extent = static_cast<std::size_t>(shape[static_cast<std::size_t>(axis)]);
        for (std::size_t i = 0; i < shape.rank(); ++i) {
            if (i < static_cast<std::size_t>(axis)) outer *= static_cast<std::size_t>(shape[i]);
            if (i > static_cast<std::size_t>(axis)) inner *= static_cast<std::size_t>(shape[i]);
        }
    }
    ReductionReference r;
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t j = 0; j < inner; ++j) {
            double s = 0, a = 0;
            float mx = 0, mn = 0;
            std::int64_t imx = 0, imn = 0;
            for (std::size_t e = 0; e < extent; ++e) {
                float const v = in[(o * extent + e) * inner + j];
                s += v;
                a += std::abs(static_cast<double>(v));
                if (e == 0) {
                    mx = mn = v;
                    continue;
                }
                auto const i = static_cast<std::int64_t>(e);
                if (!std::isnan(mx) && (std::isnan(v) || v > mx)) mx = v, imx = i;
                if (!std::isnan(mn) && (std::isnan(v) || v < mn)) mn = v, imn = i;
            }
            r.sum.push_back(s), r.abs_sum.push_back(a), r.max.push_back(mx), r.min.push_back(mn);
            r.argmax.push_back(imx), r.argmin.push_back(imn);
        }
    return r;
}

}  // namespace rayo::test
