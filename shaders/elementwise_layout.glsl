// What the element-wise shaders share: the workgroup size (specialization constant 1) and the push
// constants, which mirror ElementwisePush (src/vulkan/ops/elementwise.cpp). Offsets are in elements
// from the start of each binding (a tensor may be a view into its allocation).
layout(local_size_x_id = 1) in;
// VEC4, set where every offset is a multiple of 4 elements (the host checks): the invocations take
// vec4s (16-byte accesses) in a grid-stride loop, and the first n % 4 of them the scalar tail.
layout(constant_id = 3) const bool VEC4 = false;

layout(push_constant) uniform Params {
    uint n;
    uint a_offset;
    uint b_offset;
    uint out_offset;
    float a;  // leaky_relu/elu alpha, clip lo, or the scalar operand
    float b;  // clip hi
} params;
