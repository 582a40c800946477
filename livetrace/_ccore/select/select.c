/* Choosing events by a filter, straight from a batch's columns: no Python
 * object per event (twin: _trace/select/events.py's _select_py).
 *
 * What Python resolved beforehand, once per generation: the kind mask per
 * code, and sorted id lists (goroutines, procs; the string ids of the
 * matching region types and log categories; the stack ids with a matching
 * frame). An event is kept when it passes every criterion given (None:
 * not asked for). Tasks need state across events (which task ids have a
 * matching type), so Python works out the few task events a task filter
 * can keep, and passes them as the candidates: only those are tried. */

#include "select/select.h"

#include <stdint.h>
#include <string.h>

#include "common/containers.h"

/* roles[code] bits: which name argument a region or log filter looks at */
enum { ROLE_REGION = 1, ROLE_LOG = 2 };
#define NAME_ARG 1 /* a region's type and a log's category: the event's second argument */
#define NO_STACK_ARG 0xFF

typedef struct {
    const void *p;
    size_t n; /* items */
    int on;   /* asked for */
} Ids;

/* Whether v is in the sorted ids: one binary search for either signedness. */
#define DEFINE_HAS(name, T)                                                                                 \
    static int name(const Ids *s, T v) {                                                                    \
        const T *a = s->p;                                                                                  \
        size_t lo = 0, hi = s->n;                                                                           \
        while (lo < hi) {                                                                                   \
            size_t mid = lo + (hi - lo) / 2;                                                                \
            if (a[mid] < v)                                                                                 \
                lo = mid + 1;                                                                               \
            else                                                                                            \
                hi = mid;                                                                                   \
        }                                                                                                   \
        return lo < s->n && a[lo] == v;                                                                     \
    }
DEFINE_HAS(has_i64, i64)
DEFINE_HAS(has_u64, u64)

/* A buffer argument that may be None; 0 on success. */
static int opt_buffer(PyObject *o, Py_buffer *b, Ids *ids, size_t item) {
    memset(b, 0, sizeof *b);
    ids->p = NULL, ids->n = 0, ids->on = 0;
    if (o == Py_None)
        return 0;
    if (PyObject_GetBuffer(o, b, PyBUF_SIMPLE) < 0)
        return -1;
    if ((size_t)b->len % item) {
        PyErr_SetString(PyExc_ValueError, "an id list of partial items");
        return -1;
    }
    ids->p = b->buf, ids->n = (size_t)b->len / item, ids->on = 1;
    return 0;
}

static void release(Py_buffer *b) {
    if (b->obj)
        PyBuffer_Release(b);
}

