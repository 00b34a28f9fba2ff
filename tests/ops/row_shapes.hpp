// The shapes of the row-wise cases (softmax, the norms): row lengths on each side of every switch
// between the backends' forms — one invocation or a warp per row up to 64, rows held in registers,
// rows re-read in passes past 8192 (16384 with 512-invocation workgroups) — lengths not a multiple
// of 4 (the scalar forms), more rows than one dispatch has workgroups, 0-sized and 3-D tensors.
#pragma once

#include <rayo/shape.hpp>

#include <vector>

namespace rayo::test::ops {

inline std::vector<Shape> row_shapes() {
    return {Shape{1, 1},    Shape{7, 64},     Shape{5, 65},    Shape{9, 100},    Shape{3, 257},    Shape{11, 1001},
            Shape{6, 4096}, Shape{3, 4095},   Shape{2, 6000},  Shape{2, 8188},   Shape{3, 8191},   Shape{2, 8192},
            Shape{3, 8193}, Shape{2, 8196},   Shape{2, 16385}, Shape{1, 100003}, Shape{4, 9, 130}, Shape{0, 5},
            Shape{3, 0},    Shape{65537, 67}, Shape{66001, 72}};
}

}  // namespace rayo::test::ops
