#version 450
// The tiled GEMM (matmul_tiled.glsl) reading f16/bf16 operands as packed uint words: every device.
#extension GL_GOOGLE_include_directive : require
#include "float_controls.glsl"
#include "matmul_tiled.glsl"
