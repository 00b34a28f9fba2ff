// The harness's tolerances, one table (tolerances.cpp): per op and element type, with a column per
// backend where backends document different accuracy.
#pragma once

#include <rayo/device.hpp>
#include <rayo/dtype.hpp>
#include <rayo/op_table.hpp>

namespace rayo::test::ops {

struct Tolerance {
    // >= 0: the error in units in the last place of the float nearest the exact result (0: exact).
    double ulp = -1;
    // Otherwise |got − want| <= rel · scale + rounding · magnitude + abs, where the case gives the
    // scale (|want|, Σ|x|, √k·Σ|a·b|) and the magnitude (Σ|a·b|: an operand rounded on its way
    // into a product errs by `rounding` of it).
    double rel = 0, abs = 0, rounding = 0;
};

[[nodiscard]] Tolerance tolerance(Op op, DType dtype, DeviceKind backend);

}  // namespace rayo::test::ops
