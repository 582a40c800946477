/* SpanCore: the compiled twin of _trace/spans/twin.py. The rules are written out
 * there; this file follows it step for step, so that both give the same
 * spans in the same order. Open spans live in u64-keyed maps of pointers
 * (goroutine -> state span, mark assist, region stack; task -> task span;
 * P -> its running span);
 * spans that end are appended to growable columns, handed over as bytes. */

#include "spans/spans.h"
#include "common/pyglue.h"

#include "common/containers.h"
#include "common/generated.h"

/* GoState values; span kinds (spans.model.SpanKind); resource kinds; flags. */
enum { NOT_EXIST = 1, RUNNABLE, RUNNING, WAITING, SYSCALL };
static const u8 STATE_KIND[] = {0, 0, K_RUNNABLE, K_RUNNING, K_BLOCKED, K_SYSCALL};
static const u8 STATUS_STATE[] = {0, RUNNABLE, RUNNING, SYSCALL, WAITING};
/* Wire ProcStatus -> 1 it runs (running, in a system call), 0 idle (idle, abandoned in a system call). */
static const u8 PROC_STATUS_RUNS[] = {0, 1, 0, 1, 0};

/* Per transition code: whose (0 the event's goroutine, 1 its first
 * argument), the new state (0: from the status argument), the reason
 * string argument and the event's own stack argument (-1: none). */
typedef struct {
    signed char is, whose, new_state, reason, stack;
} Transition;
static Transition TRANSITIONS[256];

static void init_transitions(void) {
    static const signed char rows[][5] = {
        {EV_GO_CREATE, 1, RUNNABLE, -1, 2},  {EV_GO_CREATE_BLOCKED, 1, WAITING, -1, 2},
        {EV_GO_CREATE_SYSCALL, 1, SYSCALL, -1, -1}, {EV_GO_START, 1, RUNNING, -1, -1},
        {EV_GO_DESTROY, 0, NOT_EXIST, -1, -1}, {EV_GO_DESTROY_SYSCALL, 0, NOT_EXIST, -1, -1},
        {EV_GO_STOP, 0, RUNNABLE, 0, 1},     {EV_GO_BLOCK, 0, WAITING, 0, 1},
        {EV_GO_UNBLOCK, 1, RUNNABLE, -1, 2}, {EV_GO_SWITCH, 1, RUNNABLE, -1, -1},
        {EV_GO_SWITCH_DESTROY, 1, RUNNABLE, -1, -1}, {EV_GO_SYSCALL_BEGIN, 0, SYSCALL, -1, 1},
        {EV_GO_SYSCALL_END, 0, RUNNING, -1, -1}, {EV_GO_SYSCALL_END_BLOCKED, 0, RUNNABLE, -1, -1},
        {EV_GO_STATUS, 1, 0, -1, -1},        {EV_GO_STATUS_STACK, 1, 0, -1, 3},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        Transition *t = &TRANSITIONS[(u8)rows[i][0]];
        t->is = 1;
        t->whose = rows[i][1];
        t->new_state = rows[i][2];
        t->reason = rows[i][3];
        t->stack = rows[i][4];
    }
}

#include "spans/spans_out.h"

typedef struct {
    Open *v;
    size_t len, cap;
} Regions;

#define NAME_CACHE 4096 /* string ids below this have their name id cached per tables */

typedef struct {
    PyObject_HEAD Map states, assists, regions, tasks, procs; /* of Open* (regions: Regions*) */
    Open gc, stw;
    int has_gc, has_stw;
    u64 seq;
    i64 origin, last;
    long token;
    u32 cache[NAME_CACHE]; /* string id -> name id + 1, for the tables of token */
    Out out;
} SpanCoreObject;

/* ---- names: ids into the builder's names list, interned through its dict ---- */

typedef struct {
    PyObject *strings, *extra_strings, *intern, *names;
} NameTables;

