#version 450
// conv2d as an implicit GEMM on cooperative matrices, 64 output channels x 256 pixels a workgroup,
// for groups of at most 64 outputs: conv2d_coopmat.glsl.
#extension GL_GOOGLE_include_directive : require
#define TILE_M 64u
#define TILE_N 256u
#include "conv2d_coopmat.glsl"
