/* The text dumps, compiled: a whole batch's lines of `go tool trace
 * -d=parsed` (from an EventBatch's columns) or of `-d=wire` (from a batch
 * payload's record columns) written into one bytes object. The twin and
 * reference is _cli/render/dump.py. What is rare or needs Python's Unicode
 * tables comes from Python: a generation's quoted strings and stack texts
 * (made once per id and cached: partcache.h), the lines of rare event kinds, and the
 * quoting of non-ASCII data. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "render/dump.h"
#include "decode/engine.h"
#include "render/jsonl.h"
#include "render/partcache.h"
#include "render/textbuf.h"

/* "\n<title>=\n" and the frames of a stack (none for stack 0) */
static int put_stack(TextBuf *b, PartCache *stacks, const char *title, size_t tn, u64 id) {
    if (tb_put(b, title, tn))
        return -1;
    return id ? part_put(b, stacks, id) : 0;
}
#define STACK_BLOCK(b, ps, lit, id) put_stack(b, ps, lit, sizeof(lit) - 1, id)

/* ---- -d=parsed ---- */

typedef struct {
    int proc;   /* a proc's transition, else a goroutine's */
    int signed_id;
    i64 sid;    /* the resource's id, when signed_id (the event's own P or G) */
    u64 uid;    /* else */
    int old, new_;
    u64 reason; /* string id, 0: none */
    int has_tstack;
    u64 tstack;
} Transition;

/* The transition an event of code c makes, as _trace/model/events.py's
 * transition_parts: 1, 0 when c is no transition, -1 when a state is out
 * of range (Python then makes the line, and says what is wrong). */
static int transition(int c, const u64 *a, const u64 *x, i64 p, i64 g, Transition *t) {
    *t = (Transition){0};
    switch (c) {
    case EV_PROC_START: t->proc = 1, t->uid = a[0], t->old = PS_IDLE, t->new_ = PS_RUNNING; break;
    case EV_PROC_STOP: t->proc = 1, t->signed_id = 1, t->sid = p, t->old = PS_RUNNING, t->new_ = PS_IDLE; break;
    case EV_PROC_STEAL:
        t->proc = 1, t->uid = a[0], t->old = x[0] == PROC_SYSCALL_ABANDONED ? PS_IDLE : PS_RUNNING, t->new_ = PS_IDLE;
        break;
    case EV_PROC_STATUS:
        if (x[0] >= PS_COUNT || a[1] >= PROC_STATUS_COUNT)
            return -1;
        t->proc = 1, t->uid = a[0], t->old = (int)x[0], t->new_ = PROC_STATUS_STATE[a[1]];
        break;
    case EV_GO_CREATE: case EV_GO_CREATE_BLOCKED:
        t->uid = a[0], t->old = GS_NOT_EXIST, t->new_ = c == EV_GO_CREATE_BLOCKED ? GS_WAITING : GS_RUNNABLE;
        t->has_tstack = 1, t->tstack = a[1];
        break;
    case EV_GO_CREATE_SYSCALL: t->uid = a[0], t->old = GS_NOT_EXIST, t->new_ = GS_SYSCALL; break;
    case EV_GO_START: t->uid = a[0], t->old = GS_RUNNABLE, t->new_ = GS_RUNNING; break;
    case EV_GO_DESTROY: t->signed_id = 1, t->sid = g, t->old = GS_RUNNING, t->new_ = GS_NOT_EXIST; break;
    case EV_GO_DESTROY_SYSCALL: t->signed_id = 1, t->sid = g, t->old = GS_SYSCALL, t->new_ = GS_NOT_EXIST; break;
    case EV_GO_STOP: case EV_GO_BLOCK:
        t->signed_id = 1, t->sid = g, t->old = GS_RUNNING, t->new_ = c == EV_GO_STOP ? GS_RUNNABLE : GS_WAITING;
        t->reason = a[0], t->has_tstack = a[1] != 0, t->tstack = a[1];
        break;
    case EV_GO_UNBLOCK: case EV_GO_SWITCH: case EV_GO_SWITCH_DESTROY:
        t->uid = a[0], t->old = GS_WAITING, t->new_ = GS_RUNNABLE;
        break;
    case EV_GO_SYSCALL_BEGIN:
        t->signed_id = 1, t->sid = g, t->old = GS_RUNNING, t->new_ = GS_SYSCALL, t->has_tstack = a[1] != 0;
        t->tstack = a[1];
        break;
    case EV_GO_SYSCALL_END: t->signed_id = 1, t->sid = g, t->old = GS_SYSCALL, t->new_ = GS_RUNNING; break;
    case EV_GO_SYSCALL_END_BLOCKED:
        t->signed_id = 1, t->sid = g, t->old = GS_SYSCALL, t->new_ = GS_RUNNABLE;
        break;
    case EV_GO_STATUS: case EV_GO_STATUS_STACK:
        if (x[0] >= GS_COUNT || a[2] >= GO_STATUS_COUNT)
            return -1;
        t->uid = a[0], t->old = (int)x[0], t->new_ = GO_STATUS_STATE[a[2]];
        if (c == EV_GO_STATUS_STACK)
            t->has_tstack = a[3] != 0, t->tstack = a[3];
        break;
    default: return 0;
    }
    return 1;
}

