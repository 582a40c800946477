/* `go tool trace -d` of Go 1.21 for a complete legacy trace, compiled (the
 * twin: _trace/legacy/read.py's LegacyDecoder and _cli/render/dump.py's
 * legacy_lines): the trace is read, ordered and checked as for the exact
 * events (legacy_read.c, legacy_order.c, legacy_check.c), then each
 * ordered event is written as its line, a big buffer at a time, with the
 * GIL released while the lines are made. A trace the compiled stages give
 * up on is left to the twin before a line is written, so errors are the
 * twin's. The names and labels come from Python (_trace/spec/legacy.py). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "decode/legacy.h"
#include "render/legacy_dump.h"

#define CHUNK (1 << 20) /* bytes handed to write at a time */
#define MAX_ARGS 3
#define MAX_SARGS 2
#define MAX_LABEL 64 /* a name's or label's length, checked as the table comes in */
/* a line's length but for its strings: the time, name, P, G, offset and
 * arguments, each number at most 20 digits and a sign */
#define LINE_BOUND (32 + (4 + MAX_ARGS + MAX_SARGS) * (MAX_LABEL + 21))

typedef struct {
    const char *s;
    size_t n;
} Str;

/* One event type's line: its name, and the labels (" g=") of the
 * arguments and strings it prints. */
typedef struct {
    Str name, arg[MAX_ARGS], sarg[MAX_SARGS];
    int nargs, nsargs, string_arg;
} Label;

typedef struct {
    const L *l;
    const Label *lab;
    const Str *stw; /* the stop-the-world kinds; the first also for kinds past the end */
    size_t nstw;
} Dump;

