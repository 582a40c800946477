/* Text written straight into a bytes object, for every writer of lines
 * (dump.c, jsonl.c, text.c): the output of a batch is megabytes, so it is
 * grown in place by doubling and cut to length at the end, never copied
 * piece by piece through Python strings. */

#ifndef LIVETRACE_TEXTBUF_H
#define LIVETRACE_TEXTBUF_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "common/containers.h"
#include "common/gil.h"

typedef struct {
    PyObject *obj;
    char *p;
    size_t n, cap;
    int oom; /* sticky: once a write failed, the text is abandoned */
    Gil *gil;
} TextBuf;

static inline int tb_init(TextBuf *b, size_t cap) {
    b->obj = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(cap ? cap : 1));
    b->gil = NULL;
    if (!b->obj)
        return -1;
    b->p = PyBytes_AS_STRING(b->obj);
    b->n = 0;
    b->cap = cap ? cap : 1;
    b->oom = 0;
    return 0;
}

/* Out of line: the rare growth. 0, or -1 (and oom, the GIL held) when out
 * of memory. */
static int tb_grow(TextBuf *b, size_t need) {
    if (b->oom)
        return -1;
    size_t nc = b->cap;
    while (nc < b->n + need)
        nc *= 2;
    /* A growth inside a part that holds the GIL (a line Python wrote) must
     * leave it held: Python objects are still in use there. */
    int released = gil_released(b->gil);
    gil_hold(b->gil);
    if (_PyBytes_Resize(&b->obj, (Py_ssize_t)nc)) { /* frees and clears obj on failure */
        b->oom = 1;
        return -1;
    }
    if (released)
        gil_free(b->gil);
    b->p = PyBytes_AS_STRING(b->obj);
    b->cap = nc;
    return 0;
}

/* Room for need more bytes: 0, or -1 once a growth failed (never a write
 * into the freed buffer). Inline, so that the many short writes cost a
 * compare. */
static inline __attribute__((always_inline)) int tb_room(TextBuf *b, size_t need) {
    if (!b->oom && b->n + need <= b->cap)
        return 0;
    return tb_grow(b, need);
}

/* Writers into room already made (a line reserves its most up front). */
static inline __attribute__((always_inline)) void tb_put_raw(TextBuf *b, const char *s, size_t n) {
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

#define TB_LIT_RAW(b, lit) tb_put_raw(b, lit, sizeof(lit) - 1)

static inline __attribute__((always_inline)) int tb_put(TextBuf *b, const char *s, size_t n) {
    if (tb_room(b, n))
        return -1;
    tb_put_raw(b, s, n);
    return 0;
}

#define TB_LIT(b, lit) tb_put(b, lit, sizeof(lit) - 1)

/* Two digits at a time: numbers are most of a line's characters. */
static const char TB_DIGITS2[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                    "8081828384858687888990919293949596979899";

/* How many digits u has. */
static inline __attribute__((always_inline)) int tb_ndigits(u64 u) {
    static const u64 P10[20] = {1ULL,
                                10ULL,
                                100ULL,
                                1000ULL,
                                10000ULL,
                                100000ULL,
                                1000000ULL,
                                10000000ULL,
                                100000000ULL,
                                1000000000ULL,
                                10000000000ULL,
                                100000000000ULL,
                                1000000000000ULL,
                                10000000000000ULL,
                                100000000000000ULL,
                                1000000000000000ULL,
                                10000000000000000ULL,
                                100000000000000000ULL,
                                1000000000000000000ULL,
                                10000000000000000000ULL};
    /* log10 from log2 (1233 / 4096 ~ log10(2)): exact, or one over */
    int t = ((64 - __builtin_clzll(u | 1)) * 1233) >> 12;
    return t + (u >= P10[t]) + (u == 0);
}

/* x's 8 digits (x < 10^8, leading zeros kept) at p: two halves of four,
 * each two pairs, in 32-bit arithmetic with no step waiting on another. */
static inline __attribute__((always_inline)) void tb_digits8(char *p, u32 x) {
    u32 hi = x / 10000, lo = x % 10000;
    memcpy(p, TB_DIGITS2 + 2 * (hi / 100), 2);
    memcpy(p + 2, TB_DIGITS2 + 2 * (hi % 100), 2);
    memcpy(p + 4, TB_DIGITS2 + 2 * (lo / 100), 2);
    memcpy(p + 6, TB_DIGITS2 + 2 * (lo % 100), 2);
}

/* u's digits written ending at end (exclusive). A trace's times have 16
 * to 19 digits: eight at a time (one 64-bit division each, the digits
 * from 32-bit ones), not two at a time (nine 64-bit divisions, each
 * waiting on the one before). */
static inline __attribute__((always_inline)) void tb_digits_at(char *end, u64 u) {
    while (u >= 100000000) {
        u32 r = (u32)(u % 100000000);
        u /= 100000000;
        end -= 8;
        tb_digits8(end, r);
    }
    u32 v = (u32)u;
    while (v >= 100) {
        u32 r = v % 100;
        v /= 100;
        end -= 2;
        memcpy(end, TB_DIGITS2 + 2 * r, 2);
    }
    if (v >= 10)
        memcpy(end - 2, TB_DIGITS2 + 2 * v, 2);
    else
        end[-1] = (char)('0' + v);
}

/* Numbers are written in place, their length known first: a copy through
 * a scratch buffer cost a call to memcpy of a variable length per number,
 * most of what a JSON span line's numbers cost. */
static inline __attribute__((always_inline)) void tb_u64_raw(TextBuf *b, u64 u) {
    int nd = tb_ndigits(u);
    tb_digits_at(b->p + b->n + nd, u);
    b->n += (size_t)nd;
}

static inline __attribute__((always_inline)) void tb_i64_raw(TextBuf *b, i64 v) {
    if (v < 0)
        b->p[b->n++] = '-';
    tb_u64_raw(b, v < 0 ? (u64)0 - (u64)v : (u64)v);
}

static inline int tb_u64(TextBuf *b, u64 u) {
    if (tb_room(b, 24))
        return -1;
    tb_u64_raw(b, u);
    return 0;
}

static inline int tb_i64(TextBuf *b, i64 v) {
    if (tb_room(b, 24))
        return -1;
    tb_i64_raw(b, v);
    return 0;
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

/* The line other(i) makes (bytes, from Python: a line the core leaves to
 * its twin), and its newline; tb_room's answer, or -1 with an exception
 * (and the GIL held). */
static inline int tb_put_other_line(TextBuf *o, PyObject *other, size_t i) {
    int released = gil_released(o->gil);
    gil_hold(o->gil);
    PyObject *line = PyObject_CallFunction(other, "n", (Py_ssize_t)i);
    if (!line)
        return -1;
    if (!PyBytes_Check(line)) {
        Py_DECREF(line);
        PyErr_SetString(PyExc_TypeError, "other() must return bytes");
        return -1;
    }
    size_t n = (size_t)PyBytes_GET_SIZE(line);
    int r = tb_room(o, n + 1);
    if (!r) {
        tb_put_raw(o, PyBytes_AS_STRING(line), n);
        o->p[o->n++] = '\n';
    }
    GIL_HELD();
    Py_DECREF(line);
    if (!r && released)
        gil_free(o->gil);
    return r;
}

#endif