static int put_transition(TextBuf *b, const Transition *t, PartCache *strings, PartCache *stacks) {
    const char *const *names = t->proc ? PS_NAMES : GS_NAMES;
    if (t->proc ? TB_LIT(b, " ProcID=") : TB_LIT(b, " GoID="))
        return -1;
    if (t->signed_id ? tb_i64(b, t->sid) : tb_u64(b, t->uid))
        return -1;
    const char *o = names[t->old], *n = names[t->new_];
    if (tb_put(b, " ", 1) || tb_put(b, o, strlen(o)) || TB_LIT(b, "->") || tb_put(b, n, strlen(n)) ||
        TB_LIT(b, " Reason="))
        return -1;
    if (t->reason ? part_put(b, strings, t->reason) : TB_LIT(b, "\"\""))
        return -1;
    return t->has_tstack ? STACK_BLOCK(b, stacks, "\nTransitionStack=\n", t->tstack) : 0;
}

/* What follows the head for the kinds written here: 1 written, 0 for a
 * kind Python writes, -1 on failure. */
static int put_details(TextBuf *b, int c, const u64 *a, const u64 *x, i64 p, i64 g, PartCache *strings,
                       PartCache *stacks, PartCache *xstrings) {
    Transition t;
    int r = transition(c, a, x, p, g, &t);
    if (r)
        return r < 0 ? 0 : put_transition(b, &t, strings, stacks) ? -1 : 1;
    const char *metric = c == EV_PROCS_CHANGE ? "/sched/gomaxprocs:threads"
                         : c == EV_HEAP_ALLOC ? "/memory/classes/heap/objects:bytes"
                         : c == EV_HEAP_GOAL  ? "/gc/heap/goal:bytes"
                                              : NULL;
    if (metric)
        return TB_LIT(b, " Name=\"") || tb_put(b, metric, strlen(metric)) || TB_LIT(b, "\" Value=Value{Uint64(") ||
                       tb_u64(b, a[0]) || TB_LIT(b, ")}")
                   ? -1
                   : 1;
    switch (c) {
    case EV_GC_ACTIVE: case EV_GC_BEGIN:
        return TB_LIT(b, " Name=\"GC concurrent mark phase\" Scope=None") ? -1 : 1;
    case EV_GC_END:
        return TB_LIT(b, " Name=\"GC concurrent mark phase\" Scope=None Attributes=[]") ? -1 : 1;
    case EV_GC_SWEEP_ACTIVE:
        return TB_LIT(b, " Name=\"GC incremental sweep\" Scope=Proc(") || tb_u64(b, a[0]) || TB_LIT(b, ")") ? -1 : 1;
    case EV_GC_SWEEP_BEGIN:
        return TB_LIT(b, " Name=\"GC incremental sweep\" Scope=Proc(") || tb_i64(b, p) || TB_LIT(b, ")") ? -1 : 1;
    case EV_GC_SWEEP_END:
        return TB_LIT(b, " Name=\"GC incremental sweep\" Scope=Proc(") || tb_i64(b, p) ||
                       TB_LIT(b, ") Attributes=[\"bytes swept\"=Value{Uint64(") || tb_u64(b, a[0]) ||
                       TB_LIT(b, ")} \"bytes reclaimed\"=Value{Uint64(") || tb_u64(b, a[1]) || TB_LIT(b, ")}]")
                   ? -1
                   : 1;
    case EV_GC_MARK_ASSIST_ACTIVE:
        return TB_LIT(b, " Name=\"GC mark assist\" Scope=Goroutine(") || tb_u64(b, a[0]) || TB_LIT(b, ")") ? -1 : 1;
    case EV_GC_MARK_ASSIST_BEGIN:
        return TB_LIT(b, " Name=\"GC mark assist\" Scope=Goroutine(") || tb_i64(b, g) || TB_LIT(b, ")") ? -1 : 1;
    case EV_GC_MARK_ASSIST_END:
        return TB_LIT(b, " Name=\"GC mark assist\" Scope=Goroutine(") || tb_i64(b, g) ||
                       TB_LIT(b, ") Attributes=[]")
                   ? -1
                   : 1;
    case EV_GO_LABEL:
        return TB_LIT(b, " Label=") || part_put(b, strings, a[0]) || TB_LIT(b, " Resource=Goroutine(") ||
                       tb_i64(b, g) || TB_LIT(b, ")")
                   ? -1
                   : 1;
    case EV_USER_TASK_BEGIN:
        return TB_LIT(b, " ID=") || tb_u64(b, a[0]) || TB_LIT(b, " Parent=") || tb_u64(b, a[1]) ||
                       TB_LIT(b, " Type=") || part_put(b, strings, a[2])
                   ? -1
                   : 1;
    case EV_USER_TASK_END: /* its parent and type are what the ordering learned at its beginning */
        return TB_LIT(b, " ID=") || tb_u64(b, a[0]) || TB_LIT(b, " Parent=") || tb_u64(b, x[0]) ||
                       TB_LIT(b, " Type=") || part_put(b, xstrings, x[1])
                   ? -1
                   : 1;
    case EV_USER_REGION_BEGIN: case EV_USER_REGION_END:
        return TB_LIT(b, " Task=") || tb_u64(b, a[0]) || TB_LIT(b, " Type=") || part_put(b, strings, a[1]) ? -1 : 1;
    case EV_USER_LOG:
        return TB_LIT(b, " Task=") || tb_u64(b, a[0]) || TB_LIT(b, " Category=") || part_put(b, strings, a[1]) ||
                       TB_LIT(b, " Message=") || part_put(b, strings, a[2])
                   ? -1
                   : 1;
    case EV_CPU_SAMPLE: return 1; /* a stack sample: the head and its stack */
    default: return 0;
    }
}

