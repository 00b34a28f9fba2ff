// RAYO_API marks what librayo exports. The library is built with hidden visibility, so a shared
// librayo.so exports its public API (the declarations so marked in include/rayo/) and nothing of
// its backends' insides; in a static build the mark changes nothing.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define RAYO_API __attribute__((visibility("default")))
#else
#define RAYO_API
#endif
