/* `livetrace tail`'s text lines, written straight from a batch's columns:
 * the twin of _cli/render/text.py's event_text (text_line's
 * clock, kind, context and the details Go's Event.String() gives, then
 * the first frame of the stack), byte for byte.
 *
 * Python resolves what needs the generation's tables, once per id: a
 * string's quoted text (Go's strconv.Quote), a stack's first frame. Any
 * event this code does not write, or whose values the twin would not
 * accept (a state out of range, a clock past year 9999), is made whole by
 * Python, so the output, and any error, is the twin's. */

#include "render/text.h"

#include <stdio.h>
#include <string.h>

#include "decode/engine.h"
#include "render/jsonl.h"
#include "render/partcache.h"
#include "render/textbuf.h"

/* The most any line's fixed text takes: marks, clock, context (three
 * 20-digit ids), the longest details' own text and its numbers. */
#define LINE_ROOM 512
#define CTX_WIDTH 22

/* The parts Python makes, cached per id (partcache.h). PART_TWIN: making
 * one raised an ordinary exception, which the twin meets too (it makes
 * the line, or raises). */
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

/* ---- the call's state ---- */

typedef struct {
    TextBuf o;
    PartCache quotes, frames, xquotes;
    const char *kcol[256];
    size_t kcol_n[256];
    int provisional;
    i64 t0;
    int has_wall;
    int wall_twin; /* a clock base past int64: every line is the twin's */
    i64 wall_base;
    i64 hms_sec; /* the second hms holds */
    char hms[8];
} Text;

/* A part appended to the line (room reserved for it): PART_* */
static int put_part(Text *x, PartCache *t, u64 id) {
    const char *p;
    size_t n;
    int r = part(t, id, &p, &n);
    if (r != PART_OK)
        return r;
    if (tb_room(&x->o, n + LINE_ROOM))
        return PART_ERROR;
    tb_put_raw(&x->o, p, n);
    return PART_OK;
}

/* The clock column: "HH:MM:SS.uuuuuu" of the event's Unix time where the
 * generation has one, else "+S.uuuuuus" since t0. 0, or -1 when the twin
 * must make the line (out of the range this writes alike). */
static int put_clock(Text *x, i64 t) {
    TextBuf *o = &x->o;
    if (x->has_wall) {
        i64 w;
        if (x->wall_twin || __builtin_add_overflow(x->wall_base, t, &w))
            return -1;
        i64 sec = w >= 0 ? w / 1000000000 : -((-(w + 1)) / 1000000000) - 1;
        i64 nsec = w - sec * 1000000000;
        if (sec < 0 || sec >= 253402300800LL) /* the years 1970-9999: a four-digit year */
            return -1;
        if (sec != x->hms_sec) {
            int d = (int)(sec % 86400);
            int hh = d / 3600, mm = d / 60 % 60, ss = d % 60;
            char *h = x->hms;
            h[0] = (char)('0' + hh / 10), h[1] = (char)('0' + hh % 10), h[2] = ':';
            h[3] = (char)('0' + mm / 10), h[4] = (char)('0' + mm % 10), h[5] = ':';
            h[6] = (char)('0' + ss / 10), h[7] = (char)('0' + ss % 10);
            x->hms_sec = sec;
        }
        tb_put_raw(o, x->hms, 8);
        if (!nsec) {
            TB_LIT_RAW(o, "0000000"); /* the twin pads "HH:MM:SS" with zeros: no point */
            return 0;
        }
        char frac[7];
        i64 us = nsec / 1000;
        frac[0] = '.';
        for (int k = 6; k > 0; k--, us /= 10)
            frac[k] = (char)('0' + us % 10);
        tb_put_raw(o, frac, 7);
        return 0;
    }
    i64 d;
    if (__builtin_sub_overflow(t, x->t0, &d))
        return -1;
    o->p[o->n++] = '+';
    i64 rem = d % 1000;
    if (d >= 0 && d < 1000000000000000LL && rem != 500) {
        /* d / 1e9 is within 0.2 ns of the true quotient here, so "%.6f"
         * rounds it as the nanoseconds say, unless exactly half way. */
        i64 us = d / 1000 + (rem > 500);
        tb_u64_raw(o, (u64)(us / 1000000));
        char frac[7];
        i64 f = us % 1000000;
        frac[0] = '.';
        for (int k = 6; k > 0; k--, f /= 10)
            frac[k] = (char)('0' + f % 10);
        tb_put_raw(o, frac, 7);
    } else {
        int k = snprintf(o->p + o->n, 64, "%.6f", (double)d / 1e9);
        if (k < 0 || k >= 64)
            return -1;
        o->n += (size_t)k;
    }
    o->p[o->n++] = 's';
    return 0;
}