static PyObject *parsed_lines(const EventView *v, PyObject *heads, PartCache *strings, PartCache *stacks,
                              PartCache *xstrings, PyObject *other) {
    TextBuf b;
    if (tb_init(&b, v->n * 400 + 64)) /* most lines carry a stack: a few hundred bytes */
        return NULL;
    for (size_t i = 0; i < v->n; i++) {
        int c = v->code[i];
        const u64 *a = v->args + i * NARGS, *x = v->extra + i * NEXTRA;
        PyObject *head = PyTuple_GET_ITEM(heads, c);
        size_t start = b.n;
        int r = 0;
        if (head != Py_None) {
            if (TB_LIT(&b, "M=") || tb_i64(&b, v->m[i]) || TB_LIT(&b, " P=") || tb_i64(&b, v->p[i]) ||
                TB_LIT(&b, " G=") || tb_i64(&b, v->g[i]) ||
                tb_put(&b, PyBytes_AS_STRING(head), (size_t)PyBytes_GET_SIZE(head)) || tb_i64(&b, v->time[i]))
                goto fail;
            r = put_details(&b, c, a, x, v->p[i], v->g[i], strings, stacks, xstrings);
            if (r < 0)
                goto fail;
        }
        if (!r) {
            b.n = start; /* Python writes the whole line (its parsed_text) */
            if (tb_put_other_line(&b, other, i))
                goto fail;
            continue;
        }
        int si = T_STACK[c];
        if ((si != 255 && a[si] && STACK_BLOCK(&b, stacks, "\nStack=\n", a[si])) || tb_put(&b, "\n", 1))
            goto fail;
    }
    return tb_finish(&b);
fail:
    Py_CLEAR(b.obj);
    if (!PyErr_Occurred())
        PyErr_NoMemory();
    return NULL;
}

