/* `livetrace tail --spans`'s lines, written straight from a SpanBatch's
 * columns: the twin of _cli/render/spans.py's SpanLines.twin_line (the
 * text line: signed start since t0, kind, resource, duration, P, name,
 * reason, task, the first frame of a stack; the JSON object of
 * docs/events-jsonl.md's "Spans"), byte for byte.
 *
 * Python makes what needs the tables, once per id (partcache.h): a name's
 * piece (escaped for a terminal, or as JSON), a stack's piece (its first
 * frame, or its frames as JSON), and a span's logs as JSON. A span with
 * values this code does not write alike (a kind out of range, times whose
 * differences overflow, a stack id past 32 bits), is written whole by
 * Python, so the output, and any error, is the twin's. */

#include "render/span_lines.h"

#include <stdio.h>
#include <string.h>

#include "common/containers.h"
#include "common/generated.h"
#include "render/partcache.h"
#include "render/textbuf.h"

/* The most a line's own text takes, pieces apart: numbers, field names. */
#define LINE_ROOM 512
#define NKINDS N_SPAN_KINDS
#define RESOURCE_WIDTH 16
#define DURATION_WIDTH 9

enum { NCOLS = SPAN_NCOLS };
static const int WIDTH[NCOLS] = SPAN_COL_WIDTHS;

typedef struct {
    const u8 *c[NCOLS];
} Cols;

static inline i64 col_i64(const Cols *c, int k, size_t i) { return ld_i64(c->c[k], i); }
static inline u64 col_u64(const Cols *c, int k, size_t i) { return ld_u64(c->c[k], i); }
static inline u32 col_u32(const Cols *c, int k, size_t i) { return ld_u32(c->c[k], i); }

/* A JSON line's start up to its id's value, for each kind and resource
 * kind: one copy where there were four pieces. */
#define PREFIX_ROOM 96

typedef struct {
    TextBuf o;
    PartCache names, stacks;
    const char *kind[NKINDS];
    size_t kind_n[NKINDS];
    char prefix[NKINDS][3][PREFIX_ROOM];
    u8 prefix_n[NKINDS][3];
    int json;
    i64 t0;
} Lines;

/* The twin's line: a part's maker raised an ordinary exception. */
enum { PART_TWIN = 1 };

static int part(PartCache *t, u64 id, const char **p, size_t *n) {
    int r = part_get(t, id, p, n);
    if (r == PART_MISS_RAISED) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return PART_ERROR;
        PyErr_Clear();
        return PART_TWIN;
    }
    return r;
}

/* A stack's piece (empty: none), through its (tables, stack id) key. */
static int stack_part(Lines *x, u32 tok, u64 sid, const char **p, size_t *n) {
    if (!sid) {
        *p = "", *n = 0;
        return PART_OK;
    }
    return part(&x->stacks, (u64)tok << 32 | sid, p, n);
}

/* frac digits of v (< 10^frac) after a point. */
static inline __attribute__((always_inline)) void put_frac(TextBuf *o, u64 v, int frac) {
    char d[8];
    d[0] = '.';
    for (int k = frac; k > 0; k--, v /= 10)
        d[k] = (char)('0' + v % 10);
    tb_put_raw(o, d, (size_t)frac + 1);
}

/* v / 10^scale with frac decimals, as Python's "%.{frac}f" of the float
 * v / 10^scale writes it. The true quotient is that close to the float
 * (|v| < 10^15) that rounding the integers gives the same digits, unless
 * exactly half way (where the float's error decides): then printf, which
 * rounds the float as Python does. */