/* "P1 M2 G3" (those not -1), padded to CTX_WIDTH. */
static void put_ctx(TextBuf *o, i64 p, i64 m, i64 g) {
    size_t start = o->n;
    const i64 v[3] = {p, m, g};
    const char names[3] = {'P', 'M', 'G'};
    for (int k = 0; k < 3; k++) {
        if (v[k] == -1)
            continue;
        if (o->n > start)
            o->p[o->n++] = ' ';
        o->p[o->n++] = names[k];
        tb_i64_raw(o, v[k]);
    }
    while (o->n - start < CTX_WIDTH)
        o->p[o->n++] = ' ';
}

static void put_value(TextBuf *o, u64 v) {
    TB_LIT_RAW(o, "Value{Uint64(");
    tb_u64_raw(o, v);
    TB_LIT_RAW(o, ")}");
}

/* A state transition's details: 0, or -1 when the twin must make the line. */
static int put_transition(Text *x, int c, i64 p, i64 g, const u64 *a, const u64 *xa, int *r) {
    TextBuf *o = &x->o;
    int proc = 0, old, new_;
    u64 reason = 0;
    int has_reason = 0, has_tstack = 0;
    u64 tstack = 0;
    i64 sid = 0;
    u64 uid = 0;
    int signed_id = 0;
    switch (c) {
    case EV_PROC_START: proc = 1, uid = a[0], old = PS_IDLE, new_ = PS_RUNNING; break;
    case EV_PROC_STOP: proc = 1, sid = p, signed_id = 1, old = PS_RUNNING, new_ = PS_IDLE; break;
    case EV_PROC_STEAL:
        proc = 1, uid = a[0], old = xa[0] == PROC_SYSCALL_ABANDONED ? PS_IDLE : PS_RUNNING, new_ = PS_IDLE;
        break;
    case EV_PROC_STATUS:
        if (xa[0] >= PS_COUNT || a[1] >= PROC_STATUS_COUNT)
            return -1;
        proc = 1, uid = a[0], old = (int)xa[0], new_ = PROC_STATUS_STATE[a[1]];
        break;
    case EV_GO_CREATE: case EV_GO_CREATE_BLOCKED:
        uid = a[0], old = GS_NOT_EXIST, new_ = c == EV_GO_CREATE_BLOCKED ? GS_WAITING : GS_RUNNABLE;
        has_tstack = 1, tstack = a[1];
        break;
    case EV_GO_CREATE_SYSCALL: uid = a[0], old = GS_NOT_EXIST, new_ = GS_SYSCALL; break;
    case EV_GO_START: uid = a[0], old = GS_RUNNABLE, new_ = GS_RUNNING; break;
    case EV_GO_DESTROY: sid = g, signed_id = 1, old = GS_RUNNING, new_ = GS_NOT_EXIST; break;
    case EV_GO_DESTROY_SYSCALL: sid = g, signed_id = 1, old = GS_SYSCALL, new_ = GS_NOT_EXIST; break;
    case EV_GO_STOP: case EV_GO_BLOCK:
        sid = g, signed_id = 1, old = GS_RUNNING, new_ = c == EV_GO_STOP ? GS_RUNNABLE : GS_WAITING;
        has_reason = 1, reason = a[0], has_tstack = a[1] != 0, tstack = a[1];
        break;
    case EV_GO_UNBLOCK: case EV_GO_SWITCH: case EV_GO_SWITCH_DESTROY:
        uid = a[0], old = GS_WAITING, new_ = GS_RUNNABLE;
        break;
    case EV_GO_SYSCALL_BEGIN:
        sid = g, signed_id = 1, old = GS_RUNNING, new_ = GS_SYSCALL, has_tstack = a[1] != 0, tstack = a[1];
        break;
    case EV_GO_SYSCALL_END: sid = g, signed_id = 1, old = GS_SYSCALL, new_ = GS_RUNNING; break;
    case EV_GO_SYSCALL_END_BLOCKED: sid = g, signed_id = 1, old = GS_SYSCALL, new_ = GS_RUNNABLE; break;
    default: /* GoStatus, GoStatusStack */
        if (xa[0] >= GS_COUNT || a[2] >= GO_STATUS_COUNT)
            return -1;
        uid = a[0], old = (int)xa[0], new_ = GO_STATUS_STATE[a[2]];
        has_tstack = c == EV_GO_STATUS_STACK && a[3] != 0, tstack = a[3];
        break;
    }
    if (proc)
        TB_LIT_RAW(o, " ProcID=");
    else
        TB_LIT_RAW(o, " GoID=");
    if (signed_id)
        tb_i64_raw(o, sid);
    else
        tb_u64_raw(o, uid);
    const char *on = proc ? PS_NAMES[old] : GS_NAMES[old], *nn = proc ? PS_NAMES[new_] : GS_NAMES[new_];
    o->p[o->n++] = ' ';
    tb_put_raw(o, on, strlen(on));
    TB_LIT_RAW(o, "->");
    tb_put_raw(o, nn, strlen(nn));
    TB_LIT_RAW(o, " Reason=");
    if (has_reason) {
        if ((*r = put_part(x, &x->quotes, reason)) != PART_OK)
            return 0;
    } else {
        TB_LIT_RAW(o, "\"\"");
    }
    /* The twin reads the transition's stack too (its frames come after the
     * line the text keeps): the same lookups, so the same errors. */
    if (has_tstack && tstack) {
        const char *p_;
        size_t n_;
        *r = part(&x->frames, tstack, &p_, &n_);
    }
    return 0;
}