static const char DIGITS[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                             "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                             "8081828384858687888990919293949596979899";

static inline char *put_u64(char *p, u64 v) {
    char tmp[20], *t = tmp + sizeof tmp;
    while (v >= 100) {
        const char *d = DIGITS + 2 * (v % 100);
        v /= 100;
        *--t = d[1], *--t = d[0];
    }
    if (v >= 10) {
        const char *d = DIGITS + 2 * v;
        *--t = d[1], *--t = d[0];
    } else
        *--t = (char)('0' + v);
    size_t n = (size_t)(tmp + sizeof tmp - t);
    memcpy(p, t, n);
    return p + n;
}

static inline char *put_i64(char *p, i64 v) {
    if (v < 0) {
        *p++ = '-';
        return put_u64(p, (u64)0 - (u64)v);
    }
    return put_u64(p, (u64)v);
}

static inline char *put(char *p, Str s) {
    memcpy(p, s.s, s.n);
    return p + s.n;
}

/* A string of the trace's table by id: empty where there is none, as the twin names it. */
static inline Str string_of(const L *l, u64 id) {
    u64 *v = map_find(&l->str_at, id);
    return v ? (Str){(const char *)l->d + (*v >> 24), (size_t)(*v & 0xffffff)} : (Str){"", 0};
}

/* The strings an event prints after its arguments: how many, in s. */
static int strings_of(const Dump *dm, const LEv *e, Str *s) {
    const Label *lb = &dm->lab[e->typ];
    int n = 0;
    if (e->typ == LEV_STW_START)
        s[n++] = dm->stw[e->a[0] < dm->nstw ? e->a[0] : 0];
    else if (lb->string_arg >= 0)
        s[n++] = string_of(dm->l, e->a[lb->string_arg]);
    if (e->typ == LEV_USER_LOG)
        s[n++] = (Str){(const char *)dm->l->d + dm->l->messages[2 * e->msg], (size_t)dm->l->messages[2 * e->msg + 1]};
    return n < lb->nsargs ? n : lb->nsargs;
}

static inline int g0_event(int t) {
    return t == LEV_GC_START || t == LEV_GC_DONE || t == LEV_STW_START || t == LEV_STW_DONE;
}

/* Lines for the events from *next on into buf (cap bytes), as many as fit:
 * its length. *need: when not even the first fits, the room it needs. */
static size_t fill(const Dump *dm, size_t *next, char *buf, size_t cap, size_t *need) {
    const L *l = dm->l;
    char *p = buf, *end = buf + cap;
    size_t i = *next;
    *need = 0;
    for (; i < l->nall; i++) {
        LEv ex, *e = &ex;
        l_expand(l, &l->all[i], e);
        const Label *lb = &dm->lab[e->typ];
        Str s[MAX_SARGS];
        int ns = strings_of(dm, e, s);
        size_t bound = LINE_BOUND;
        for (int k = 0; k < ns; k++)
            bound += s[k].n;
        if ((size_t)(end - p) < bound) {
            if (p == buf)
                *need = bound;
            break;
        }
        p = put_i64(p, e->ts);
        *p++ = ' ';
        p = put(p, lb->name);
        memcpy(p, " p=", 3), p += 3;
        p = put_i64(p, e->p);
        memcpy(p, " g=", 3), p += 3;
        p = put_u64(p, g0_event(e->typ) ? 0 : e->g);
        memcpy(p, " off=", 5), p += 5;
        p = put_u64(p, e->off);
        for (int k = 0; k < lb->nargs; k++) {
            p = put(p, lb->arg[k]);
            p = put_u64(p, e->a[k]);
        }
        for (int k = 0; k < ns; k++) {
            p = put(p, lb->sarg[k]);
            p = put(p, s[k]);
        }
        *p++ = '\n';
    }
    *next = i;
    return (size_t)(p - buf);
}

/* Reads, orders and checks the trace: an L_* outcome. */
static int prepare(L *l) {
    int rc = l_read(l, HEADER_SIZE);
    if (rc == L_OK)
        rc = l_order(l);
    if (rc == L_OK)
        rc = l_times(l);
    if (rc == L_OK)
        rc = l_check(l);
    return rc;
}

static int label_str(PyObject *o, Str *s) {
    if (!PyBytes_Check(o) || PyBytes_GET_SIZE(o) > MAX_LABEL) {
        PyErr_SetString(PyExc_ValueError, "a label must be bytes of at most 64");
        return -1;
    }
    s->s = PyBytes_AS_STRING(o), s->n = (size_t)PyBytes_GET_SIZE(o);
    return 0;
}

static int label_strs(PyObject *o, Str *s, int max, int *n) {
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) > max) {
        PyErr_SetString(PyExc_ValueError, "labels must be a short tuple");
        return -1;
    }
    *n = (int)PyTuple_GET_SIZE(o);
    for (int k = 0; k < *n; k++)
        if (label_str(PyTuple_GET_ITEM(o, k), &s[k]))
            return -1;
    return 0;
}

/* The labels, one (name, arg labels, string labels, string arg) per event type. */
static int read_labels(PyObject *labels, Label *lab) {
    if (!PyTuple_Check(labels) || PyTuple_GET_SIZE(labels) != LEV_COUNT) {
        PyErr_SetString(PyExc_ValueError, "labels: one tuple per event type");
        return -1;
    }
    for (int t = 0; t < LEV_COUNT; t++) {
        PyObject *row = PyTuple_GET_ITEM(labels, t);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 4) {
            PyErr_SetString(PyExc_ValueError, "labels: (name, args, sargs, string_arg)");
            return -1;
        }
        Label *lb = &lab[t];
        long sa = PyLong_AsLong(PyTuple_GET_ITEM(row, 3));
        if (sa == -1 && PyErr_Occurred())
            return -1;
        if (label_str(PyTuple_GET_ITEM(row, 0), &lb->name) ||
            label_strs(PyTuple_GET_ITEM(row, 1), lb->arg, MAX_ARGS, &lb->nargs) ||
            label_strs(PyTuple_GET_ITEM(row, 2), lb->sarg, MAX_SARGS, &lb->nsargs))
            return -1;
        if (sa >= MAX_ARGS || sa < -1) {
            PyErr_SetString(PyExc_ValueError, "labels: string_arg out of range");
            return -1;
        }
        lb->string_arg = (int)sa;
    }
    return 0;
}