PyObject *dump_parsed_py(PyObject *self, PyObject *args) {
    Py_buffer cb, tb, mb, pb, gb, ab, xb;
    PyObject *heads, *strings, *stacks, *xstrings, *miss, *other;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*O!O!O!O!OO", &cb, &tb, &mb, &pb, &gb, &ab, &xb, &PyTuple_Type, &heads,
                          &PyDict_Type, &strings, &PyDict_Type, &stacks, &PyDict_Type, &xstrings, &miss, &other))
        return NULL;
    PyObject *result = NULL;
    PartCache sp = {0}, kp = {0}, xp = {0};
    EventView v;
    if (event_view(&v, &cb, &tb, &mb, &pb, &gb, &ab, &xb))
        goto done;
    if (PyTuple_GET_SIZE(heads) != 256) {
        PyErr_SetString(PyExc_ValueError, "heads: one per code (256)");
        goto done;
    }
    for (Py_ssize_t k = 0; k < 256; k++) {
        PyObject *h = PyTuple_GET_ITEM(heads, k);
        if (h != Py_None && !PyBytes_Check(h)) {
            PyErr_SetString(PyExc_TypeError, "heads: bytes or None");
            goto done;
        }
    }
    if (part_cache_open(&sp, strings, miss, "string") || part_cache_open(&kp, stacks, miss, "stack") ||
        part_cache_open(&xp, xstrings, miss, "extra"))
        goto done;
    result = parsed_lines(&v, heads, &sp, &kp, &xp, other);
done:
    part_cache_close(&sp), part_cache_close(&kp), part_cache_close(&xp);
    PyBuffer_Release(&cb), PyBuffer_Release(&tb), PyBuffer_Release(&mb), PyBuffer_Release(&pb);
    PyBuffer_Release(&gb), PyBuffer_Release(&ab), PyBuffer_Release(&xb);
    return result;
}

/* ---- -d=wire ---- */

/* Go's strconv.Quote of ASCII data (Python's quote(data) for any other:
 * Unicode's printable characters need its tables). */
static int put_quoted(TextBuf *b, const u8 *s, size_t n, PyObject *quote) {
    for (size_t k = 0; k < n; k++) {
        if (s[k] < 0x80)
            continue;
        PyObject *q = PyObject_CallFunction(quote, "y#", (const char *)s, (Py_ssize_t)n);
        if (!q)
            return -1;
        Py_ssize_t len;
        const char *t = PyUnicode_Check(q) ? PyUnicode_AsUTF8AndSize(q, &len) : NULL;
        if (!t && !PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "quote() must return str");
        int r = t ? tb_put(b, t, (size_t)len) : -1;
        Py_DECREF(q);
        return r;
    }
    static const char hex[] = "0123456789abcdef";
    if (tb_room(b, 4 * n + 2))
        return -1;
    char *o = b->p + b->n;
    *o++ = '"';
    for (size_t k = 0; k < n; k++) {
        u8 ch = s[k];
        char e = 0;
        switch (ch) {
        case '\a': e = 'a'; break;
        case '\b': e = 'b'; break;
        case '\f': e = 'f'; break;
        case '\n': e = 'n'; break;
        case '\r': e = 'r'; break;
        case '\t': e = 't'; break;
        case '\v': e = 'v'; break;
        case '"': e = '"'; break;
        case '\\': e = '\\'; break;
        }
        if (e) {
            *o++ = '\\', *o++ = e;
        } else if (ch >= 0x20 && ch < 0x7f) {
            *o++ = (char)ch;
        } else {
            *o++ = '\\', *o++ = 'x', *o++ = hex[ch >> 4], *o++ = hex[ch & 15];
        }
    }
    *o++ = '"';
    b->n = (size_t)(o - b->p);
    return 0;
}

