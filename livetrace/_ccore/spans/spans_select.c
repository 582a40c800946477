/* Choosing spans in the core: span_select, the compiled twin of
 * _trace/spans/select.py's select_rows, and span_take, which gathers the rows
 * chosen. The Python side turns a Filter into lookup tables (a mask per
 * kind, per name id; sorted arrays of goroutine ids, of (tables, stack id)
 * pairs), so no object is made per span here; both loops run without the
 * GIL (a span view selects every batch of a generation in the pool's
 * threads at once), their buffers held. */

#include "spans/spans.h"

#include "common/containers.h"

enum { NCOLS = SPAN_NCOLS };
static const int WIDTH[NCOLS] = SPAN_COL_WIDTHS;

static int has_i64(const i64 *v, size_t n, i64 x) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo] == x;
}

/* pairs: n sorted (tables, stack id) pairs */
static int has_pair(const u64 *v, size_t n, u64 a, u64 b) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[2 * mid] < a || (v[2 * mid] == a && v[2 * mid + 1] < b))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[2 * lo] == a && v[2 * lo + 1] == b;
}

typedef struct {
    Py_buffer b;
    int given;
} Opt;

static int opt_get(PyObject *o, Opt *x) {
    x->given = o != Py_None;
    return x->given ? PyObject_GetBuffer(o, &x->b, PyBUF_SIMPLE) : 0;
}

static void opt_release(Opt *x) {
    if (x->given)
        PyBuffer_Release(&x->b);
}

static int mask_has(const Opt *m, u32 i) { return i < (u64)m->b.len && ((const u8 *)m->b.buf)[i]; }

/* span_select(columns, kind_mask, goroutines, procs, task_mask, region_mask, min_duration, stack_pairs)
 * -> bytes of uint32 row indexes; each filter None when not given, min_duration < 0 none */
static PyObject *span_select(PyObject *self, PyObject *args) {
    PyObject *cols, *o[6];
    long long min_dur;
    if (!PyArg_ParseTuple(args, "O!OOOOOLO", &PyList_Type, &cols, &o[0], &o[1], &o[2], &o[3], &o[4], &min_dur, &o[5]))
        return NULL;
    if (PyList_GET_SIZE(cols) != NCOLS)
        return PyErr_Format(PyExc_ValueError, "%d columns expected", NCOLS);
    Py_buffer c[NCOLS];
    Opt f[6];
    int nc = 0, nf = 0;
    PyObject *result = NULL;
    u32 *idx = NULL;
    for (; nc < NCOLS; nc++)
        if (PyObject_GetBuffer(PyList_GET_ITEM(cols, nc), &c[nc], PyBUF_SIMPLE) < 0)
            goto done;
    for (; nf < 6; nf++)
        if (opt_get(o[nf], &f[nf]) < 0)
            goto done;
    size_t n = (size_t)c[0].len;
    for (int k = 0; k < NCOLS; k++)
        if ((size_t)c[k].len != n * WIDTH[k]) {
            PyErr_SetString(PyExc_ValueError, "columns of different lengths");
            goto done;
        }
    const u8 *kind = c[SPAN_COL_KINDS].buf, *rkind = c[SPAN_COL_RESOURCE_KINDS].buf;
    const i64 *rid = c[SPAN_COL_RESOURCE_IDS].buf, *proc = c[SPAN_COL_PROCS].buf;
    const i64 *start = c[SPAN_COL_STARTS].buf, *end = c[SPAN_COL_ENDS].buf;
    const u64 *sstack = c[SPAN_COL_START_STACKS].buf, *estack = c[SPAN_COL_END_STACKS].buf;
    const u32 *stok = c[SPAN_COL_START_TABLES].buf, *etok = c[SPAN_COL_END_TABLES].buf;
    const u32 *name = c[SPAN_COL_NAMES].buf, *tname = c[SPAN_COL_TASK_NAMES].buf;
    const i64 *gs = f[1].given ? f[1].b.buf : NULL, *ps = f[2].given ? f[2].b.buf : NULL;
    size_t ngs = f[1].given ? (size_t)f[1].b.len / 8 : 0, nps = f[2].given ? (size_t)f[2].b.len / 8 : 0;
    const u64 *pairs = f[5].given ? f[5].b.buf : NULL;
    size_t npairs = f[5].given ? (size_t)f[5].b.len / 16 : 0;
    size_t kept = 0;
    Py_BEGIN_ALLOW_THREADS
    idx = malloc((n ? n : 1) * sizeof *idx);
    for (size_t i = 0; idx && i < n; i++) {
        if (f[0].given && !mask_has(&f[0], kind[i]))
            continue;
        if (gs && !(rkind[i] == RES_GOROUTINE && has_i64(gs, ngs, rid[i])))
            continue;
        if (ps && !(proc[i] >= 0 && has_i64(ps, nps, proc[i])))
            continue;
        if (f[3].given && !mask_has(&f[3], tname[i]))
            continue;
        if (f[4].given && !(kind[i] != K_TASK && mask_has(&f[4], name[i])))
            continue;
        if (min_dur >= 0 && end[i] - start[i] < min_dur)
            continue;
        if (pairs && !((sstack[i] && has_pair(pairs, npairs, stok[i], sstack[i])) ||
                       (estack[i] && has_pair(pairs, npairs, etok[i], estack[i]))))
            continue;
        idx[kept++] = (u32)i;
    }
    Py_END_ALLOW_THREADS
    if (!idx) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyBytes_FromStringAndSize((const char *)idx, (Py_ssize_t)(kept * sizeof *idx));
done:
    free(idx);
    for (int k = 0; k < nc; k++)
        PyBuffer_Release(&c[k]);
    for (int k = 0; k < nf; k++)
        opt_release(&f[k]);
    return result;
}

