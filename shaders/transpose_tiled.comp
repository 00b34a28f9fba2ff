#version 450
// copy of a batch of matrix transpositions, out[b][r, c] = in[b][c, r]: 32 x 32 tiles staged in
// shared memory (rows padded to 33 slots, so that reading a column touches 32 banks), so that the
// loads run along in's rows and the stores along out's. Workgroups of 32 x 8 invocations, 4
// elements each; groups (ceil(cols / 32), ceil(rows / 32), batch). WIDE (constant 2): 32-bit
// elements; otherwise 16-bit ones, through 16-bit storage.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require

layout(local_size_x = 32, local_size_y = 8) in;
layout(constant_id = 2) const bool WIDE = true;

layout(std430, set = 0, binding = 0) readonly buffer In32 { uint x32[]; };
layout(std430, set = 0, binding = 0) readonly buffer In16 { uint16_t x16[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out32 { uint y32[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out16 { uint16_t y16[]; };

// Mirrors TransposePush (src/vulkan/ops/layout.cpp); sizes of out, offsets and strides in elements.
layout(push_constant) uniform Params {
    uint rows, cols;
    uint in_stride, out_stride;  // between consecutive rows of in and of out
    uint in_batch, out_batch;    // between consecutive matrices
    uint in_offset, out_offset;
} params;

shared uint tile[32 * 33];

void main() {
    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    uint c0 = gl_WorkGroupID.x * 32u, r0 = gl_WorkGroupID.y * 32u;
    uint in_first = params.in_offset + gl_WorkGroupID.z * params.in_batch;
    uint out_first = params.out_offset + gl_WorkGroupID.z * params.out_batch;
    uint r_in = r0 + tx;
    for (uint i = 0u; i < 32u; i += 8u) {
        uint c = c0 + ty + i;
        if (c < params.cols && r_in < params.rows) {
            uint at = in_first + c * params.in_stride + r_in;
            tile[(ty + i) * 33u + tx] = WIDE ? x32[at] : uint(x16[at]);
        }
    }
    barrier();
    uint c_out = c0 + tx;
    for (uint i = 0u; i < 32u; i += 8u) {
        uint r = r0 + ty + i;
        if (r < params.rows && c_out < params.cols) {
            uint at = out_first + r * params.out_stride + c_out;
            uint v = tile[tx * 33u + ty + i];
            if (WIDE) y32[at] = v;
            else y16[at] = uint16_t(v);
        }
    }
}
