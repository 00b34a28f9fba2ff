#version 450
// out = a op b with NumPy broadcasting, over the collapsed layout of src/dispatch/broadcast.hpp:
// at most 8 axes, the outermost first, each operand's stride 0 along the axes it repeats. The op
// is specialization constant 0, the layout's rank constant 2. VEC4 (constant 3, set where the
// innermost axis is a multiple of 4 and every operand read along it starts on a vec4): each
// invocation takes 4 consecutive outputs of a row, so the index arithmetic is once per vec4 and an
// operand repeated along the row is one load.
#extension GL_GOOGLE_include_directive : require
#ifdef RAYO_ELEMENT16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif
#extension GL_EXT_control_flow_attributes : require
#include "float_controls.glsl"
#include "float_math.glsl"
#include "op_codes.glsl"
#include "element16.glsl"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const uint OP = RAYO_OP_ADD;
layout(constant_id = 2) const uint RANK = 1;
layout(constant_id = 3) const bool VEC4 = false;
#include "binary_op.glsl"

#include "binary_buffers.glsl"

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

// The operands' offsets of output element i.
void offsets(uint i, out uint ia, out uint ib) {
    uint rest = i;
    ia = params.a_offset;
    ib = params.b_offset;
    [[unroll]] for (int d = int(RANK) - 1; d >= 0; --d) {
        uint len = params.dims[d];
        uint c = rest % len;
        rest /= len;
        ia += c * params.a_strides[d];
        ib += c * params.b_strides[d];
    }
}

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (VEC4) {
        bool a_row = params.a_strides[RANK - 1] == 1, b_row = params.b_strides[RANK - 1] == 1;  // else repeated
        for (uint q = gl_GlobalInvocationID.x; q < params.n / 4; q += stride) {
            uint ia, ib;
            offsets(q * 4, ia, ib);
            vec4 u = a_row ? load_a4(ia / 4) : vec4(load_a(ia));
            vec4 v = b_row ? load_b4(ib / 4) : vec4(load_b(ib));
            store_y4(params.out_offset / 4 + q,
                     vec4(apply(u.x, v.x), apply(u.y, v.y), apply(u.z, v.z), apply(u.w, v.w)));
        }
        return;
    }
    for (uint i = gl_GlobalInvocationID.x; i < params.n; i += stride) {
        uint ia, ib;
        offsets(i, ia, ib);
        store_y(params.out_offset + i, apply(load_a(ia), load_b(ib)));
    }
}
