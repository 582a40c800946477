/* What both halves of the compiled core (_ccore.c, _ccore_legacy.c) use. */

#ifndef LIVETRACE_CCORE_COMMON_H
#define LIVETRACE_CCORE_COMMON_H

#include <stdint.h>
#include <stdlib.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t i64;

/* Grows *ptr to hold at least need elements, doubling: 0, or -1 when out of memory. */
static inline int grow(void **ptr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    void *p = realloc(*ptr, nc * elem);
    if (!p)
        return -1;
    *ptr = p;
    *cap = nc;
    return 0;
}

/* A 64-bit hash finalizer (MurmurHash3's) for open-addressing tables. */
static inline size_t hmix(u64 x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (size_t)x;
}

#endif