static i64 intern_bytes(PyObject *s, const NameTables *nt) {
    PyObject *v = PyDict_GetItemWithError(nt->intern, s);
    if (v)
        return PyLong_AsLongLong(v);
    if (PyErr_Occurred())
        return -1;
    Py_ssize_t id = PyList_GET_SIZE(nt->names);
    PyObject *idv = PyLong_FromSsize_t(id);
    int bad = !idv || PyDict_SetItem(nt->intern, s, idv) < 0 || PyList_Append(nt->names, s) < 0;
    Py_XDECREF(idv);
    return bad ? -1 : id;
}

/* The name id of string sid of the batch's tables (0 if it has none): -1 on error. */
static i64 name_of(SpanCoreObject *self, u64 sid, const NameTables *nt) {
    if (sid < NAME_CACHE && self->cache[sid])
        return self->cache[sid] - 1;
    PyObject *k = PyLong_FromUnsignedLongLong(sid);
    if (!k)
        return -1;
    PyObject *s = PyDict_GetItemWithError(nt->strings, k);
    Py_DECREF(k);
    if (!s)
        return PyErr_Occurred() ? -1 : 0;
    i64 id = intern_bytes(s, nt);
    if (id >= 0 && sid < NAME_CACHE)
        self->cache[sid] = (u32)id + 1;
    return id;
}

static i64 extra_name_of(u64 idx, const NameTables *nt) {
    if (idx >= (u64)PyList_GET_SIZE(nt->extra_strings))
        return 0;
    return intern_bytes(PyList_GET_ITEM(nt->extra_strings, idx), nt);
}

/* ---- open spans ---- */

static void free_regions(void *p) {
    Regions *r = p;
    free(r->v);
    free(r);
}

static void core_clear(SpanCoreObject *self) {
    map_each_ptr(&self->states, free), map_free(&self->states);
    map_each_ptr(&self->assists, free), map_free(&self->assists);
    map_each_ptr(&self->tasks, free), map_free(&self->tasks);
    map_each_ptr(&self->procs, free), map_free(&self->procs);
    map_each_ptr(&self->regions, free_regions), map_free(&self->regions);
    self->has_gc = self->has_stw = 0;
    self->origin = -1;
}

static Open opened(SpanCoreObject *self, u8 kind, u8 rkind, i64 rid, i64 t, u64 stack, u8 flags, u64 task) {
    Open o = {kind, rkind, flags, 0, rid, t, -1, stack, task, ++self->seq, (u32)self->token, 0, 0, 0};
    Open *tk = map_get_ptr(&self->tasks, task);
    o.tname = tk ? tk->name : 0;
    return o;
}

static Open *new_open(Map *m, u64 key, Open o) {
    Open *p = malloc(sizeof *p);
    if (!p)
        return NULL;
    *p = o;
    free(map_del_ptr(m, key));
    if (map_put_ptr(m, key, p) < 0) {
        free(p);
        return NULL;
    }
    return p;
}

/* Every open span (pointers into the core), in no order; NULL if out of memory. */
typedef struct {
    const Open **v;
    size_t n;
} OpenList;

/* Appends m's open spans to v (only counts them when v is NULL). */
static void list_map(const Map *m, int regions, const Open **v, size_t *n) {
    for (size_t i = 0; i <= m->cap; i++) {
        void *p;
        if (i < m->cap && m->s[i].key)
            p = (void *)(uintptr_t)m->s[i].val;
        else if (i == m->cap && m->has_zero)
            p = (void *)(uintptr_t)m->zero_val;
        else
            continue;
        if (!regions) {
            if (v)
                v[*n] = p;
            (*n)++;
            continue;
        }
        Regions *r = p;
        for (size_t k = 0; k < r->len; k++) {
            if (v)
                v[*n] = &r->v[k];
            (*n)++;
        }
    }
}

static int all_open(SpanCoreObject *self, OpenList *l) {
    size_t total = 2;
    list_map(&self->states, 0, NULL, &total);
    list_map(&self->assists, 0, NULL, &total);
    list_map(&self->tasks, 0, NULL, &total);
    list_map(&self->procs, 0, NULL, &total);
    list_map(&self->regions, 1, NULL, &total);
    l->v = malloc(total * sizeof *l->v);
    l->n = 0;
    if (!l->v)
        return -1;
    list_map(&self->states, 0, l->v, &l->n);
    list_map(&self->assists, 0, l->v, &l->n);
    list_map(&self->tasks, 0, l->v, &l->n);
    list_map(&self->procs, 0, l->v, &l->n);
    list_map(&self->regions, 1, l->v, &l->n);
    if (self->has_gc)
        l->v[l->n++] = &self->gc;
    if (self->has_stw)
        l->v[l->n++] = &self->stw;
    return 0;
}