static inline __attribute__((always_inline)) void put_scaled(TextBuf *o, i64 v, int scale, int frac, int sign) {
    static const i64 P10[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000};
    i64 unit = P10[scale - frac], whole = P10[frac];
    u64 a = v < 0 ? (u64)0 - (u64)v : (u64)v;
    if (a < 1000000000000000ULL && (i64)(a % (u64)unit) * 2 != unit) {
        u64 q = a / (u64)unit + (a % (u64)unit * 2 > (u64)unit);
        if (v < 0)
            o->p[o->n++] = '-';
        else if (sign)
            o->p[o->n++] = '+';
        tb_u64_raw(o, q / (u64)whole);
        put_frac(o, q % (u64)whole, frac);
        return;
    }
    char fmt[8];
    snprintf(fmt, sizeof fmt, "%%%s.%df", sign ? "+" : "", frac);
    int k = snprintf(o->p + o->n, 64, fmt, (double)v / (double)P10[scale]);
    if (k > 0 && k < 64)
        o->n += (size_t)k;
}

/* duration_text(ns), right-aligned to DURATION_WIDTH characters. */
static void put_duration(TextBuf *o, i64 ns) {
    TextBuf t = {.p = (char[80]){0}, .n = 0, .cap = 80};
    size_t chars_less = 0; /* "µ" is two bytes, one character */
    if (ns < 1000) {
        tb_i64_raw(&t, ns);
        TB_LIT_RAW(&t, "ns");
    } else if (ns < 1000000) {
        put_scaled(&t, ns, 3, 1, 0);
        TB_LIT_RAW(&t, "\xc2\xb5s");
        chars_less = 1;
    } else if (ns < 1000000000) {
        put_scaled(&t, ns, 6, 2, 0);
        TB_LIT_RAW(&t, "ms");
    } else {
        put_scaled(&t, ns, 9, 2, 0);
        TB_LIT_RAW(&t, "s");
    }
    for (size_t w = t.n - chars_less; w < DURATION_WIDTH; w++)
        o->p[o->n++] = ' ';
    tb_put_raw(o, t.p, t.n);
}

static const char *const RESOURCE_TEXT[3] = {"None", "Goroutine(", "Proc("};
static const u8 RESOURCE_TEXT_N[3] = {4, 10, 5};
static const char *const RESOURCE_JSON[3] = {"none", "goroutine", "proc"};

/* The JSON lines' prefixes; a length of 0 where a kind's name does not fit
 * or holds a NUL (a caller's odd tuple): the spans of that kind are then
 * the twin's. */
static void make_prefixes(Lines *x) {
    for (int k = 0; k < NKINDS; k++)
        for (int rk = 0; rk < 3; rk++) {
            int n = snprintf(x->prefix[k][rk], PREFIX_ROOM, "{\"kind\": \"Span\", \"span\": \"%.*s\", \"resource\": \"%s\", \"id\": ",
                             (int)x->kind_n[k], x->kind[k], RESOURCE_JSON[rk]);
            x->prefix_n[k][rk] = n > 0 && n < PREFIX_ROOM && memchr(x->kind[k], 0, x->kind_n[k]) == NULL ? (u8)n : 0;
        }
}

/* A piece appended into room the line reserved for it; nothing for an empty one. */
#define PUT_PIECE_RAW(o, pre, p, n)                                                                                   \
    do {                                                                                                               \
        if (n) {                                                                                                       \
            TB_LIT_RAW(o, pre);                                                                                        \
            tb_put_raw(o, p, n);                                                                                       \
        }                                                                                                              \
    } while (0)

/* One span's line, with the JSON of its logs (none: n 0): 0, -1 (no
 * exception) when the twin must write it, -2 with an exception set. */
