/* JSON lines for a batch's events (twin of _cli/render/jsonl.py's JsonlEncoder). */

#ifndef LIVETRACE_JSONL_H
#define LIVETRACE_JSONL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "common/containers.h"

/* A batch's columns as EventBatch has them, n events, read-only. */
typedef struct {
    size_t n;
    const u8 *code;
    const i64 *time, *m, *p, *g;
    const u64 *args, *extra;
} EventView;

/* The seven columns of a batch (codes, times, threads, procs, goroutines,
 * args, extra) as a view: 0, or -1 with ValueError when their lengths
 * disagree, for every writer that takes them from Python. */
static inline int event_view(EventView *v, const Py_buffer *c, const Py_buffer *t, const Py_buffer *m,
                             const Py_buffer *p, const Py_buffer *g, const Py_buffer *a, const Py_buffer *x) {
    size_t n = (size_t)c->len;
    if ((size_t)t->len != n * 8 || (size_t)m->len != n * 8 || (size_t)p->len != n * 8 || (size_t)g->len != n * 8 ||
        (size_t)a->len != n * 8 * NARGS || (size_t)x->len != n * 8 * NEXTRA) {
        PyErr_SetString(PyExc_ValueError, "columns of different lengths");
        return -1;
    }
    *v = (EventView){n, c->buf, t->buf, m->buf, p->buf, g->buf, a->buf, x->buf};
    return 0;
}

/* One line per event, as a list of bytes, each piece piece_lines lines (0:
 * one piece; none for no events): state transitions and the common
 * annotations written here, any other event's by other(i), which returns
 * its line (str). The JSON of a string or stack id comes from the cache
 * dicts strings and stacks, or else from miss(kind, id) ("string" or
 * "stack", returning bytes), kept there (partcache.h); a task end's type,
 * an extra string of the generation, from extras (miss's "extra"), or, with
 * extras NULL, its line from other. wall_base: ns to add to
 * an event's time for its Unix time, when has_wall. stacks NULL: the lines
 * of provisional_dict instead (a legacy trace's events before its footer,
 * whose stacks have no frames yet): no transition stack, and the stack as
 * "provisional": true, "stack_id": N. NULL with an exception set on
 * failure. */
PyObject *jsonl_lines(const EventView *v, size_t piece_lines, int has_wall, i64 wall_base, PyObject *strings,
                      PyObject *stacks, PyObject *extras, PyObject *miss, PyObject *other);

#endif