static int by_seq(const void *a, const void *b) {
    u64 x = (*(const Open *const *)a)->seq, y = (*(const Open *const *)b)->seq;
    return x < y ? -1 : x > y;
}

/* ---- one batch ---- */

typedef struct {
    size_t n;
    const u8 *code;
    const i64 *time, *p, *g;
    const u64 *args, *extra;
} Batch;

#define FAIL_IF(x)          \
    do {                    \
        if (x)              \
            return -1;      \
    } while (0)

static int on_transition(SpanCoreObject *self, const Batch *b, size_t i, const NameTables *nt) {
    const Transition *tr = &TRANSITIONS[b->code[i]];
    const u64 *a = &b->args[i * NARGS];
    i64 t = b->time[i], gid = tr->whose ? (i64)a[0] : b->g[i];
    int new_state = tr->new_state;
    if (!new_state) {
        if (!(a[2] > 0 && a[2] < sizeof STATUS_STATE))
            return 0;
        new_state = STATUS_STATE[a[2]];
    }
    u64 stack = tr->stack >= 0 ? a[tr->stack] : 0;
    Open *st = map_get_ptr(&self->states, (u64)gid);
    int known = st != NULL;
    if (st) {
        if (st->state == new_state)
            return 0;
        FAIL_IF(out_emit(&self->out, st, t, stack, (u32)self->token, 0) < 0);
        free(map_del_ptr(&self->states, (u64)gid));
    }
    if (new_state == NOT_EXIST) {
        /* Regions it left open end with it, as Go's goroutine analysis ends them. */
        Regions *r = map_del_ptr(&self->regions, (u64)gid);
        int bad = 0;
        for (size_t k = r ? r->len : 0; !bad && k-- > 0;)
            bad = out_emit(&self->out, &r->v[k], t, 0, (u32)self->token, CLIPPED_END) < 0;
        if (r)
            free_regions(r);
        return bad ? -1 : 0;
    }
    u8 code = b->code[i];
    u8 clipped = !known && (code == EV_GO_STATUS || code == EV_GO_STATUS_STACK) ? CLIPPED_START : 0;
    Regions *regs = map_get_ptr(&self->regions, (u64)gid);
    const Open *inner = regs && regs->len ? &regs->v[regs->len - 1] : NULL;
    Open o = opened(self, STATE_KIND[new_state], RES_GOROUTINE, gid, t, stack, clipped, inner ? inner->task : 0);
    if (inner)
        o.name = inner->name, o.tname = inner->tname;
    if (tr->reason >= 0) {
        i64 r = name_of(self, a[tr->reason], nt);
        FAIL_IF(r < 0);
        o.reason = (u32)r;
    }
    if (new_state == RUNNING)
        o.proc = b->p[i];
    o.state = (u8)new_state;
    FAIL_IF(!new_open(&self->states, (u64)gid, o));
    return 0;
}

static int on_proc(SpanCoreObject *self, const Batch *b, size_t i) {
    u8 code = b->code[i];
    const u64 *a = &b->args[i * NARGS];
    i64 t = b->time[i], pid = code == EV_PROC_STOP ? b->p[i] : (i64)a[0];
    int runs = code == EV_PROC_START;
    if (code == EV_PROC_STATUS) {
        if (!a[1] || a[1] >= sizeof PROC_STATUS_RUNS) /* ProcBad, or a status we do not know */
            return 0;
        runs = PROC_STATUS_RUNS[a[1]];
    }
    Open *o = map_get_ptr(&self->procs, (u64)pid);
    if (runs && !o) {
        Open n = opened(self, K_RUNNING, RES_PROC, pid, t, 0, code == EV_PROC_STATUS ? CLIPPED_START : 0, 0);
        n.proc = pid;
        FAIL_IF(!new_open(&self->procs, (u64)pid, n));
    } else if (!runs && o) {
        int bad = out_emit(&self->out, o, t, 0, (u32)self->token, 0) < 0;
        free(map_del_ptr(&self->procs, (u64)pid));
        FAIL_IF(bad);
    }
    return 0;
}