static int put_line(Lines *x, const Cols *c, size_t i, const char *logs, size_t nlogs) {
    TextBuf *o = &x->o;
    u8 kind = c->c[SPAN_COL_KINDS][i], rk = c->c[SPAN_COL_RESOURCE_KINDS][i], flags = c->c[SPAN_COL_FLAGS][i];
    i64 rid = col_i64(c, SPAN_COL_RESOURCE_IDS, i), start = col_i64(c, SPAN_COL_STARTS, i);
    i64 end = col_i64(c, SPAN_COL_ENDS, i), proc = col_i64(c, SPAN_COL_PROCS, i), dur, since;
    u64 ss = col_u64(c, SPAN_COL_START_STACKS, i), es = col_u64(c, SPAN_COL_END_STACKS, i);
    u64 task = col_u64(c, SPAN_COL_TASKS, i);
    if (kind >= NKINDS || rk > 2 || ss >> 32 || es >> 32 || __builtin_sub_overflow(end, start, &dur) ||
        __builtin_sub_overflow(start, x->t0, &since))
        return -1;
    const char *reason, *name, *tname = "", *sp, *ep;
    size_t nreason, nname, ntname = 0, nsp, nep;
    int r;
    if ((r = part(&x->names, col_u32(c, SPAN_COL_REASONS, i), &reason, &nreason)) ||
        (r = part(&x->names, col_u32(c, SPAN_COL_NAMES, i), &name, &nname)) ||
        (r = stack_part(x, col_u32(c, SPAN_COL_START_TABLES, i), ss, &sp, &nsp)) ||
        (r = stack_part(x, col_u32(c, SPAN_COL_END_TABLES, i), es, &ep, &nep)))
        return r == PART_TWIN ? -1 : -2;
    if (x->json && (r = part(&x->names, col_u32(c, SPAN_COL_TASK_NAMES, i), &tname, &ntname)))
        return r == PART_TWIN ? -1 : -2;
    int on_p = proc >= 0 && rk != RES_PROC;
    if (x->json) {
        size_t npre = x->prefix_n[kind][rk];
        if (!npre)
            return -1;
        /* One reservation for the whole line: LINE_ROOM holds its names and numbers. */
        if (tb_room(o, LINE_ROOM + npre + nreason + nname + ntname + nsp + nep + nlogs))
            return -2;
        tb_put_raw(o, x->prefix[kind][rk], npre);
        tb_i64_raw(o, rid);
        TB_LIT_RAW(o, ", \"start_ns\": ");
        tb_i64_raw(o, start);
        TB_LIT_RAW(o, ", \"end_ns\": ");
        tb_i64_raw(o, end);
        TB_LIT_RAW(o, ", \"duration_ns\": ");
        tb_i64_raw(o, dur);
        if (on_p) {
            TB_LIT_RAW(o, ", \"proc\": ");
            tb_i64_raw(o, proc);
        }
        PUT_PIECE_RAW(o, ", \"reason\": ", reason, nreason);
        PUT_PIECE_RAW(o, ", \"name\": ", name, nname);
        if (task) {
            TB_LIT_RAW(o, ", \"task\": ");
            tb_u64_raw(o, task);
        }
        PUT_PIECE_RAW(o, ", \"task_name\": ", tname, ntname);
        if (flags & CLIPPED_START)
            TB_LIT_RAW(o, ", \"clipped_start\": true");
        if (flags & CLIPPED_END)
            TB_LIT_RAW(o, ", \"clipped_end\": true");
        PUT_PIECE_RAW(o, ", \"start_stack\": ", sp, nsp);
        PUT_PIECE_RAW(o, ", \"end_stack\": ", ep, nep);
        PUT_PIECE_RAW(o, ", \"logs\": ", logs, nlogs);
        TB_LIT_RAW(o, "}\n");
        return 0;
    }
    /* One reservation for the whole line, as for JSON; of the stacks, it shows one. */
    if (tb_room(o, LINE_ROOM + x->kind_n[kind] + nname + nreason + (nsp ? nsp : nep)))
        return -2;
    put_scaled(o, since, 9, 6, 1);
    o->p[o->n++] = 's';
    o->p[o->n++] = ' ';
    tb_put_raw(o, x->kind[kind], x->kind_n[kind]);
    o->p[o->n++] = ' ';
    size_t res = o->n;
    tb_put_raw(o, RESOURCE_TEXT[rk], RESOURCE_TEXT_N[rk]);
    if (rk) {
        tb_i64_raw(o, rid);
        o->p[o->n++] = ')';
    }
    while (o->n - res < RESOURCE_WIDTH)
        o->p[o->n++] = ' ';
    o->p[o->n++] = ' ';
    put_duration(o, dur);
    if (on_p) {
        TB_LIT_RAW(o, " on P ");
        tb_i64_raw(o, proc);
    }
    PUT_PIECE_RAW(o, " ", name, nname);
    if (nreason) {
        PUT_PIECE_RAW(o, " (", reason, nreason);
        o->p[o->n++] = ')';
    }
    if (task) {
        TB_LIT_RAW(o, " task ");
        tb_u64_raw(o, task);
    }
    /* the first frame of the start stack, or else of the end stack */
    if (nsp)
        tb_put_raw(o, sp, nsp);
    else if (nep)
        tb_put_raw(o, ep, nep);
    o->p[o->n++] = '\n';
    return 0;
}

