#version 450
// out = a op b with NumPy broadcasting, over the collapsed layout of src/dispatch/broadcast.hpp:
// at most 8 axes, the outermost first, each operand's stride 0 along the axes it repeats. The op
// is specialization constant 0, the layout's rank constant 2.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "float_controls.glsl"
#include "float_math.glsl"
#include "op_codes.glsl"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const uint OP = RAYO_OP_ADD;
layout(constant_id = 2) const uint RANK = 1;
#include "binary_op.glsl"

layout(std430, set = 0, binding = 0) readonly buffer InputA { float a[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output { float y[]; };
layout(std430, set = 0, binding = 2) readonly buffer InputB { float b[]; };

// Mirrors BroadcastPush (src/vulkan/ops/elementwise.cpp); offsets and strides in elements.
layout(push_constant) uniform Params {
    uint n;
    uint a_offset;
    uint b_offset;
    uint out_offset;
    uint dims[8];
    uint a_strides[8];
    uint b_strides[8];
} params;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < params.n; i += stride) {
        uint rest = i, ia = params.a_offset, ib = params.b_offset;
        [[unroll]] for (int d = int(RANK) - 1; d >= 0; --d) {
            uint len = params.dims[d];
            uint c = rest % len;
            rest /= len;
            ia += c * params.a_strides[d];
            ib += c * params.b_strides[d];
        }
        y[params.out_offset + i] = apply(a[ia], b[ib]);
    }
}
