#version 450
// attention over f16 tensors on cooperative matrices for head_dim 96 (attention_coopmat.glsl).
#extension GL_GOOGLE_include_directive : require
#define HEAD_DIM 96u
#include "attention_coopmat.glsl"