/* span_take(columns, rows) -> list of bytes: the rows (uint32 indexes, each in range) of each column */
static PyObject *span_take(PyObject *self, PyObject *args) {
    PyObject *cols;
    Py_buffer rb;
    if (!PyArg_ParseTuple(args, "O!y*", &PyList_Type, &cols, &rb))
        return NULL;
    PyObject *out = NULL;
    Py_buffer cb[NCOLS];
    char *to[NCOLS];
    int nc = 0, bad = 0;
    size_t m = (size_t)rb.len / 4;
    const u32 *rows = rb.buf;
    if (PyList_GET_SIZE(cols) != NCOLS) {
        PyErr_Format(PyExc_ValueError, "%d columns expected", NCOLS);
        goto done;
    }
    if (!(out = PyList_New(NCOLS)))
        goto done;
    /* The columns' buffers and the new columns first, with the GIL; then the rows gathered without it. */
    for (; nc < NCOLS; nc++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(cols, nc), &cb[nc], PyBUF_SIMPLE) < 0)
            goto fail;
        PyObject *col = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(m * (size_t)WIDTH[nc]));
        if (!col) {
            PyBuffer_Release(&cb[nc]);
            goto fail;
        }
        PyList_SET_ITEM(out, nc, col);
        to[nc] = PyBytes_AS_STRING(col);
    }
    Py_BEGIN_ALLOW_THREADS
    for (int k = 0; !bad && k < NCOLS; k++) {
        size_t w = (size_t)WIDTH[k], n = (size_t)cb[k].len / w;
        for (size_t j = 0; j < m; j++) {
            if (rows[j] >= n) {
                bad = 1;
                break;
            }
            memcpy(to[k] + j * w, (const char *)cb[k].buf + rows[j] * w, w);
        }
    }
    Py_END_ALLOW_THREADS
    if (!bad)
        goto done;
    PyErr_SetString(PyExc_IndexError, "span row out of range");
fail:
    Py_CLEAR(out);
done:
    for (int k = 0; k < nc; k++)
        PyBuffer_Release(&cb[k]);
    PyBuffer_Release(&rb);
    return out;
}

static PyMethodDef select_methods[] = {
    {"span_select", span_select, METH_VARARGS,
     "span_select($module, columns, kind_mask, goroutines, procs, task_mask, region_mask, min_duration, "
     "stack_pairs, /)\n--\n\nThe rows of a SpanBatch's columns a filter keeps, as uint32 indexes."},
    {"span_take", span_take, METH_VARARGS,
     "span_take($module, columns, rows, /)\n--\n\nThe given rows of each column."},
    {NULL},
};

int span_select_register(PyObject *module) { return PyModule_AddFunctions(module, select_methods); }