static int bad_columns(void) {
    PyErr_SetString(PyExc_ValueError, "record columns do not fit the table");
    return -1;
}

/* Record i of the columns: its line (and a Stack's frames, and data). */
static int wire_record(TextBuf *b, const Py_buffer *payload, const u8 *codes, const u32 *starts, const u64 *vals,
                       size_t nv, size_t i, const u8 *table, PyObject *names, PyObject *quote) {
    int c = codes[i], row = table[c];
    PyObject *parts = PyTuple_GET_ITEM(names, c);
    size_t s0 = starts[i], s1 = starts[i + 1];
    int nargs = row & 0x1f, has_data = (row & 0x40) != 0;
    if (!row || !PyTuple_Check(parts) || PyTuple_GET_SIZE(parts) != nargs + 1 || s0 > s1 || s1 > nv ||
        s1 - s0 < (size_t)(nargs + 2 * has_data))
        return bad_columns();
    for (int k = 0; k <= nargs; k++) {
        PyObject *part = PyTuple_GET_ITEM(parts, k);
        if (!PyBytes_Check(part))
            return bad_columns();
        if (tb_put(b, PyBytes_AS_STRING(part), (size_t)PyBytes_GET_SIZE(part)) || (k && tb_u64(b, vals[s0 + k - 1])))
            return -1;
    }
    size_t end = s1 - 2 * (size_t)has_data;
    if (row & 0x20) {
        if ((end - s0 - (size_t)nargs) % 4)
            return bad_columns();
        for (size_t f = s0 + (size_t)nargs; f < end; f += 4)
            if (TB_LIT(b, "\n\tpc=") || tb_u64(b, vals[f]) || TB_LIT(b, " func=") || tb_u64(b, vals[f + 1]) ||
                TB_LIT(b, " file=") || tb_u64(b, vals[f + 2]) || TB_LIT(b, " line=") || tb_u64(b, vals[f + 3]))
                return -1;
    }
    if (has_data && vals[end + 1]) {
        u64 at = vals[end], n = vals[end + 1];
        if (at > (u64)payload->len || n > (u64)payload->len - at)
            return bad_columns();
        if (TB_LIT(b, "\n\tdata=") || put_quoted(b, (const u8 *)payload->buf + at, (size_t)n, quote))
            return -1;
    }
    return tb_put(b, "\n", 1);
}

PyObject *dump_wire_py(PyObject *self, PyObject *args) {
    Py_buffer pb, cb, sb, vb, tbl;
    PyObject *names, *quote;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*O!O", &pb, &cb, &sb, &vb, &tbl, &PyTuple_Type, &names, &quote))
        return NULL;
    PyObject *result = NULL;
    size_t n = (size_t)cb.len, nv = (size_t)vb.len / 8;
    if ((size_t)sb.len != (n + 1) * 4 || (size_t)vb.len % 8 || tbl.len != 256 || PyTuple_GET_SIZE(names) != 256) {
        PyErr_SetString(PyExc_ValueError, "columns of different lengths");
        goto done;
    }
    TextBuf b;
    if (tb_init(&b, n * 48 + 64))
        goto done;
    for (size_t i = 0; i < n; i++)
        if (wire_record(&b, &pb, cb.buf, sb.buf, vb.buf, nv, i, tbl.buf, names, quote)) {
            Py_CLEAR(b.obj);
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            goto done;
        }
    result = tb_finish(&b);
done:
    PyBuffer_Release(&pb), PyBuffer_Release(&cb), PyBuffer_Release(&sb), PyBuffer_Release(&vb);
    PyBuffer_Release(&tbl);
    return result;
}
