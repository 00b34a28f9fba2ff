#version 450
// conv2d as an implicit GEMM on cooperative matrices, 128 output channels x 128 pixels a
// workgroup: conv2d_coopmat.glsl.
#extension GL_GOOGLE_include_directive : require
#define TILE_M 128u
#define TILE_N 128u
#include "conv2d_coopmat.glsl"
