#version 450
// attention over f16 tensors on cooperative matrices for head_dim 256 (attention_coopmat.glsl).
#extension GL_GOOGLE_include_directive : require
#define HEAD_DIM 256u
#include "attention_coopmat.glsl"
