/* The span core's shared pieces: an open span, and the growing output
 * columns that ended spans are appended to (spans_out.c). Internal to
 * spans.c and spans_out.c. */

#ifndef LIVETRACE_SPANS_OUT_H
#define LIVETRACE_SPANS_OUT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "common/containers.h"
#include "common/generated.h"

typedef int32_t i32;

typedef struct {
    u8 kind, rkind, flags, state;
    i64 rid, start, proc;
    u64 stack, task, seq;
    u32 tok, reason, name, tname;
    u32 fix, dep; /* split mode: the records of its first touch and of the name it took, + 1 (0: none) */
    i32 rdepth;   /* split mode: its names may be those of the region this deep below its goroutine's first (-1: no) */
} Open;

/* The output columns (out_take hands them over in spans.batch.COLUMNS
 * order, generated.h's SPAN_COL_*). */
typedef struct {
    size_t n, cap;
    u8 *kind, *rkind, *flags;
    i64 *rid, *start, *end, *proc;
    u64 *sstack, *estack, *task;
    u32 *stok, *etok, *reason, *name, *tname;
} Out;

/* Room for need spans: 0, or -1 when out of memory. */
int out_reserve(Out *o, size_t need);
void out_free(Out *o);
/* Append span s, ending at end: 0, or -1 when out of memory. */
int out_emit(Out *o, const Open *s, i64 end, u64 estack, u32 etok, u8 flags);
/* The columns as a list of bytes (bytearrays when mutable: a split core's,
 * which the join patches); the columns are then empty. */
PyObject *out_take(Out *o, int mutable);

#endif
