// apply(u, v): the binary op OP (a specialization constant the including shader declares first) on
// two floats, each an IEEE operation (div correctly rounded through rayo_div). Shared by
// binary.comp and binary_broadcast.comp.
#if RAYO_BINARY_OP_COUNT != 7
#error "a binary op of rayo::op_table has no case in apply()"
#endif

float apply(float u, float v) {
    switch (OP) {
        case RAYO_OP_ADD: { precise float r = u + v; return r; }
        case RAYO_OP_SUB: { precise float r = u - v; return r; }
        case RAYO_OP_MUL: { precise float r = u * v; return r; }
        case RAYO_OP_DIV: return rayo_div(u, v);
        // A NaN operand gives NaN; equal values give u & v (+0 over -0) or u | v (-0 under +0).
        case RAYO_OP_MAXIMUM:
            return isnan(u) ? u : isnan(v) ? v : u > v ? u : v > u ? v
                 : uintBitsToFloat(floatBitsToUint(u) & floatBitsToUint(v));
        case RAYO_OP_MINIMUM:
            return isnan(u) ? u : isnan(v) ? v : u < v ? u : v < u ? v
                 : uintBitsToFloat(floatBitsToUint(u) | floatBitsToUint(v));
        case RAYO_OP_SWIGLU: { precise float r = rayo_silu(u) * v; return r; }
    }
    return u;
}
