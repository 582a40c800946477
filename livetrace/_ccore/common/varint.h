/* The unsigned LEB128 varints both trace formats are made of. */

#ifndef LIVETRACE_VARINT_H
#define LIVETRACE_VARINT_H

#include "common/containers.h"

/* Reads the varint at p[*pos] (p has end bytes) into *out and moves *pos past
 * it: 1 read, 0 it runs past the end, -1 it overflows 64 bits. */
static inline int uvarint(const u8 *p, size_t end, size_t *pos, u64 *out) {
    size_t i = *pos;
    if (i < end && p[i] < 0x80) {
        *out = p[i];
        *pos = i + 1;
        return 1;
    }
    u64 v = 0;
    unsigned shift = 0;
    while (i < end) {
        u8 b = p[i++];
        if (shift == 63 && b > 1)
            return -1;
        v |= (u64)(b & 0x7f) << shift;
        if (b < 0x80) {
            *out = v;
            *pos = i;
            return 1;
        }
        shift += 7;
    }
    return 0;
}

/* uvarint for a varint known to end within the buffer (10 bytes do):
 * 1 read, -1 it overflows 64 bits. */
static inline int uvarint_unbounded(const u8 *p, size_t *pos, u64 *out) { return uvarint(p, SIZE_MAX, pos, out); }

#endif
