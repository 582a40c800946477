/* Text written straight into a bytes object, for the dumps (dump.c): the
 * output of a batch is megabytes, so it is grown in place and cut to length
 * at the end, never copied piece by piece through Python strings. */

#ifndef LIVETRACE_TEXTBUF_H
#define LIVETRACE_TEXTBUF_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "containers.h"

typedef struct {
    PyObject *obj;
    char *p;
    size_t n, cap;
    int oom; /* sticky: once a write failed, the text is abandoned */
} TextBuf;

static inline int tb_init(TextBuf *b, size_t cap) {
    b->obj = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(cap ? cap : 1));
    if (!b->obj)
        return -1;
    b->p = PyBytes_AS_STRING(b->obj);
    b->n = 0;
    b->cap = cap ? cap : 1;
    b->oom = 0;
    return 0;
}

/* Room for need more bytes: 0, or -1 (and oom) when out of memory. */
static inline int tb_room(TextBuf *b, size_t need) {
    if (b->oom)
        return -1;
    if (b->n + need <= b->cap)
        return 0;
    size_t nc = b->cap;
    while (nc < b->n + need)
        nc *= 2;
    if (_PyBytes_Resize(&b->obj, (Py_ssize_t)nc)) {
        b->oom = 1;
        return -1;
    }
    b->p = PyBytes_AS_STRING(b->obj);
    b->cap = nc;
    return 0;
}

static inline int tb_put(TextBuf *b, const char *s, size_t n) {
    if (tb_room(b, n))
        return -1;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

#define TB_LIT(b, lit) tb_put(b, lit, sizeof(lit) - 1)

static inline int tb_u64(TextBuf *b, u64 u) {
    if (tb_room(b, 20))
        return -1;
    char tmp[20];
    int k = 20;
    do {
        tmp[--k] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    memcpy(b->p + b->n, tmp + k, (size_t)(20 - k));
    b->n += (size_t)(20 - k);
    return 0;
}

static inline int tb_i64(TextBuf *b, i64 v) {
    if (v >= 0)
        return tb_u64(b, (u64)v);
    if (tb_put(b, "-", 1))
        return -1;
    return tb_u64(b, (u64)0 - (u64)v);
}

/* The bytes object, cut to length (the reference passes to the caller), or
 * NULL with an exception set. */
static inline PyObject *tb_finish(TextBuf *b) {
    if (b->oom || _PyBytes_Resize(&b->obj, (Py_ssize_t)b->n)) {
        Py_CLEAR(b->obj);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return NULL;
    }
    PyObject *r = b->obj;
    b->obj = NULL;
    return r;
}

#endif
