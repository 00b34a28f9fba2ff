// The lists of floating element types (float, half, bfloat16) the ops are explicitly instantiated
// for: each type, each pair and each triple, so that the public templates exist for every
// combination a caller can write (a mix of types is then a DTypeError at run time, not a link
// error). M is the instantiating macro of the including file.
#pragma once

#include "rayo/dtype.hpp"

#define RAYO_EACH_FLOATING(M) M(float) M(::rayo::half) M(::rayo::bfloat16)

#define RAYO_FLOATING_PAIRS_OF(M, T) M(T, float) M(T, ::rayo::half) M(T, ::rayo::bfloat16)
#define RAYO_EACH_FLOATING_PAIR(M) \
    RAYO_FLOATING_PAIRS_OF(M, float) RAYO_FLOATING_PAIRS_OF(M, ::rayo::half) RAYO_FLOATING_PAIRS_OF(M, ::rayo::bfloat16)

#define RAYO_FLOATING_TRIPLES_OF(M, T, U) M(T, U, float) M(T, U, ::rayo::half) M(T, U, ::rayo::bfloat16)
#define RAYO_FLOATING_TRIPLES_OF_FIRST(M, T) \
    RAYO_FLOATING_TRIPLES_OF(M, T, float)    \
    RAYO_FLOATING_TRIPLES_OF(M, T, ::rayo::half) RAYO_FLOATING_TRIPLES_OF(M, T, ::rayo::bfloat16)
#define RAYO_EACH_FLOATING_TRIPLE(M)         \
    RAYO_FLOATING_TRIPLES_OF_FIRST(M, float) \
    RAYO_FLOATING_TRIPLES_OF_FIRST(M, ::rayo::half) RAYO_FLOATING_TRIPLES_OF_FIRST(M, ::rayo::bfloat16)
