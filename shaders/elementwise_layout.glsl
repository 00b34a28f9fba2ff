// What the element-wise shaders share: the workgroup size (specialization constant 1) and the push
// constants, which mirror rayo::vulkan::ElementwiseParams. Offsets are in elements from the start
// of each binding (a tensor may be a view into its allocation).
layout(local_size_x_id = 1) in;

layout(push_constant) uniform Params {
    uint n;
    uint a_offset;
    uint b_offset;
    uint out_offset;
    float a;  // leaky_relu/elu alpha, clip lo, or the scalar operand
    float b;  // clip hi
} params;