static int on_range(SpanCoreObject *self, const Batch *b, size_t i, const NameTables *nt) {
    u8 code = b->code[i];
    const u64 *a = &b->args[i * NARGS];
    i64 t = b->time[i], g = b->g[i];
    u32 tok = (u32)self->token;
    i64 id;
    Open o, *p;
    switch (code) {
    case EV_GC_ACTIVE:
        if (self->has_gc)
            break;
        /* fall through */
    case EV_GC_BEGIN: {
        int active = code == EV_GC_ACTIVE;
        self->gc = opened(self, K_GC, RES_NONE, 0, t, active ? 0 : a[1], active ? CLIPPED_START : 0, 0);
        self->has_gc = 1;
        break;
    }
    case EV_GC_END:
        if (self->has_gc) {
            FAIL_IF(out_emit(&self->out, &self->gc, t, 0, tok, 0) < 0);
            self->has_gc = 0;
        }
        break;
    case EV_STW_BEGIN:
        self->stw = opened(self, K_STW, RES_GOROUTINE, g, t, a[1], 0, 0);
        self->has_stw = 1;
        FAIL_IF((id = name_of(self, a[0], nt)) < 0);
        self->stw.reason = (u32)id;
        break;
    case EV_STW_END:
        if (self->has_stw) {
            FAIL_IF(out_emit(&self->out, &self->stw, t, 0, tok, 0) < 0);
            self->has_stw = 0;
        }
        break;
    case EV_GC_MARK_ASSIST_BEGIN:
    case EV_GC_MARK_ASSIST_ACTIVE: {
        int active = code == EV_GC_MARK_ASSIST_ACTIVE;
        i64 gid = active ? (i64)a[0] : g;
        if (active && map_find(&self->assists, (u64)gid))
            break;
        o = opened(self, K_MARK_ASSIST, RES_GOROUTINE, gid, t, active ? 0 : a[0], active ? CLIPPED_START : 0, 0);
        FAIL_IF(!new_open(&self->assists, (u64)gid, o));
        break;
    }
    case EV_GC_MARK_ASSIST_END:
        if ((p = map_del_ptr(&self->assists, (u64)g))) {
            int bad = out_emit(&self->out, p, t, 0, tok, 0) < 0;
            free(p);
            FAIL_IF(bad);
        }
        break;
    case EV_USER_REGION_BEGIN: {
        o = opened(self, K_REGION, RES_GOROUTINE, g, t, a[2], 0, a[0]);
        FAIL_IF((id = name_of(self, a[1], nt)) < 0);
        o.name = (u32)id;
        Regions *r = map_get_ptr(&self->regions, (u64)g);
        if (!r) {
            FAIL_IF(!(r = calloc(1, sizeof *r)));
            if (map_put_ptr(&self->regions, (u64)g, r) < 0) {
                free(r);
                return -1;
            }
        }
        FAIL_IF(grow((void **)&r->v, &r->cap, r->len + 1, sizeof *r->v) < 0);
        r->v[r->len++] = o;
        break;
    }
    case EV_USER_REGION_END: {
        Regions *r = map_get_ptr(&self->regions, (u64)g);
        if (r && r->len) {
            o = r->v[--r->len];
        } else { /* begun before the trace or a gap */
            o = opened(self, K_REGION, RES_GOROUTINE, g, self->origin, 0, CLIPPED_START, a[0]);
            FAIL_IF((id = name_of(self, a[1], nt)) < 0);
            o.name = (u32)id;
        }
        FAIL_IF(out_emit(&self->out, &o, t, a[2], tok, 0) < 0);
        break;
    }
    case EV_USER_TASK_BEGIN:
        o = opened(self, K_TASK, RES_NONE, 0, t, a[3], 0, a[0]);
        FAIL_IF((id = name_of(self, a[2], nt)) < 0);
        o.name = o.tname = (u32)id;
        FAIL_IF(!new_open(&self->tasks, a[0], o));
        break;
    case EV_USER_TASK_END:
        if ((p = map_del_ptr(&self->tasks, a[0]))) {
            o = *p;
            free(p);
        } else {
            o = opened(self, K_TASK, RES_NONE, 0, self->origin, 0, CLIPPED_START, a[0]);
            FAIL_IF((id = extra_name_of(b->extra[i * NEXTRA + 1], nt)) < 0);
            o.name = o.tname = (u32)id;
        }
        FAIL_IF(out_emit(&self->out, &o, t, a[1], tok, 0) < 0);
        break;
    }
    return 0;
}