/* legacy_dump(data, ver, counts, stack_flags, labels, stw, write) -> bool:
 * True once every line went to write (bytes, a chunk at a time), False
 * when the twin must decode the trace (nothing was written). */
static PyObject *legacy_dump(PyObject *self, PyObject *args) {
    Py_buffer db, cb, sb;
    int ver;
    PyObject *labels, *stw, *write;
    if (!PyArg_ParseTuple(args, "y*iy*y*O!O!O", &db, &ver, &cb, &sb, &PyTuple_Type, &labels, &PyTuple_Type, &stw,
                          &write))
        return NULL;
    PyObject *res = NULL;
    L l = {0};
    Label lab[LEV_COUNT];
    Str *stws = NULL;
    char *buf = NULL;
    size_t nstw = (size_t)PyTuple_GET_SIZE(stw);
    if (read_labels(labels, lab))
        goto done;
    if (!nstw || !(stws = PyMem_Malloc(nstw * sizeof(Str)))) {
        if (nstw)
            PyErr_NoMemory();
        else
            PyErr_SetString(PyExc_ValueError, "stw: at least one kind");
        goto done;
    }
    for (size_t k = 0; k < nstw; k++) {
        PyObject *o = PyTuple_GET_ITEM(stw, (Py_ssize_t)k);
        if (!PyBytes_Check(o)) {
            PyErr_SetString(PyExc_TypeError, "stw: bytes");
            goto done;
        }
        stws[k] = (Str){PyBytes_AS_STRING(o), (size_t)PyBytes_GET_SIZE(o)};
    }
    int rc = L_GIVE_UP;
    if (cb.len >= LEV_COUNT && sb.len >= LEV_COUNT && db.len >= HEADER_SIZE) {
        l.d = db.buf, l.end = (size_t)db.len, l.ver = ver;
        l.counts = cb.buf, l.stackf = sb.buf;
        Py_BEGIN_ALLOW_THREADS
        rc = prepare(&l);
        Py_END_ALLOW_THREADS
    }
    if (rc == L_NO_MEMORY) {
        PyErr_NoMemory();
        goto done;
    }
    if (rc == L_GIVE_UP) {
        res = Py_False;
        Py_INCREF(res);
        goto done;
    }
    Dump dm = {&l, lab, stws, nstw};
    size_t cap = CHUNK, next = 0;
    if (!(buf = PyMem_RawMalloc(cap))) {
        PyErr_NoMemory();
        goto done;
    }
    while (next < l.nall) {
        size_t len, need;
        Py_BEGIN_ALLOW_THREADS
        len = fill(&dm, &next, buf, cap, &need);
        Py_END_ALLOW_THREADS
        if (need) { /* a line with strings longer than the buffer */
            char *b = PyMem_RawRealloc(buf, need);
            if (!b) {
                PyErr_NoMemory();
                goto done;
            }
            buf = b, cap = need;
            continue;
        }
        PyObject *chunk = PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);
        PyObject *r = chunk ? PyObject_CallOneArg(write, chunk) : NULL;
        Py_XDECREF(chunk);
        if (!r)
            goto done;
        Py_DECREF(r);
    }
    res = Py_True;
    Py_INCREF(res);
done:
    l_free(&l);
    PyMem_Free(stws);
    PyMem_RawFree(buf);
    PyBuffer_Release(&db), PyBuffer_Release(&cb), PyBuffer_Release(&sb);
    return res;
}

static PyMethodDef dump_methods[] = {
    {"legacy_dump", legacy_dump, METH_VARARGS,
     "legacy_dump($module, data, ver, counts, stack_flags, labels, stw, write, /)\n--\n\n"
     "Go 1.21's `go tool trace -d` of a complete Go 1.7-1.21 trace, to write in chunks: True, or False when "
     "the twin must decode it."},
    {NULL},
};

int legacy_dump_register(PyObject *module) { return PyModule_AddFunctions(module, dump_methods); }
