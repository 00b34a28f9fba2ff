#version 450
// The tiled GEMM (matmul_tiled.glsl) reading f16 operands through 16-bit storage
// (storageBuffer16BitAccess).
#extension GL_GOOGLE_include_directive : require
#include "float_controls.glsl"
#define RAYO_STORAGE16 1
#include "matmul_tiled.glsl"
