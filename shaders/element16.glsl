// The element type of a shader's tensors where it is built with RAYO_ELEMENT16 (cmake/RayoShaders.cmake
// builds <name>_element16 of each .comp that tests it): f16 or bf16 as specialization constant 7
// (ELEMENT), stored through 16-bit storage (uint16_t, storageBuffer16BitAccess) or, four at a time,
// as packed words (uvec2). Values are widened to float exactly and rounded back to nearest even
// (float16_bits.glsl); the op itself runs in float32 as for f32 tensors.
#ifdef RAYO_ELEMENT16
#include "float16_bits.glsl"

layout(constant_id = 7) const uint ELEMENT = RAYO_DTYPE_F16;

float element_to_float(uint bits) {
    return uintBitsToFloat(ELEMENT == RAYO_DTYPE_F16 ? half_to_float_bits(bits) : bits << 16);
}

uint float_to_element(float v) {
    uint f = floatBitsToUint(v);
    return ELEMENT == RAYO_DTYPE_F16 ? float_bits_to_half(f) : float_bits_to_bf16(f);
}

// Four consecutive elements packed in two words, the first in the low half of x.
vec4 unpack_elements(uvec2 w) {
    return vec4(element_to_float(w.x & 0xffffu), element_to_float(w.x >> 16), element_to_float(w.y & 0xffffu),
                element_to_float(w.y >> 16));
}

uvec2 pack_elements(vec4 v) {
    return uvec2(float_to_element(v.x) | (float_to_element(v.y) << 16),
                 float_to_element(v.z) | (float_to_element(v.w) << 16));
}
#endif