static u8 IS_RANGE[256], IS_PROC[256];

/* feed(codes, times, procs, goroutines, args, extra, token, strings, extra_strings, intern, names) -> list of bytes */
static PyObject *SpanCore_feed(SpanCoreObject *self, PyObject *args) {
    Py_buffer cb, tb, pb, gb, ab, xb;
    long token;
    NameTables nt;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*lO!O!O!O!", &cb, &tb, &pb, &gb, &ab, &xb, &token, &PyDict_Type, &nt.strings,
                          &PyList_Type, &nt.extra_strings, &PyDict_Type, &nt.intern, &PyList_Type, &nt.names))
        return NULL;
    PyObject *result = NULL;
    size_t n = (size_t)cb.len;
    if ((size_t)tb.len != n * 8 || (size_t)pb.len != n * 8 || (size_t)gb.len != n * 8 || (size_t)ab.len != n * 8 * NARGS ||
        (size_t)xb.len != n * 8 * NEXTRA) {
        PyErr_SetString(PyExc_ValueError, "columns of different lengths");
        goto done;
    }
    if (token != self->token) {
        self->token = token;
        memset(self->cache, 0, sizeof self->cache);
    }
    Batch b = {n, cb.buf, tb.buf, pb.buf, gb.buf, ab.buf, xb.buf};
    if (n && self->origin < 0)
        self->origin = b.time[0];
    for (size_t i = 0; i < n; i++) {
        u8 code = b.code[i];
        self->last = b.time[i];
        int r = TRANSITIONS[code].is ? on_transition(self, &b, i, &nt)
                : IS_RANGE[code]     ? on_range(self, &b, i, &nt)
                : IS_PROC[code]      ? on_proc(self, &b, i)
                                     : 0;
        if (r < 0) {
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            self->out.n = 0;
            goto done;
        }
    }
    result = out_take(&self->out);
done:
    PyBuffer_Release(&cb), PyBuffer_Release(&tb), PyBuffer_Release(&pb), PyBuffer_Release(&gb);
    PyBuffer_Release(&ab), PyBuffer_Release(&xb);
    return result;
}

static PyObject *SpanCore_close(SpanCoreObject *self, PyObject *unused) {
    OpenList l;
    if (all_open(self, &l) < 0)
        return PyErr_NoMemory();
    qsort(l.v, l.n, sizeof *l.v, by_seq);
    for (size_t i = 0; i < l.n; i++) {
        const Open *o = l.v[i];
        if (out_emit(&self->out, o, self->last > o->start ? self->last : o->start, 0, o->tok, CLIPPED_END) < 0) {
            free(l.v);
            self->out.n = 0;
            return PyErr_NoMemory();
        }
    }
    free(l.v);
    core_clear(self);
    return out_take(&self->out);
}

static PyObject *SpanCore_gap(SpanCoreObject *self, PyObject *unused) {
    core_clear(self);
    Py_RETURN_NONE;
}

static PyObject *SpanCore_min_tables(SpanCoreObject *self, PyObject *unused) {
    OpenList l;
    if (all_open(self, &l) < 0)
        return PyErr_NoMemory();
    long oldest = -1;
    for (size_t i = 0; i < l.n; i++)
        if (oldest < 0 || (long)l.v[i]->tok < oldest)
            oldest = (long)l.v[i]->tok;
    free(l.v);
    return PyLong_FromLong(oldest);
}

