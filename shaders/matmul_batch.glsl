// What every GEMM shader's epilogue shares. The matrices of this workgroup's product in a batch
// (gl_WorkGroupID.z): offsets of a, b and out (elements; b in bytes for K-quant weights, which are
// never batched), from the push constants every GEMM shader shares: *_offset the first product's,
// *_batch the step between products (0 for an operand every product shares). Included after the
// shader's push-constant block.
uint a_base() { return params.a_offset + gl_WorkGroupID.z * params.a_batch; }
uint b_base() { return params.b_offset + gl_WorkGroupID.z * params.b_batch; }
uint out_base() { return params.out_offset + gl_WorkGroupID.z * params.out_batch; }

// linear's bias: f32 [n] at bias_offset of binding 3, added to every row of out where has_bias
// (the binding is then an untouched one).
layout(std430, set = 0, binding = 3) readonly buffer Bias { float bias_values[]; };
float bias_at(uint col) { return params.has_bias != 0u ? bias_values[params.bias_offset + col] : 0.0; }