/* The details of a range event (Go's Name= Scope= [Attributes=]). */
static int put_range(Text *x, int c, i64 p, i64 g, const u64 *a, int *r) {
    TextBuf *o = &x->o;
    if (c == EV_STW_BEGIN || c == EV_STW_END) {
        const char *q;
        size_t n;
        if ((*r = part(&x->quotes, a[0], &q, &n)) != PART_OK)
            return 0;
        if (n < 2 || tb_room(o, n + LINE_ROOM)) {
            *r = n < 2 ? PART_TWIN : PART_ERROR;
            return 0;
        }
        TB_LIT_RAW(o, " Name=\"stop-the-world (");
        tb_put_raw(o, q + 1, n - 2); /* quoting goes character by character: the reason's, inside */
        TB_LIT_RAW(o, ")\" Scope=Goroutine(");
        tb_i64_raw(o, g);
        o->p[o->n++] = ')';
    } else if (c == EV_GC_ACTIVE || c == EV_GC_BEGIN || c == EV_GC_END) {
        TB_LIT_RAW(o, " Name=\"GC concurrent mark phase\" Scope=None");
    } else if (c == EV_GC_SWEEP_ACTIVE || c == EV_GC_SWEEP_BEGIN || c == EV_GC_SWEEP_END) {
        TB_LIT_RAW(o, " Name=\"GC incremental sweep\" Scope=Proc(");
        if (c == EV_GC_SWEEP_ACTIVE)
            tb_u64_raw(o, a[0]);
        else
            tb_i64_raw(o, p);
        o->p[o->n++] = ')';
    } else {
        TB_LIT_RAW(o, " Name=\"GC mark assist\" Scope=Goroutine(");
        if (c == EV_GC_MARK_ASSIST_ACTIVE)
            tb_u64_raw(o, a[0]);
        else
            tb_i64_raw(o, g);
        o->p[o->n++] = ')';
    }
    if (c == EV_STW_END || c == EV_GC_END || c == EV_GC_SWEEP_END || c == EV_GC_MARK_ASSIST_END) {
        TB_LIT_RAW(o, " Attributes=[");
        if (c == EV_GC_SWEEP_END) {
            TB_LIT_RAW(o, "\"bytes swept\"=");
            put_value(o, a[0]);
            TB_LIT_RAW(o, " \"bytes reclaimed\"=");
            put_value(o, a[1]);
        }
        o->p[o->n++] = ']';
    }
    return 0;
}