PyObject *select_indices(PyObject *self, PyObject *args) {
    Py_buffer cb, pb, gb, ab, rb, sb;
    PyObject *kinds_o, *gs_o, *ps_o, *regions_o, *logs_o, *stacks_o, *cand_o;
    if (!PyArg_ParseTuple(args, "y*y*y*y*Oy*y*OOOOOO", &cb, &pb, &gb, &ab, &kinds_o, &rb, &sb, &gs_o, &ps_o,
                          &regions_o, &logs_o, &stacks_o, &cand_o))
        return NULL;
    Py_buffer kb, b_gs, b_ps, b_reg, b_log, b_stk, b_cand;
    Ids kinds, gs, ps, regs, logs, stks, cand;
    PyObject *result = NULL;
    int ok = opt_buffer(kinds_o, &kb, &kinds, 1) == 0 && opt_buffer(gs_o, &b_gs, &gs, 8) == 0 &&
             opt_buffer(ps_o, &b_ps, &ps, 8) == 0 && opt_buffer(regions_o, &b_reg, &regs, 8) == 0 &&
             opt_buffer(logs_o, &b_log, &logs, 8) == 0 && opt_buffer(stacks_o, &b_stk, &stks, 8) == 0 &&
             opt_buffer(cand_o, &b_cand, &cand, 8) == 0;
    if (!ok)
        goto done;
    size_t n = (size_t)cb.len;
    if ((size_t)pb.len != n * 8 || (size_t)gb.len != n * 8 || (size_t)ab.len != n * 8 * NARGS ||
        (kinds.on && kinds.n != 256) || rb.len != 256 || sb.len != 256) {
        PyErr_SetString(PyExc_ValueError, "columns or tables of the wrong length");
        goto done;
    }
    size_t tries = cand.on ? cand.n : n;
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(tries * 8));
    if (!result)
        goto done;
    i64 *out = (i64 *)PyBytes_AS_STRING(result);
    size_t kept = 0;
    const u8 *code = cb.buf, *mask = kinds.p, *roles = rb.buf, *stack_arg = sb.buf;
    const i64 *p = pb.buf, *g = gb.buf, *cands = cand.p;
    const u64 *a = ab.buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS;
    for (size_t k = 0; k < tries; k++) {
        size_t i = k;
        if (cand.on) {
            if (cands[k] < 0 || (size_t)cands[k] >= n) {
                bad = 1;
                break;
            }
            i = (size_t)cands[k];
        }
        u8 c = code[i];
        const u64 *ea = a + i * NARGS;
        if (kinds.on && !mask[c])
            continue;
        if (gs.on && !has_i64(&gs, g[i]))
            continue;
        if (ps.on && !has_i64(&ps, p[i]))
            continue;
        if (regs.on && !((roles[c] & ROLE_REGION) && has_u64(&regs, ea[NAME_ARG])))
            continue;
        if (logs.on && !((roles[c] & ROLE_LOG) && has_u64(&logs, ea[NAME_ARG])))
            continue;
        if (stks.on && !(stack_arg[c] != NO_STACK_ARG && has_u64(&stks, ea[stack_arg[c]])))
            continue;
        out[kept++] = (i64)i;
    }
    Py_END_ALLOW_THREADS;
    if (bad) {
        PyErr_SetString(PyExc_IndexError, "a candidate event index out of range");
        Py_CLEAR(result);
    } else if (_PyBytes_Resize(&result, (Py_ssize_t)(kept * 8)) < 0) {
        result = NULL;
    }
done:
    PyBuffer_Release(&cb), PyBuffer_Release(&pb), PyBuffer_Release(&gb), PyBuffer_Release(&ab);
    PyBuffer_Release(&rb), PyBuffer_Release(&sb);
    release(&kb), release(&b_gs), release(&b_ps), release(&b_reg), release(&b_log), release(&b_stk);
    release(&b_cand);
    return result;
}

/* Gathers width-byte items of src at idx into a new bytes object. */
static PyObject *gather(const Py_buffer *src, size_t width, const i64 *idx, size_t k) {
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(k * width));
    if (!out)
        return NULL;
    char *d = PyBytes_AS_STRING(out);
    const char *s = src->buf;
    for (size_t j = 0; j < k; j++)
        memcpy(d + j * width, s + (size_t)idx[j] * width, width);
    return out;
}

PyObject *take_columns(PyObject *self, PyObject *args) {
    Py_buffer ib, col[EVENT_NCOLS];
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*", &ib, &col[0], &col[1], &col[2], &col[3], &col[4], &col[5],
                          &col[6]))
        return NULL;
    static const size_t width[EVENT_NCOLS] = EVENT_COL_WIDTHS;
    PyObject *result = NULL;
    size_t n = (size_t)col[0].len, k = (size_t)ib.len / 8;
    const i64 *idx = ib.buf;
    int good = ib.len % 8 == 0;
    for (int c = 1; c < EVENT_NCOLS; c++)
        good &= (size_t)col[c].len == n * width[c];
    for (size_t j = 0; good && j < k; j++)
        good &= idx[j] >= 0 && (size_t)idx[j] < n;
    if (!good) {
        PyErr_SetString(PyExc_ValueError, "columns of different lengths, or an index out of range");
        goto done;
    }
    result = PyTuple_New(EVENT_NCOLS);
    for (int c = 0; result && c < EVENT_NCOLS; c++) {
        PyObject *g = gather(&col[c], width[c], idx, k);
        if (!g)
            Py_CLEAR(result);
        else
            PyTuple_SET_ITEM(result, c, g);
    }
done:
    PyBuffer_Release(&ib);
    for (int c = 0; c < EVENT_NCOLS; c++)
        PyBuffer_Release(&col[c]);
    return result;
}
