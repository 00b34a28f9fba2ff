#version 450
// Reductions with subgroup arithmetic (reduce_body.glsl), for devices that report it in compute.
#extension GL_GOOGLE_include_directive : require
#include "float_controls.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#define RAYO_SUBGROUPS 1
layout(local_size_x_id = 1) in;
#include "float_math.glsl"
#include "workgroup_reduce.glsl"
#include "reduce_body.glsl"