static PyObject *SpanCore_open_stacks(SpanCoreObject *self, PyObject *unused) {
    OpenList l;
    if (all_open(self, &l) < 0)
        return PyErr_NoMemory();
    PyObject *out = PyList_New((Py_ssize_t)l.n);
    for (size_t i = 0; out != NULL && i < l.n; i++) {
        PyObject *pair = Py_BuildValue("(kK)", (unsigned long)l.v[i]->tok, (unsigned long long)l.v[i]->stack);
        if (pair == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, (Py_ssize_t)i, pair);
    }
    free(l.v);
    return out;
}

static PyObject *SpanCore_open_counts(SpanCoreObject *self, PyObject *unused) {
    OpenList l;
    if (all_open(self, &l) < 0)
        return PyErr_NoMemory();
    Py_ssize_t counts[N_SPAN_KINDS] = {0};
    for (size_t i = 0; i < l.n; i++)
        if (l.v[i]->kind < N_SPAN_KINDS)
            counts[l.v[i]->kind]++;
    free(l.v);
    PyObject *out = PyList_New(N_SPAN_KINDS);
    for (Py_ssize_t k = 0; out != NULL && k < N_SPAN_KINDS; k++) {
        PyObject *n = PyLong_FromSsize_t(counts[k]);
        if (n == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, k, n);
    }
    return out;
}

static int SpanCore_init(SpanCoreObject *self, PyObject *args, PyObject *kw) {
    if (!PyArg_ParseTuple(args, ":SpanCore"))
        return -1;
    core_clear(self);
    self->token = -1;
    return 0;
}

static void SpanCore_dealloc(SpanCoreObject *self) {
    core_clear(self);
    out_free(&self->out);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef SpanCore_methods[] = {
    {"feed", (PyCFunction)SpanCore_feed, METH_VARARGS,
     "feed($self, codes, times, procs, goroutines, args, extra, token, strings, extra_strings, intern, names, /)\n--\n\n"
     "The spans that end in a batch, as columns."},
    {"close", (PyCFunction)SpanCore_close, METH_NOARGS,
     "close($self, /)\n--\n\nThe spans still open, cut at the last event; the core is then empty."},
    {"gap", (PyCFunction)SpanCore_gap, METH_NOARGS, "gap($self, /)\n--\n\nForget every open span."},
    {"min_tables", (PyCFunction)SpanCore_min_tables, METH_NOARGS,
     "min_tables($self, /)\n--\n\nThe oldest tables key an open span refers to (-1: none)."},
    {"open_stacks", (PyCFunction)SpanCore_open_stacks, METH_NOARGS,
     "open_stacks($self, /)\n--\n\n(tables key, start stack id) of every open span."},
    {"open_counts", (PyCFunction)SpanCore_open_counts, METH_NOARGS,
     "open_counts($self, /)\n--\n\nHow many spans are open, by span kind."},
    {NULL},
};

static PyTypeObject SpanCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "livetrace._trace._ccore.SpanCore",
    .tp_basicsize = sizeof(SpanCoreObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)SpanCore_init,
    .tp_dealloc = (destructor)SpanCore_dealloc,
    .tp_methods = SpanCore_methods,
    .tp_doc = "SpanCore()\n--\n\nOpen spans across batches; the compiled twin of spans.twin.SpanCore.",
};

int spans_register(PyObject *module) {
    init_transitions();
    static const u8 ranges[] = {EV_GC_BEGIN, EV_GC_ACTIVE, EV_GC_END, EV_STW_BEGIN, EV_STW_END,
                                EV_GC_MARK_ASSIST_BEGIN, EV_GC_MARK_ASSIST_ACTIVE, EV_GC_MARK_ASSIST_END,
                                EV_USER_REGION_BEGIN, EV_USER_REGION_END, EV_USER_TASK_BEGIN, EV_USER_TASK_END};
    for (size_t i = 0; i < sizeof ranges; i++)
        IS_RANGE[ranges[i]] = 1;
    IS_PROC[EV_PROC_START] = IS_PROC[EV_PROC_STOP] = IS_PROC[EV_PROC_STEAL] = IS_PROC[EV_PROC_STATUS] = 1;
    if (add_type(module, &SpanCoreType, "SpanCore") < 0)
        return -1;
    return span_select_register(module);
}
