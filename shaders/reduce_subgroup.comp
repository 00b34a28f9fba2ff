#version 450
// Reductions with subgroup arithmetic (reduce_body.glsl), for devices that report it in compute.
#extension GL_GOOGLE_include_directive : require
#ifdef RAYO_ELEMENT16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif
#include "float_controls.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#define RAYO_SUBGROUPS 1
layout(local_size_x_id = 1) in;
#include "float_math.glsl"
#include "workgroup_reduce.glsl"
#include "reduce_body.glsl"
