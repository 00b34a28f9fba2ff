#version 450
// K-quant linear for few rows of x, f32 (quant_gemv_body.glsl), portable path: the invocations'
// partial sums are added by a shared-memory tree.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "float_controls.glsl"
#include "quant_gemv_body.glsl"