/* One event's line, or -1 (no exception) when the twin must make it, or
 * -2 with an exception set. */
static int put_line(Text *x, int c, i64 t, i64 m, i64 p, i64 g, const u64 *a, const u64 *xa) {
    TextBuf *o = &x->o;
    int r = PART_OK;
    if (tb_room(o, LINE_ROOM + x->kcol_n[c]))
        return -2;
    if (x->provisional)
        o->p[o->n++] = '~';
    if (put_clock(x, t))
        return -1;
    o->p[o->n++] = ' ';
    tb_put_raw(o, x->kcol[c], x->kcol_n[c]);
    o->p[o->n++] = ' ';
    put_ctx(o, p, m, g);
    /* the details, each beginning with the space that parts them from the context */
    size_t details = o->n;
    switch (c) {
    case EV_PROC_START: case EV_PROC_STOP: case EV_PROC_STEAL: case EV_PROC_STATUS:
    case EV_GO_CREATE: case EV_GO_CREATE_SYSCALL: case EV_GO_CREATE_BLOCKED: case EV_GO_START:
    case EV_GO_DESTROY: case EV_GO_DESTROY_SYSCALL: case EV_GO_STOP: case EV_GO_BLOCK: case EV_GO_UNBLOCK:
    case EV_GO_SWITCH: case EV_GO_SWITCH_DESTROY: case EV_GO_SYSCALL_BEGIN: case EV_GO_SYSCALL_END:
    case EV_GO_SYSCALL_END_BLOCKED: case EV_GO_STATUS: case EV_GO_STATUS_STACK:
        if (put_transition(x, c, p, g, a, xa, &r))
            return -1;
        break;
    case EV_STW_BEGIN: case EV_STW_END: case EV_GC_ACTIVE: case EV_GC_BEGIN: case EV_GC_END:
    case EV_GC_SWEEP_ACTIVE: case EV_GC_SWEEP_BEGIN: case EV_GC_SWEEP_END: case EV_GC_MARK_ASSIST_ACTIVE:
    case EV_GC_MARK_ASSIST_BEGIN: case EV_GC_MARK_ASSIST_END:
        put_range(x, c, p, g, a, &r);
        break;
    case EV_PROCS_CHANGE: TB_LIT_RAW(o, " Name=\"/sched/gomaxprocs:threads\" Value="); put_value(o, a[0]); break;
    case EV_HEAP_ALLOC: TB_LIT_RAW(o, " Name=\"/memory/classes/heap/objects:bytes\" Value="); put_value(o, a[0]); break;
    case EV_HEAP_GOAL: TB_LIT_RAW(o, " Name=\"/gc/heap/goal:bytes\" Value="); put_value(o, a[0]); break;
    case EV_CPU_SAMPLE: break;
    case EV_GO_LABEL:
        TB_LIT_RAW(o, " Label=");
        if ((r = put_part(x, &x->quotes, a[0])) != PART_OK)
            break;
        TB_LIT_RAW(o, " Resource=Goroutine(");
        tb_i64_raw(o, g);
        o->p[o->n++] = ')';
        break;
    case EV_USER_TASK_BEGIN:
        TB_LIT_RAW(o, " ID=");
        tb_u64_raw(o, a[0]);
        TB_LIT_RAW(o, " Parent=");
        tb_u64_raw(o, a[1]);
        TB_LIT_RAW(o, " Type=");
        r = put_part(x, &x->quotes, a[2]);
        break;
    case EV_USER_TASK_END:
        TB_LIT_RAW(o, " ID=");
        tb_u64_raw(o, a[0]);
        TB_LIT_RAW(o, " Parent=");
        tb_u64_raw(o, xa[0]);
        TB_LIT_RAW(o, " Type=");
        r = put_part(x, &x->xquotes, xa[1]);
        break;
    case EV_USER_REGION_BEGIN: case EV_USER_REGION_END:
        TB_LIT_RAW(o, " Task=");
        tb_u64_raw(o, a[0]);
        TB_LIT_RAW(o, " Type=");
        r = put_part(x, &x->quotes, a[1]);
        break;
    case EV_USER_LOG:
        TB_LIT_RAW(o, " Task=");
        tb_u64_raw(o, a[0]);
        TB_LIT_RAW(o, " Category=");
        if ((r = put_part(x, &x->quotes, a[1])) != PART_OK)
            break;
        TB_LIT_RAW(o, " Message=");
        r = put_part(x, &x->quotes, a[2]);
        break;
    default: /* Sync, experimental events, codes of no kind: rare */
        return -1;
    }
    if (r != PART_OK)
        return r == PART_TWIN ? -1 : -2;
    if (o->n == details) /* none: the separator alone */
        o->p[o->n++] = ' ';
    int si = T_STACK[c];
    u64 stack = si < NARGS ? a[si] : 0; /* 255: none */
    if (stack) {
        r = put_part(x, &x->frames, stack);
        if (r != PART_OK)
            return r == PART_TWIN ? -1 : -2;
    }
    if (x->provisional && stack) {
        TB_LIT_RAW(o, "  stack ");
        tb_u64_raw(o, stack);
    }
    o->p[o->n++] = '\n';
    return 0;
}