/* The text so far onto the list of pieces (the buffer given up): 0, or -1
 * with an exception set. */
static int put_piece_out(TextBuf *o, PyObject *pieces) {
    PyObject *text = tb_finish(o);
    if (!text)
        return -1;
    int r = PyList_Append(pieces, text);
    Py_DECREF(text);
    return r;
}

PyObject *span_lines(PyObject *self, PyObject *args) {
    PyObject *cols, *kinds, *names, *stacks, *miss, *logs, *other, *log_json = Py_None;
    int json;
    long long t0;
    Py_ssize_t lo, hi, piece_lines = 0;
    if (!PyArg_ParseTuple(args, "O!nnpLO!O!O!OOO|On", &PyList_Type, &cols, &lo, &hi, &json, &t0, &PyTuple_Type,
                          &kinds, &PyDict_Type, &names, &PyDict_Type, &stacks, &miss, &logs, &other, &log_json,
                          &piece_lines))
        return NULL;
    if (PyList_GET_SIZE(cols) != NCOLS)
        return PyErr_Format(PyExc_ValueError, "%d columns expected", NCOLS);
    if (PyTuple_GET_SIZE(kinds) != NKINDS)
        return PyErr_Format(PyExc_ValueError, "%d kinds expected", NKINDS);
    Lines x = {0};
    Py_buffer b[NCOLS];
    int nb = 0;
    PyObject *result = NULL, *pieces = NULL;
    char *with_logs = NULL;
    Cols c;
    for (; nb < NCOLS; nb++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(cols, nb), &b[nb], PyBUF_SIMPLE) < 0)
            goto done;
        c.c[nb] = b[nb].buf;
    }
    size_t n = (size_t)b[0].len;
    for (int k = 0; k < NCOLS; k++)
        if ((size_t)b[k].len != n * (size_t)WIDTH[k]) {
            PyErr_SetString(PyExc_ValueError, "columns of different lengths");
            goto done;
        }
    if (lo < 0 || hi < lo || (size_t)hi > n) {
        PyErr_SetString(PyExc_ValueError, "rows out of range");
        goto done;
    }
    for (int k = 0; k < NKINDS; k++) {
        PyObject *s = PyTuple_GET_ITEM(kinds, k);
        if (!PyBytes_Check(s)) {
            PyErr_SetString(PyExc_TypeError, "kinds must hold bytes");
            goto done;
        }
        x.kind[k] = PyBytes_AS_STRING(s);
        x.kind_n[k] = (size_t)PyBytes_GET_SIZE(s);
    }
    x.json = json;
    x.t0 = (i64)t0;
    if (json)
        make_prefixes(&x);
    /* Pieces of piece_lines lines (all in one, 0): a piece of a few hundred lines is written in warm memory. */
    size_t per = piece_lines > 0 && piece_lines < hi - lo ? (size_t)piece_lines : (size_t)(hi - lo);
    size_t room = per * (json ? 1024 : 128) + LINE_ROOM;
    if (!(pieces = PyList_New(0)) || part_cache_open(&x.names, names, miss, "name") ||
        part_cache_open(&x.stacks, stacks, miss, "stack") || tb_init(&x.o, room))
        goto done;
    /* A text line shows no logs: only JSON's are the twin's. */
    Py_ssize_t nlogs = json ? PyObject_Size(logs) : 0;
    if (nlogs < 0)
        goto done;
    /* The rows with logs (their lines are the twin's), found while the GIL is held. */
    if (nlogs > 0) {
        with_logs = calloc((size_t)(hi - lo), 1);
        if (!with_logs) {
            PyErr_NoMemory();
            goto done;
        }
        /* A dict of ints (a batch's few spans with logs): its keys, not a
         * lookup for each row; anything else, `i in logs` for each. */
        int each = !PyDict_CheckExact(logs);
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (!each && PyDict_Next(logs, &pos, &key, &value)) {
            Py_ssize_t row = PyLong_CheckExact(key) ? PyLong_AsSsize_t(key) : -1;
            if (row == -1) { /* not an int, past any row, or -1: ask as Python would */
                PyErr_Clear();
                each = 1;
                memset(with_logs, 0, (size_t)(hi - lo));
            } else if (row >= lo && row < hi) {
                with_logs[row - lo] = 1;
            }
        }
        for (size_t i = (size_t)lo; each && i < (size_t)hi; i++) {
            PyObject *key = PyLong_FromSize_t(i);
            if (!key)
                goto done;
            int has = PySequence_Contains(logs, key);
            Py_DECREF(key);
            if (has < 0)
                goto done;
            with_logs[i - (size_t)lo] = (char)has;
        }
    }
    /* The lines are written without the GIL (textbuf.h's Gil). */
    Gil gil = {NULL, 1};
    x.o.gil = x.names.gil = x.stacks.gil = &gil;
    for (size_t i = (size_t)lo; i < (size_t)hi; i++) {
        if (i > (size_t)lo && (i - (size_t)lo) % per == 0) { /* a piece full: the next */
            gil_hold(&gil);
            if (put_piece_out(&x.o, pieces) || tb_init(&x.o, room))
                goto done;
            x.o.gil = &gil;
        }
        gil_free(&gil); /* a part that raised kept it for the twin's line */
        size_t start = x.o.n;
        int r = -1;
        if (!with_logs || !with_logs[i - (size_t)lo]) {
            r = put_line(&x, &c, i, NULL, 0);
        } else if (log_json != Py_None) {
            /* Its logs' JSON from Python, the rest here. */
            gil_hold(&gil);
            PyObject *piece = PyObject_CallFunction(log_json, "n", (Py_ssize_t)i);
            if (!piece)
                goto done;
            if (!PyBytes_Check(piece)) {
                Py_DECREF(piece);
                PyErr_SetString(PyExc_TypeError, "log_json() must return bytes");
                goto done;
            }
            r = put_line(&x, &c, i, PyBytes_AS_STRING(piece), (size_t)PyBytes_GET_SIZE(piece));
            GIL_HELD(); /* held through put_line: its parts and growth keep it as they find it */
            Py_DECREF(piece);
        }
        if (r == -2)
            goto done;
        if (r == -1) {
            x.o.n = start;
            if (tb_put_other_line(&x.o, other, i))
                goto done;
        }
    }
    gil_hold(&gil);
    if (hi > lo && put_piece_out(&x.o, pieces))
        goto done;
    result = pieces;
    pieces = NULL;
done:
    gil_hold(x.o.gil);
    Py_XDECREF(pieces);
    free(with_logs);
    Py_XDECREF(x.o.obj);
    part_cache_close(&x.names), part_cache_close(&x.stacks);
    for (int k = 0; k < nb; k++)
        PyBuffer_Release(&b[k]);
    return result;
}
