#version 450
// gather: out[o, i, :] = table[o, ids[i], :] for the table seen as [outer, rows, entry], in chunks
// of CHUNK bytes (constant 2: 16, 4 or 2, through 16-bit storage), one per invocation and step of
// a grid-stride loop over the output's chunks. An id outside [0, rows) gives zeros and is noted
// in the fault record (src/dispatch/device_fault.hpp): the first invocation to claim word 3 writes
// the id, its position and the rows. With SCATTER (constant 3, index_copy) the other way: binding 0
// holds src [outer, ids, entry], binding 2 dst [outer, rows, entry]; dst[o, ids[i], :] =
// src[o, i, :], over src's chunks, an id out of range writing nothing but its record.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require

layout(local_size_x_id = 1) in;
layout(constant_id = 2) const uint CHUNK = 16;
layout(constant_id = 3) const uint SCATTER = 0;

layout(std430, set = 0, binding = 0) readonly buffer Table16 { uvec4 t16[]; };
layout(std430, set = 0, binding = 0) readonly buffer Table4 { uint t4[]; };
layout(std430, set = 0, binding = 0) readonly buffer Table2 { uint16_t t2[]; };
layout(std430, set = 0, binding = 1) readonly buffer Ids { int ids[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out16 { uvec4 y16[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out4 { uint y4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out2 { uint16_t y2[]; };
layout(std430, set = 0, binding = 3) buffer Fault { uint fault[4]; };

// Mirrors GatherPush (src/vulkan/ops/gather.cpp); offsets in chunks (ids: in elements).
layout(push_constant) uniform Params {
    uint total;   // chunks of the output (SCATTER: of src)
    uint chunks;  // per entry
    uint n;       // ids
    uint rows;
    uint table_offset;
    uint ids_offset;
    uint out_offset;
    uint op;
    uint zero;    // 0, stored as the 16-bit zero: a 16-bit constant would need the Int16 capability
} params;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < params.total; i += stride) {
        uint entry = i / params.chunks, chunk = i - entry * params.chunks;
        uint o = entry / params.n, at = entry - o * params.n;
        uint id = uint(ids[params.ids_offset + at]);  // negative ids wrap past rows
        uint by_id = (o * params.rows + id) * params.chunks + chunk;
        uint src = params.table_offset + (SCATTER != 0 ? i : by_id);
        uint dst = params.out_offset + (SCATTER != 0 ? by_id : i);
        if (id < params.rows) {
            if (CHUNK == 16) y16[dst] = t16[src];
            else if (CHUNK == 4) y4[dst] = t4[src];
            else y2[dst] = t2[src];
        } else {
            if (SCATTER == 0) {
                if (CHUNK == 16) y16[dst] = uvec4(0);
                else if (CHUNK == 4) y4[dst] = 0;
                else y2[dst] = uint16_t(params.zero);
            }
            if (chunk == 0 && atomicCompSwap(fault[3], 0u, params.op + 1u) == 0u) {
                fault[0] = id;
                fault[1] = at;
                fault[2] = params.rows;
            }
        }
    }
}