PyObject *text_lines(PyObject *self, PyObject *args) {
    Py_buffer cb, tb, mb, pb, gb, ab, xb;
    long long t0;
    int provisional;
    PyObject *wall_obj, *kcols, *quotes, *frames, *xquotes, *miss, *other;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*LOpO!O!O!O!OO", &cb, &tb, &mb, &pb, &gb, &ab, &xb, &t0, &wall_obj,
                          &provisional, &PyTuple_Type, &kcols, &PyDict_Type, &quotes, &PyDict_Type, &frames,
                          &PyDict_Type, &xquotes, &miss, &other))
        return NULL;
    PyObject *result = NULL;
    Text x = {0};
    EventView v;
    if (event_view(&v, &cb, &tb, &mb, &pb, &gb, &ab, &xb))
        goto done;
    if (PyTuple_GET_SIZE(kcols) != 256) {
        PyErr_SetString(PyExc_ValueError, "kind_columns must have 256 entries");
        goto done;
    }
    for (int c = 0; c < 256; c++) {
        PyObject *k = PyTuple_GET_ITEM(kcols, c);
        if (!PyBytes_Check(k)) {
            PyErr_SetString(PyExc_TypeError, "kind_columns must hold bytes");
            goto done;
        }
        x.kcol[c] = PyBytes_AS_STRING(k);
        x.kcol_n[c] = (size_t)PyBytes_GET_SIZE(k);
    }
    x.has_wall = wall_obj != Py_None;
    x.wall_base = x.has_wall ? PyLong_AsLongLong(wall_obj) : 0;
    if (x.has_wall && x.wall_base == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            goto done;
        PyErr_Clear();
        x.wall_twin = 1;
    }
    x.t0 = (i64)t0;
    x.provisional = provisional;
    x.hms_sec = -1;
    if (part_cache_open(&x.quotes, quotes, miss, "quote") ||
        part_cache_open(&x.frames, frames, miss, "frame") ||
        part_cache_open(&x.xquotes, xquotes, miss, "xquote") || tb_init(&x.o, v.n * 128 + LINE_ROOM))
        goto done;
    /* The lines are written without the GIL (textbuf.h's Gil). */
    Gil gil = {NULL, 1};
    x.o.gil = x.quotes.gil = x.frames.gil = x.xquotes.gil = &gil;
    for (size_t i = 0; i < v.n; i++) {
        gil_free(&gil); /* a part that raised kept it for the twin's line */
        size_t start = x.o.n;
        int r = put_line(&x, v.code[i], v.time[i], v.m[i], v.p[i], v.g[i], v.args + i * NARGS, v.extra + i * NEXTRA);
        if (r == -2)
            goto done;
        if (r == -1) {
            x.o.n = start;
            if (tb_put_other_line(&x.o, other, i))
                goto done;
        }
    }
    gil_hold(&gil);
    result = tb_finish(&x.o);
done:
    gil_hold(x.o.gil);
    Py_XDECREF(x.o.obj);
    part_cache_close(&x.quotes), part_cache_close(&x.frames), part_cache_close(&x.xquotes);
    PyBuffer_Release(&cb), PyBuffer_Release(&tb), PyBuffer_Release(&mb), PyBuffer_Release(&pb);
    PyBuffer_Release(&gb), PyBuffer_Release(&ab), PyBuffer_Release(&xb);
    return result;
}
