#version 450
// Reductions, portable path: shared-memory trees (reduce_body.glsl); f32 inputs, and f16 /
// bf16 ones in the _element16 build.
#extension GL_GOOGLE_include_directive : require
#ifdef RAYO_ELEMENT16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif
#include "float_controls.glsl"
layout(local_size_x_id = 1) in;
#include "float_math.glsl"
#include "workgroup_reduce.glsl"
#include "reduce_body.glsl"
