/* The modern format's wire layer: the records of one batch payload, as
 * columns (twin of _trace/modern/wire.py's record_columns). */

#ifndef LIVETRACE_WIRE_H
#define LIVETRACE_WIRE_H

#include "common/containers.h"

/* Record i has code codes[i] and values vals[start[i]:start[i + 1]]: its
 * arguments, then a Stack's frames (4 values each), then for a record with
 * data the data's start and length in the payload. */
typedef struct {
    u8 *codes;
    u32 *start; /* n + 1 entries */
    u64 *vals;
    size_t n, nv, ccap, scap, vcap;
} WireRecords;

/* What stopped the decoding (the numbers are the module's WIRE_* constants). */
enum { WIRE_NO_MEMORY = -1, WIRE_OK = 0, WIRE_INVALID_TYPE = 1, WIRE_SHORT = 2, WIRE_OVERFLOW = 3 };

/* The record that could not be read: its code and its offset in the payload. */
typedef struct {
    int code;
    size_t at;
} WireFault;

/* Decodes every record of payload p (end bytes); table[code] is 0 for an
 * invalid type, else 0x80 | argument count | 0x20 if a stack | 0x40 if data
 * follows. Returns a WIRE_* value; on a fault, *fault says where. Touches
 * no Python object: callers may release the GIL. */
int wire_decode(const u8 *p, size_t end, const u8 *table, WireRecords *r, WireFault *fault);
void wire_free(WireRecords *r);

#endif
