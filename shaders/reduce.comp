#version 450
// Reductions, portable path: shared-memory trees (reduce_body.glsl).
#extension GL_GOOGLE_include_directive : require
#include "float_controls.glsl"
layout(local_size_x_id = 1) in;
#include "float_math.glsl"
#include "workgroup_reduce.glsl"
#include "reduce_body.glsl"
