#version 450
// K-quant linear for few rows of x, f32 (quant_gemv_body.glsl), with subgroup arithmetic: each
// subgroup adds its partial sums with subgroupAdd, shared memory combines the subgroups.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "float_controls.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define RAYO_SUBGROUPS 1
#include "quant_gemv_body.glsl"
