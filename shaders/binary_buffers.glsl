// The operands of binary.comp and binary_broadcast.comp: a (binding 0), out (1), b (2), each also
// seen as 4-element groups for VEC4, f32 or (RAYO_ELEMENT16, element16.glsl) f16 / bf16, and how
// an element or a group of each is read or written as float.
#ifdef RAYO_ELEMENT16
layout(std430, set = 0, binding = 0) readonly buffer InputA { uint16_t a[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output { uint16_t y[]; };
layout(std430, set = 0, binding = 2) readonly buffer InputB { uint16_t b[]; };
layout(std430, set = 0, binding = 0) readonly buffer InputA4 { uvec2 a4[]; };  // the same, for VEC4
layout(std430, set = 0, binding = 1) writeonly buffer Output4 { uvec2 y4[]; };
layout(std430, set = 0, binding = 2) readonly buffer InputB4 { uvec2 b4[]; };
float load_a(uint i) { return element_to_float(uint(a[i])); }
float load_b(uint i) { return element_to_float(uint(b[i])); }
vec4 load_a4(uint q) { return unpack_elements(a4[q]); }
vec4 load_b4(uint q) { return unpack_elements(b4[q]); }
void store_y(uint i, float v) { y[i] = uint16_t(float_to_element(v)); }
void store_y4(uint q, vec4 v) { y4[q] = pack_elements(v); }
#else
layout(std430, set = 0, binding = 0) readonly buffer InputA { float a[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Output { float y[]; };
layout(std430, set = 0, binding = 2) readonly buffer InputB { float b[]; };
layout(std430, set = 0, binding = 0) readonly buffer InputA4 { vec4 a4[]; };  // the same, for VEC4
layout(std430, set = 0, binding = 1) writeonly buffer Output4 { vec4 y4[]; };
layout(std430, set = 0, binding = 2) readonly buffer InputB4 { vec4 b4[]; };
float load_a(uint i) { return a[i]; }
float load_b(uint i) { return b[i]; }
vec4 load_a4(uint q) { return a4[q]; }
vec4 load_b4(uint q) { return b4[q]; }
void store_y(uint i, float v) { y[i] = v; }
void store_y4(uint q, vec4 v) { y4[q] = v; }
#endif
