/* The span core's output: columns that grow as spans end, handed over to
 * Python as one bytes object per column (spans.batch.COLUMNS order, which
 * generated.h's SPAN_COL_* name). */

#include "spans/spans_out.h"

int out_reserve(Out *o, size_t need) {
    if (need <= o->cap)
        return 0;
    size_t cap = o->cap ? o->cap * 2 : 1024;
    while (cap < need)
        cap *= 2;
#define G(f, t)                                         \
    {                                                   \
        void *p = realloc(o->f, cap * sizeof(t));       \
        if (!p)                                         \
            return -1;                                  \
        o->f = p;                                       \
    }
    G(kind, u8) G(rkind, u8) G(flags, u8) G(rid, i64) G(start, i64) G(end, i64) G(sstack, u64) G(estack, u64)
    G(task, u64) G(proc, i64) G(stok, u32) G(etok, u32) G(reason, u32) G(name, u32) G(tname, u32)
#undef G
    o->cap = cap;
    return 0;
}

void out_free(Out *o) {
    free(o->kind), free(o->rkind), free(o->flags), free(o->rid), free(o->start), free(o->end);
    free(o->sstack), free(o->estack), free(o->task), free(o->stok), free(o->etok);
    free(o->reason), free(o->name), free(o->tname), free(o->proc);
    memset(o, 0, sizeof *o);
}

int out_emit(Out *o, const Open *s, i64 end, u64 estack, u32 etok, u8 flags) {
    if (out_reserve(o, o->n + 1) < 0)
        return -1;
    size_t i = o->n++;
    o->kind[i] = s->kind, o->rkind[i] = s->rkind, o->rid[i] = s->rid, o->start[i] = s->start, o->end[i] = end;
    o->sstack[i] = s->stack, o->estack[i] = estack, o->stok[i] = s->tok, o->etok[i] = etok;
    o->reason[i] = s->reason, o->name[i] = s->name, o->tname[i] = s->tname, o->task[i] = s->task;
    o->flags[i] = s->flags | flags, o->proc[i] = s->proc;
    return 0;
}

PyObject *out_take(Out *o, int mutable) {
    size_t n = o->n;
    const void *cols[SPAN_NCOLS] = {
        [SPAN_COL_KINDS] = o->kind,        [SPAN_COL_RESOURCE_KINDS] = o->rkind, [SPAN_COL_RESOURCE_IDS] = o->rid,
        [SPAN_COL_STARTS] = o->start,      [SPAN_COL_ENDS] = o->end,             [SPAN_COL_START_STACKS] = o->sstack,
        [SPAN_COL_END_STACKS] = o->estack, [SPAN_COL_START_TABLES] = o->stok,    [SPAN_COL_END_TABLES] = o->etok,
        [SPAN_COL_REASONS] = o->reason,    [SPAN_COL_NAMES] = o->name,           [SPAN_COL_TASK_NAMES] = o->tname,
        [SPAN_COL_TASKS] = o->task,        [SPAN_COL_FLAGS] = o->flags,          [SPAN_COL_PROCS] = o->proc};
    static const size_t width[SPAN_NCOLS] = SPAN_COL_WIDTHS;
    size_t ncols = SPAN_NCOLS;
    o->n = 0;
    PyObject *r = PyList_New((Py_ssize_t)ncols);
    char *dst[SPAN_NCOLS];
    for (size_t k = 0; r && k < ncols; k++) {
        Py_ssize_t len = (Py_ssize_t)(n * width[k]);
        PyObject *b = mutable ? PyByteArray_FromStringAndSize(NULL, len) : PyBytes_FromStringAndSize(NULL, len);
        if (!b) {
            Py_CLEAR(r);
            break;
        }
        dst[k] = mutable ? PyByteArray_AS_STRING(b) : PyBytes_AS_STRING(b);
        PyList_SET_ITEM(r, (Py_ssize_t)k, b);
    }
    /* The objects are made with the GIL; their bytes are copied (and their
     * fresh pages faulted in) without it: no one else holds them yet, and on
     * a busy generation this is most of what the span core did with the GIL. */
    if (r && n) {
        Py_BEGIN_ALLOW_THREADS;
        for (size_t k = 0; k < ncols; k++)
            memcpy(dst[k], cols[k], n * width[k]);
        Py_END_ALLOW_THREADS;
    }
    return r;
}
