/*
 * livetrace._trace._ccore: the compiled twin of the decoders' hot loops.
 *
 * Two things live here, each a faithful twin of pure-Python code that stays
 * the reference (tests run both):
 *   - wire_records(): the records of one batch payload as columns
 *     (twin of _modern_wire.decode_records);
 *   - Engine: cursors over each thread's batches, the frontier heap and the
 *     ordering engine's state machines (twin of _modern_decoder and
 *     _modern_order), writing events as columns, a bounded number per call,
 *     with the GIL released.
 * (and the JSON lines of the common kinds; legacy_exact(), the fast path for
 * legacy traces, is in _ccore_legacy.c.)
 *
 * Format facts that both twins need (argument counts, which argument is a
 * stack or a string) come from Python at import time (init_tables), so there
 * is one source for them. Error messages follow Go's reader, as the Python
 * twin's do.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "_ccore_common.h"

#define NO_ID ((i64)-1)
#define NO_TASK UINT64_MAX
#define SYNC_CODE 255
#define CPU_SAMPLE_CODE 7
#define NARGS 4  /* argument columns per event: the most any event has */
#define NEXTRA 2

/* ---- tables from Python (init_tables) ---- */
static u8 T_TIMED[256];     /* arguments of a timed event, its timestamp delta included; 0: not timed */
static u8 T_NARGS[256];     /* arguments an emitted event carries */
static u8 T_STACK[256];     /* which argument is the event's stack, 255 none */
static u8 T_STR0[256], T_STR1[256]; /* which arguments are string ids, 255 none */
static int tables_ready = 0;

/* ---- varints ---- */

/* 1: read, 0: runs past end, -1: overflows 64 bits */
static inline int uvarint(const u8 *p, size_t end, size_t *pos, u64 *out) {
    size_t i = *pos;
    if (i < end && p[i] < 0x80) {
        *out = p[i];
        *pos = i + 1;
        return 1;
    }
    u64 v = 0;
    unsigned shift = 0;
    while (i < end) {
        u8 b = p[i++];
        if (shift == 63 && b > 1)
            return -1;
        v |= (u64)(b & 0x7f) << shift;
        if (b < 0x80) {
            *out = v;
            *pos = i;
            return 1;
        }
        shift += 7;
    }
    return 0;
}

/* ---- wire layer ---- */

static PyObject *WireError;

/* wire_records(payload, table) -> (codes, argstart, args)
 * table[code]: 0 invalid, else 0x80 | nargs | 0x20 stack | 0x40 data.
 * A record with data has two more arguments: the data's start and length.
 * Raises WireError(kind, code, at): 1 invalid type, 2 short, 3 overflow. */
static PyObject *wire_records(PyObject *self, PyObject *args) {
    Py_buffer pb, tb;
    if (!PyArg_ParseTuple(args, "y*y*", &pb, &tb))
        return NULL;
    PyObject *result = NULL;
    u8 *codes = NULL;
    u32 *start = NULL;
    u64 *vals = NULL;
    size_t ccap = 0, scap = 0, vcap = 0, n = 0, nv = 0;
    int ekind = 0, ecode = 0;
    size_t eat = 0;
    if (tb.len != 256) {
        PyErr_SetString(PyExc_ValueError, "table must have 256 entries");
        goto done;
    }
    const u8 *p = pb.buf, *table = tb.buf;
    size_t end = (size_t)pb.len, i = 0;
    /* Records average more than two bytes: size for that, grow if wrong. */
    if (grow((void **)&codes, &ccap, end / 2 + 16, 1) || grow((void **)&start, &scap, end / 2 + 17, 4) ||
        grow((void **)&vals, &vcap, end + 16, 8))
        goto nomem;
    Py_BEGIN_ALLOW_THREADS
    while (i < end) {
        size_t rec = i;
        u8 code = p[i];
        u8 t = table[code];
        if (!(t & 0x80)) {
            ekind = 1, ecode = code, eat = i;
            break;
        }
        i++;
        unsigned na = t & 0x1f;
        if (n + 1 >= ccap && grow((void **)&codes, &ccap, n + 2, 1)) { ekind = -1; break; }
        if (n + 2 >= scap && grow((void **)&start, &scap, n + 3, 4)) { ekind = -1; break; }
        if (nv + na + 2 > vcap && grow((void **)&vals, &vcap, nv + na + 2, 8)) { ekind = -1; break; }
        codes[n] = code;
        start[n] = (u32)nv;
        int r = 1;
        for (unsigned k = 0; k < na && r == 1; k++)
            r = uvarint(p, end, &i, &vals[nv++]);
        if (r == 1 && (t & 0x20)) {
            u64 frames = vals[start[n] + 1];
            for (u64 k = 0; r == 1 && k < frames; k++) {
                if (nv + 4 > vcap && grow((void **)&vals, &vcap, nv + 4, 8)) { r = -2; break; }
                for (int f = 0; f < 4 && r == 1; f++)
                    r = uvarint(p, end, &i, &vals[nv++]);
            }
        }
        if (r == 1 && (t & 0x40)) {
            u64 len;
            r = uvarint(p, end, &i, &len);
            if (r == 1 && len > end - i)
                r = 0;
            if (r == 1) {
                if (nv + 2 > vcap && grow((void **)&vals, &vcap, nv + 2, 8)) { r = -2; }
                else {
                    vals[nv++] = i;
                    vals[nv++] = len;
                    i += len;
                }
            }
        }
        if (r != 1) {
            ekind = r == 0 ? 2 : r == -1 ? 3 : -1;
            ecode = code, eat = rec;
            break;
        }
        n++;
    }
    Py_END_ALLOW_THREADS
    if (ekind == -1)
        goto nomem;
    if (ekind) {
        PyObject *e = Py_BuildValue("(iin)", ekind, ecode, (Py_ssize_t)eat);
        if (e) {
            PyErr_SetObject(WireError, e);
            Py_DECREF(e);
        }
        goto done;
    }
    start[n] = (u32)nv;
    result = Py_BuildValue("(y#y#y#)", (char *)codes, (Py_ssize_t)n, (char *)start, (Py_ssize_t)((n + 1) * 4),
                           vals ? (char *)vals : "", (Py_ssize_t)(nv * 8));
    goto done;
nomem:
    PyErr_NoMemory();
done:
    free(codes);
    free(start);
    free(vals);
    PyBuffer_Release(&pb);
    PyBuffer_Release(&tb);
    return result;
}

/* ---- u64-keyed hash map: linear probing, backward-shift deletion ---- */

typedef struct {
    u64 key;
    void *val; /* NULL: empty slot */
} Slot;

typedef struct {
    Slot *s;
    size_t cap, len;
} Map;


static void *map_get(const Map *m, u64 k) {
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1, i = hmix(k) & mask;
    while (m->s[i].val) {
        if (m->s[i].key == k)
            return m->s[i].val;
        i = (i + 1) & mask;
    }
    return NULL;
}

static int map_put(Map *m, u64 k, void *v);

static int map_resize(Map *m, size_t cap) {
    Slot *old = m->s;
    size_t oldcap = m->cap;
    m->s = calloc(cap, sizeof(Slot));
    if (!m->s) {
        m->s = old;
        return -1;
    }
    m->cap = cap;
    m->len = 0;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].val)
            map_put(m, old[i].key, old[i].val);
    free(old);
    return 0;
}

static int map_put(Map *m, u64 k, void *v) {
    if ((m->len + 1) * 2 > m->cap && map_resize(m, m->cap ? m->cap * 2 : 16))
        return -1;
    size_t mask = m->cap - 1, i = hmix(k) & mask;
    while (m->s[i].val) {
        if (m->s[i].key == k) {
            m->s[i].val = v;
            return 0;
        }
        i = (i + 1) & mask;
    }
    m->s[i].key = k;
    m->s[i].val = v;
    m->len++;
    return 0;
}

static void *map_del(Map *m, u64 k) {
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1, i = hmix(k) & mask;
    while (m->s[i].val && m->s[i].key != k)
        i = (i + 1) & mask;
    void *v = m->s[i].val;
    if (!v)
        return NULL;
    m->s[i].val = NULL;
    m->len--;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->s[j].val)
            break;
        size_t h = hmix(m->s[j].key) & mask;
        /* move the entry back unless its home lies cyclically in (i, j] */
        int stays = (i <= j) ? (i < h && h <= j) : (i < h || h <= j);
        if (!stays) {
            m->s[i] = m->s[j];
            m->s[j].val = NULL;
            i = j;
        }
    }
    return v;
}

static void map_clear(Map *m) {
    free(m->s);
    m->s = NULL;
    m->cap = m->len = 0;
}

/* ---- the ordering engine's state ---- */

typedef struct {
    u64 typ, desc;
} Range;

typedef struct {
    u64 task;
    char *name;
    size_t n;
} Region;

typedef struct {
    u64 id;
    int status;
    u64 seq_gen, seq;
    Region *regions;
    size_t nreg, capreg;
    Range *ranges;
    size_t nrng, caprng;
} G;

typedef struct {
    u64 id;
    int status;
    u64 seq_gen, seq;
    Range *ranges;
    size_t nrng, caprng;
} P;

typedef struct {
    i64 id, p, g;
} M;

typedef struct {
    char *name;
    size_t n;
    u64 parent;
} Task;

typedef struct {
    const char *p;
    size_t n;
} Str;

typedef struct {
    const u8 *p;
    size_t len;
    u64 time;
    i64 offset; /* of the payload in the stream */
} BatchRef;

typedef struct {
    i64 m;
    BatchRef *b;
    size_t nb, bi, off;
    int started;
    i64 last, time;
    int code;
    u64 args[NARGS];
} Cursor;

typedef struct {
    i64 time, m, p, g;
    u64 stack;
} Sample;

typedef struct {
    size_t n, cap;
    u8 *code;
    i64 *time, *m, *p, *g;
    u64 *args, *extra;
} Out;

typedef struct {
    i64 m, p, g;
} Ctx;

/* wire status values and the states they mean */
enum { GO_BAD, GO_RUNNABLE, GO_RUNNING, GO_SYSCALL, GO_WAITING };
enum { PROC_BAD, PROC_RUNNING, PROC_IDLE, PROC_SYSCALL, PROC_SYSCALL_ABANDONED };
enum { GS_UNDETERMINED, GS_NOT_EXIST, GS_RUNNABLE, GS_RUNNING, GS_WAITING, GS_SYSCALL };
enum { PS_UNDETERMINED, PS_NOT_EXIST, PS_RUNNING, PS_IDLE };
static const int GO_STATUS_STATE[] = {GS_UNDETERMINED, GS_RUNNABLE, GS_RUNNING, GS_SYSCALL, GS_WAITING};
static const int PROC_STATUS_STATE[] = {PS_UNDETERMINED, PS_RUNNING, PS_IDLE, PS_RUNNING, PS_IDLE};
static const char *GO_STATUS_NAMES[] = {"Bad", "Runnable", "Running", "Syscall", "Waiting"};
static const char *PROC_STATUS_NAMES[] = {"Bad", "Running", "Idle", "Syscall", "SyscallAbandoned"};
enum { MUST_NOT, MAY, MUST };
enum { ERR_NONE, ERR_FORMAT, ERR_ORDER, ERR_MEMORY };

typedef struct {
    PyObject_HEAD
    /* across generations */
    Map gs, ps, tasks, msmap;
    M **ms; /* in order of first appearance, as the Python twin's dict */
    size_t nms, capms;
    u64 gc_seq;
    int gc_state; /* 0 undetermined, 1 not running, 2 running */
    u64 initial_gen;
    i64 last;
    u64 syncs;
    /* the generation being decoded */
    int active;
    u64 gen;
    double ns_per_tick;
    PyObject *keep; /* the Python objects the pointers below point into */
    Str *strs;
    Map strings, stacks;
    Cursor *cur;
    size_t ncur;
    Cursor **heap;
    size_t nheap;
    Sample *samples;
    size_t nsamples, si;
    Str *xstr; /* a generation's derived strings: task types at their end */
    size_t nx, capx;
    u8 mask[256];
    Out out;
    /* the first error stops the generation */
    int err;
    i64 err_offset;
    char errmsg[600];
    char *names[256]; /* event names, for messages */
} Engine;

static int fail(Engine *e, int kind, i64 offset, const char *fmt, ...) {
    if (e->err)
        return -1;
    e->err = kind;
    e->err_offset = offset;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->errmsg, sizeof e->errmsg, fmt, ap);
    va_end(ap);
    return -1;
}

#define ORDER(...) fail(e, ERR_ORDER, -1, __VA_ARGS__)

static const char *ename(Engine *e, int code) {
    static char buf[32];
    if (code >= 0 && code < 256 && e->names[code])
        return e->names[code];
    snprintf(buf, sizeof buf, "Invalid(%d)", code);
    return buf;
}

static inline int ns_of(Engine *e, u64 ticks, i64 *out) {
    double v = (double)ticks * e->ns_per_tick;
    if (!(v < 9.2e18))
        return fail(e, ERR_FORMAT, -1, "timestamp out of range");
    *out = (i64)v;
    return 0;
}

/* ---- output ---- */

static int out_reserve(Out *o, size_t need) {
    if (need <= o->cap)
        return 0;
    size_t nc = o->cap ? o->cap : 1024;
    while (nc < need)
        nc *= 2;
#define RE(f, n)                                          \
    {                                                     \
        void *q = realloc(o->f, (n) * sizeof(*o->f));     \
        if (!q)                                           \
            return -1;                                    \
        o->f = q;                                         \
    }
    RE(code, nc) RE(time, nc) RE(m, nc) RE(p, nc) RE(g, nc) RE(args, nc * NARGS) RE(extra, nc * NEXTRA)
#undef RE
    o->cap = nc;
    return 0;
}

static int has_string(Engine *e, u64 id) { return id == 0 || map_get(&e->strings, id) != NULL; }
static int has_stack(Engine *e, u64 id) { return id == 0 || map_get(&e->stacks, id) != NULL; }

/* One event happens: its ids are checked against the generation's tables,
 * its time made strictly later than the one before, and it is written out
 * if the filter wants its code. */
static int emit(Engine *e, int code, i64 t, Ctx c, const u64 *a, u64 x0, u64 x1) {
    int na = T_NARGS[code];
    int si = T_STACK[code];
    if (si != 255 && !has_stack(e, a[si]))
        return fail(e, ERR_FORMAT, -1, "found invalid stack ID %llu for event %s", (unsigned long long)a[si],
                    ename(e, code));
    if ((code == 14 || code == 47) && !has_stack(e, a[1]))
        return fail(e, ERR_FORMAT, -1, "found invalid stack ID %llu for event %s", (unsigned long long)a[1],
                    ename(e, code));
    if (T_STR0[code] != 255 && !has_string(e, a[T_STR0[code]]))
        return fail(e, ERR_FORMAT, -1, "found invalid string ID %llu for event %s",
                    (unsigned long long)a[T_STR0[code]], ename(e, code));
    if (T_STR1[code] != 255 && !has_string(e, a[T_STR1[code]]))
        return fail(e, ERR_FORMAT, -1, "found invalid string ID %llu for event %s",
                    (unsigned long long)a[T_STR1[code]], ename(e, code));
    if (t <= e->last)
        t = e->last + 1;
    e->last = t;
    if (!e->mask[code])
        return 0;
    Out *o = &e->out;
    if (o->n == o->cap && out_reserve(o, o->n + 1))
        return fail(e, ERR_MEMORY, -1, "out of memory");
    size_t i = o->n++;
    o->code[i] = (u8)code;
    o->time[i] = t;
    o->m[i] = c.m;
    o->p[i] = c.p;
    o->g[i] = c.g;
    u64 *dst = o->args + i * NARGS;
    for (int k = 0; k < NARGS; k++)
        dst[k] = k < na ? a[k] : 0;
    o->extra[i * NEXTRA] = x0;
    o->extra[i * NEXTRA + 1] = x1;
    return 0;
}

/* ---- states ---- */

static G *g_new(Engine *e, u64 id, int status) {
    G *g = calloc(1, sizeof(G));
    if (!g || map_put(&e->gs, id, g)) {
        free(g);
        fail(e, ERR_MEMORY, -1, "out of memory");
        return NULL;
    }
    g->id = id;
    g->status = status;
    g->seq_gen = e->gen;
    return g;
}

static void g_free(G *g) {
    for (size_t i = 0; i < g->nreg; i++)
        free(g->regions[i].name);
    free(g->regions);
    free(g->ranges);
    free(g);
}

static void g_delete(Engine *e, u64 id) {
    G *g = map_del(&e->gs, id);
    if (g)
        g_free(g);
}

static M *m_get(Engine *e, i64 id) {
    M *m = map_get(&e->msmap, (u64)id);
    if (m)
        return m;
    m = malloc(sizeof(M));
    if (!m || grow((void **)&e->ms, &e->capms, e->nms + 1, sizeof(M *)) || map_put(&e->msmap, (u64)id, m)) {
        free(m);
        fail(e, ERR_MEMORY, -1, "out of memory");
        return NULL;
    }
    m->id = id;
    m->p = m->g = NO_ID;
    e->ms[e->nms++] = m;
    return m;
}

static int check_ctx(Engine *e, Ctx c, int rm, int rp, int rg) {
    i64 have[3] = {c.m, c.p, c.g};
    int req[3] = {rm, rp, rg};
    static const char *what[3] = {"thread", "proc", "goroutine"};
    for (int k = 0; k < 3; k++) {
        if (req[k] == MUST && have[k] == NO_ID)
            return ORDER("expected a %s but didn't have one", what[k]);
        if (req[k] == MUST_NOT && have[k] != NO_ID)
            return ORDER("expected no %s but had one", what[k]);
    }
    return 0;
}
#define CHECK(...) \
    if (check_ctx(e, c, __VA_ARGS__)) return -1
#define USER_GO MUST, MUST, MUST

static inline int next_seq(u64 seq_gen, u64 seq, u64 gen, u64 want) {
    return seq_gen == gen && seq != UINT64_MAX && want == seq + 1;
}

static void ranges_repr(char *buf, size_t size, const Range *r, size_t n) {
    size_t k = (size_t)snprintf(buf, size, "[");
    for (size_t i = 0; i < n && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s(%llu, %llu)", i ? ", " : "", (unsigned long long)r[i].typ,
                              (unsigned long long)r[i].desc);
    if (k < size)
        snprintf(buf + k, size - k, "]");
}

static int range_begin(Engine *e, Range **r, size_t *n, size_t *cap, u64 typ, u64 desc) {
    for (size_t i = 0; i < *n; i++)
        if ((*r)[i].typ == typ && (*r)[i].desc == desc)
            return ORDER("discovered event already in-flight for when starting event %s", ename(e, (int)typ));
    if (grow((void **)r, cap, *n + 1, sizeof(Range)))
        return fail(e, ERR_MEMORY, -1, "out of memory");
    (*r)[(*n)++] = (Range){typ, desc};
    return 0;
}

static int range_active(Engine *e, Range **r, size_t *n, size_t *cap, u64 typ, int initial) {
    int found = 0;
    for (size_t i = 0; i < *n; i++)
        if ((*r)[i].typ == typ && (*r)[i].desc == 0)
            found = 1;
    if (initial) {
        if (found)
            return ORDER("found named active range already in first gen: (%llu, 0)", (unsigned long long)typ);
        if (grow((void **)r, cap, *n + 1, sizeof(Range)))
            return fail(e, ERR_MEMORY, -1, "out of memory");
        (*r)[(*n)++] = (Range){typ, 0};
    } else if (!found) {
        char buf[300];
        ranges_repr(buf, sizeof buf, *r, *n);
        return ORDER("resource is missing active range: %s %s", ename(e, (int)typ), buf);
    }
    return 0;
}

static int range_start_of(int code) {
    switch (code) {
    case 27: return 26;
    case 28: case 30: return 29;
    case 31: case 33: return 32;
    case 34: case 36: return 35;
    case 23: case 24: return 22;
    case 43: return 42;
    }
    return -1;
}

static int range_end(Engine *e, Range *r, size_t *n, int code, u64 *desc) {
    int start = range_start_of(code);
    for (size_t i = 0; i < *n; i++)
        if (r[i].typ == (u64)start) {
            *desc = r[i].desc;
            r[i] = r[*n - 1];
            (*n)--;
            return 0;
        }
    return ORDER("tried to end event %s, but not in-flight", ename(e, start));
}

static const Str *gen_string(Engine *e, u64 id) {
    static const Str empty = {"", 0};
    if (id == 0)
        return &empty;
    return map_get(&e->strings, id);
}

static int extra_string(Engine *e, const char *p, size_t n, u64 *idx) {
    if (!n) {
        *idx = 0;
        return 0;
    }
    for (size_t i = 0; i < e->nx; i++)
        if (e->xstr[i].n == n && memcmp(e->xstr[i].p, p, n) == 0) {
            *idx = i + 1;
            return 0;
        }
    char *copy = malloc(n);
    if (!copy || grow((void **)&e->xstr, &e->capx, e->nx + 1, sizeof(Str))) {
        free(copy);
        return fail(e, ERR_MEMORY, -1, "out of memory");
    }
    memcpy(copy, p, n);
    e->xstr[e->nx++] = (Str){copy, n};
    *idx = e->nx;
    return 0;
}

static void repr_bytes(char *buf, size_t size, const char *p, size_t n) {
    size_t k = (size_t)snprintf(buf, size, "b'");
    for (size_t i = 0; i < n && k + 5 < size; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '\\' || ch == '\'')
            k += (size_t)snprintf(buf + k, size - k, "\\%c", ch);
        else if (ch >= 32 && ch < 127)
            buf[k++] = (char)ch;
        else
            k += (size_t)snprintf(buf + k, size - k, "\\x%02x", ch);
    }
    snprintf(buf + k, size - k, "'");
}

/* ---- the handlers: 1 happened (new context in *nc), 0 not yet, -1 error ---- */

static int h_proc_status(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    u64 pid = a[0], status = a[1];
    if (status >= 5)
        return ORDER("invalid status for proc %llu: %llu", (unsigned long long)pid, (unsigned long long)status);
    int old = PROC_STATUS_STATE[status];
    P *s = map_get(&e->ps, pid);
    if (s) {
        if (status == PROC_SYSCALL_ABANDONED && s->status == PROC_SYSCALL) {
            old = PS_RUNNING;
            a[1] = PROC_SYSCALL;
        } else if (status == PROC_SYSCALL_ABANDONED && s->status == PROC_SYSCALL_ABANDONED) {
            old = PS_IDLE;
        } else if ((u64)s->status != status) {
            return ORDER("inconsistent status for proc %llu: old %s vs. new %s", (unsigned long long)pid,
                         PROC_STATUS_NAMES[s->status], PROC_STATUS_NAMES[status]);
        }
        s->seq_gen = e->gen;
        s->seq = 0;
    } else {
        s = calloc(1, sizeof(P));
        if (!s || map_put(&e->ps, pid, s)) {
            free(s);
            return fail(e, ERR_MEMORY, -1, "out of memory");
        }
        s->id = pid;
        s->status = (int)status;
        s->seq_gen = e->gen;
        old = e->gen == e->initial_gen ? PS_UNDETERMINED : PS_NOT_EXIST;
    }
    *nc = (status == PROC_RUNNING || status == PROC_SYSCALL) ? (Ctx){c.m, (i64)pid, c.g} : c;
    if (status == PROC_SYSCALL_ABANDONED && old == PS_RUNNING) {
        int found = 0;
        for (size_t i = 0; i < e->nms; i++)
            if (e->ms[i]->p == (i64)pid) {
                c = (Ctx){e->ms[i]->id, (i64)pid, e->ms[i]->g};
                found = 1;
            }
        if (!found)
            return ORDER("failed to find sched context for proc %llu that's about to be stolen",
                         (unsigned long long)pid);
    }
    return emit(e, code, t, c, a, (u64)old, 0) ? -1 : 1;
}

static int h_proc_start(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    P *s = map_get(&e->ps, a[0]);
    if (!s || s->status != PROC_IDLE || !next_seq(s->seq_gen, s->seq, e->gen, a[1]) || c.p != NO_ID)
        return 0;
    CHECK(MUST, MUST_NOT, MAY);
    s->status = PROC_RUNNING;
    s->seq_gen = e->gen;
    s->seq = a[1];
    *nc = (Ctx){c.m, (i64)a[0], c.g};
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_proc_stop(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    P *s = map_get(&e->ps, (u64)c.p);
    if (!s)
        return ORDER("event %s for proc (%lld) that doesn't exist", ename(e, code), (long long)c.p);
    if (s->status != PROC_RUNNING && s->status != PROC_SYSCALL)
        return ORDER("%s event for proc that's not Running or Syscall", ename(e, code));
    CHECK(MUST, MUST, MAY);
    s->status = PROC_IDLE;
    *nc = (Ctx){c.m, NO_ID, c.g};
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_proc_steal(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    u64 pid = a[0];
    P *s = map_get(&e->ps, pid);
    if (!s || (s->status != PROC_SYSCALL && s->status != PROC_SYSCALL_ABANDONED) ||
        !next_seq(s->seq_gen, s->seq, e->gen, a[1]))
        return 0;
    CHECK(MUST, MAY, MAY);
    int old = s->status;
    s->status = PROC_IDLE;
    s->seq_gen = e->gen;
    s->seq = a[1];
    *nc = c;
    if (old == PROC_SYSCALL_ABANDONED)
        return emit(e, code, t, c, a, (u64)old, 0) ? -1 : 1;
    i64 victim = (i64)a[2];
    if (victim == c.m) {
        if (c.p != (i64)pid)
            return ORDER("tried to self-steal proc %llu (thread %lld), but got proc %lld instead",
                         (unsigned long long)pid, (long long)victim, (long long)c.p);
        *nc = (Ctx){c.m, NO_ID, c.g};
        return emit(e, code, t, c, a, (u64)old, 0) ? -1 : 1;
    }
    M *vm = map_get(&e->msmap, (u64)victim);
    if (!vm)
        return ORDER("stole proc from non-existent thread %lld", (long long)victim);
    if (vm->p != (i64)pid)
        return ORDER("tried to steal proc %llu from thread %lld, but got proc %lld instead", (unsigned long long)pid,
                     (long long)victim, (long long)vm->p);
    vm->p = NO_ID;
    return emit(e, code, t, c, a, (u64)old, 0) ? -1 : 1;
}

static int h_go_status(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    u64 gid = a[0], status = a[2];
    i64 mid = (i64)a[1];
    if (status >= 5)
        return ORDER("invalid status for goroutine %llu: %llu", (unsigned long long)gid, (unsigned long long)status);
    int old = GO_STATUS_STATE[status];
    G *s = map_get(&e->gs, gid);
    if (s) {
        if ((u64)s->status != status)
            return ORDER("inconsistent status for goroutine %llu: old %s vs. new %s", (unsigned long long)gid,
                         GO_STATUS_NAMES[s->status], GO_STATUS_NAMES[status]);
        s->seq_gen = e->gen;
        s->seq = 0;
    } else if (e->gen == e->initial_gen) {
        if (!g_new(e, gid, (int)status))
            return -1;
        old = GS_UNDETERMINED;
    } else {
        return ORDER("found goroutine status for new goroutine after the first generation: id=%llu status=%s",
                     (unsigned long long)gid, GO_STATUS_NAMES[status]);
    }
    *nc = c;
    if (status == GO_RUNNING) {
        *nc = (Ctx){c.m, c.p, (i64)gid};
    } else if (status == GO_SYSCALL) {
        if (mid == NO_ID)
            return ORDER("found goroutine %llu in syscall without a thread", (unsigned long long)gid);
        if (mid == c.m) {
            if (e->gen != e->initial_gen && c.g != (i64)gid)
                return ORDER("inconsistent thread for syscalling goroutine %llu: thread has goroutine %lld",
                             (unsigned long long)gid, (long long)c.g);
            *nc = (Ctx){c.m, c.p, (i64)gid};
        } else {
            M *ms = map_get(&e->msmap, (u64)mid);
            if (ms) {
                if (ms->g != (i64)gid)
                    return ORDER("inconsistent thread for syscalling goroutine %llu: thread has goroutine %lld",
                                 (unsigned long long)gid, (long long)ms->g);
                c.g = ms->g;
            } else {
                ms = m_get(e, mid);
                if (!ms)
                    return -1;
                ms->g = (i64)gid;
            }
            c.m = mid;
        }
    }
    return emit(e, code, t, c, a, (u64)old, 0) ? -1 : 1;
}

static G *running_g(Engine *e, int code, Ctx c, int want) {
    G *s = map_get(&e->gs, (u64)c.g);
    if (!s) {
        ORDER("event %s for goroutine (%lld) that doesn't exist", ename(e, code), (long long)c.g);
        return NULL;
    }
    if (s->status != want) {
        ORDER("%s event for goroutine that's not %s", ename(e, code), want == GO_RUNNING ? "Running" : "Syscall");
        return NULL;
    }
    return s;
}

static int h_go_create(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(MUST, MUST, MAY);
    G *s = map_get(&e->gs, (u64)c.g);
    if (s && s->status != GO_RUNNING)
        return ORDER("%s event for goroutine that's not Running", ename(e, code));
    if (map_get(&e->gs, a[0]))
        return ORDER("tried to create goroutine (%llu) that already exists", (unsigned long long)a[0]);
    if (!g_new(e, a[0], code == 47 ? GO_WAITING : GO_RUNNABLE))
        return -1;
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_go_stop_exec(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(USER_GO);
    G *s = running_g(e, code, c, GO_RUNNING);
    if (!s)
        return -1;
    if (code == 17)
        g_delete(e, (u64)c.g);
    else
        s->status = code == 19 ? GO_RUNNABLE : GO_WAITING;
    *nc = (Ctx){c.m, c.p, NO_ID};
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_go_start(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    G *s = map_get(&e->gs, a[0]);
    if (!s || s->status != GO_RUNNABLE || !next_seq(s->seq_gen, s->seq, e->gen, a[1]))
        return 0;
    CHECK(MUST, MUST, MUST_NOT);
    s->status = GO_RUNNING;
    s->seq_gen = e->gen;
    s->seq = a[1];
    *nc = (Ctx){c.m, c.p, (i64)a[0]};
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_go_unblock(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    G *s = map_get(&e->gs, a[0]);
    if (!s || s->status != GO_WAITING || !next_seq(s->seq_gen, s->seq, e->gen, a[1]))
        return 0;
    s->status = GO_RUNNABLE;
    s->seq_gen = e->gen;
    s->seq = a[1];
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_go_switch(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(USER_GO);
    G *cur = running_g(e, code, c, GO_RUNNING);
    if (!cur)
        return -1;
    u64 nextg = a[0], seq = a[1];
    G *nxt = map_get(&e->gs, nextg);
    if (!nxt || nxt->status != GO_WAITING || !next_seq(nxt->seq_gen, nxt->seq, e->gen, seq))
        return 0;
    if (emit(e, code, t, c, a, 0, 0))
        return -1;
    u64 none[NARGS] = {0};
    if (code == 45) {
        cur->status = GO_WAITING;
        if (emit(e, 20, t, c, none, 0, 0)) /* the switched-from goroutine blocks */
            return -1;
    } else {
        g_delete(e, (u64)c.g);
        if (emit(e, 17, t, c, none, 0, 0))
            return -1;
    }
    nxt->status = GO_RUNNING;
    nxt->seq_gen = e->gen;
    nxt->seq = seq;
    u64 start[NARGS] = {nextg, seq, 0, 0};
    if (emit(e, 16, t, (Ctx){c.m, c.p, NO_ID}, start, 0, 0))
        return -1;
    *nc = (Ctx){c.m, c.p, (i64)nextg};
    return 1;
}

static int h_syscall_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(USER_GO);
    G *s = running_g(e, code, c, GO_RUNNING);
    if (!s)
        return -1;
    s->status = GO_SYSCALL;
    P *ps = map_get(&e->ps, (u64)c.p);
    if (!ps)
        return ORDER("uninitialized proc %lld found during %s", (long long)c.p, ename(e, code));
    ps->status = PROC_SYSCALL;
    if (!next_seq(ps->seq_gen, ps->seq, e->gen, a[0]))
        return ORDER("failed to advance %s: can't make sequence: %llu (gen=%llu) -> %llu (gen=%llu)", ename(e, code),
                     (unsigned long long)ps->seq, (unsigned long long)ps->seq_gen, (unsigned long long)a[0],
                     (unsigned long long)e->gen);
    ps->seq = a[0];
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_syscall_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(USER_GO);
    G *s = map_get(&e->gs, (u64)c.g);
    if (!s)
        return ORDER("event %s for goroutine (%lld) that doesn't exist", ename(e, code), (long long)c.g);
    if (s->status != GO_SYSCALL)
        return ORDER("%s event for goroutine that's not Running", ename(e, code));
    s->status = GO_RUNNING;
    P *ps = map_get(&e->ps, (u64)c.p);
    if (!ps)
        return ORDER("uninitialized proc %lld found during %s", (long long)c.p, ename(e, code));
    if (ps->status != PROC_SYSCALL)
        return ORDER("expected proc %lld in state Syscall, but got %s instead", (long long)c.p,
                     PROC_STATUS_NAMES[ps->status]);
    ps->status = PROC_RUNNING;
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_syscall_end_blocked(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    if (c.p != NO_ID) {
        P *ps = map_get(&e->ps, (u64)c.p);
        if (!ps)
            return ORDER("uninitialized proc %lld found during %s", (long long)c.p, ename(e, code));
        if (ps->status == PROC_SYSCALL)
            return 0; /* the proc must be stolen first */
    }
    CHECK(MUST, MAY, MUST);
    G *s = map_get(&e->gs, (u64)c.g);
    if (!s)
        return ORDER("event %s for goroutine (%lld) that doesn't exist", ename(e, code), (long long)c.g);
    if (s->status != GO_SYSCALL)
        return ORDER("%s event for goroutine that's not Running", ename(e, code));
    s->status = GO_RUNNABLE;
    *nc = (Ctx){c.m, c.p, NO_ID};
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_go_create_syscall(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(MUST, MAY, MUST_NOT);
    if (map_get(&e->gs, a[0]))
        return ORDER("tried to create goroutine (%llu) in syscall that already exists", (unsigned long long)a[0]);
    if (!g_new(e, a[0], GO_SYSCALL))
        return -1;
    *nc = (Ctx){c.m, c.p, (i64)a[0]};
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_go_destroy_syscall(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(MUST, MAY, MUST);
    G *s = map_get(&e->gs, (u64)c.g);
    if (!s)
        return ORDER("event %s for goroutine (%lld) that doesn't exist", ename(e, code), (long long)c.g);
    if (s->status != GO_SYSCALL)
        return ORDER("%s event for goroutine that's not Syscall", ename(e, code));
    g_delete(e, (u64)c.g);
    *nc = (Ctx){c.m, c.p, NO_ID};
    if (c.p != NO_ID) {
        P *ps = map_get(&e->ps, (u64)c.p);
        if (!ps)
            return ORDER("found invalid proc %lld during %s", (long long)c.p, ename(e, code));
        if (ps->status != PROC_SYSCALL)
            return ORDER("proc %lld in unexpected state %s during %s", (long long)c.p, PROC_STATUS_NAMES[ps->status],
                         ename(e, code));
        ps->status = PROC_SYSCALL_ABANDONED;
        *nc = (Ctx){c.m, NO_ID, NO_ID};
        /* The proc this thread held is lost to it: say so as a steal. */
        u64 steal[NARGS] = {(u64)c.p, 0, 0, 0};
        if (emit(e, 12, t, c, steal, PROC_SYSCALL, 0))
            return -1;
    }
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_task_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    u64 tid = a[0];
    if (map_get(&e->tasks, tid))
        return ORDER("task ID conflict: %llu", (unsigned long long)tid);
    if (a[1] == 0) /* the background task is no parent */
        a[1] = NO_TASK;
    const Str *name = gen_string(e, a[2]);
    if (!name)
        return ORDER("invalid string ID %llu for %d event", (unsigned long long)a[2], code);
    Task *task = malloc(sizeof(Task));
    char *copy = malloc(name->n ? name->n : 1);
    if (!task || !copy || map_put(&e->tasks, tid, task)) {
        free(task);
        free(copy);
        return fail(e, ERR_MEMORY, -1, "out of memory");
    }
    memcpy(copy, name->p, name->n);
    *task = (Task){copy, name->n, a[1]};
    CHECK(USER_GO);
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_task_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    Task *task = map_del(&e->tasks, a[0]);
    u64 parent = NO_TASK, idx = 0;
    if (task) {
        parent = task->parent;
        int r = extra_string(e, task->name, task->n, &idx);
        free(task->name);
        free(task);
        if (r)
            return -1;
    }
    CHECK(USER_GO);
    *nc = c;
    return emit(e, code, t, c, a, parent, idx) ? -1 : 1;
}

static G *region_g(Engine *e, int code, u64 *a, Ctx c, const Str **name) {
    if (check_ctx(e, c, USER_GO))
        return NULL;
    *name = gen_string(e, a[1]);
    if (!*name) {
        ORDER("invalid string ID %llu for %d event", (unsigned long long)a[1], code);
        return NULL;
    }
    G *s = map_get(&e->gs, (u64)c.g);
    if (!s)
        ORDER("encountered Ev%s without known state for current goroutine %lld", ename(e, code), (long long)c.g);
    return s;
}

static int h_region_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    const Str *name;
    G *s = region_g(e, code, a, c, &name);
    if (!s)
        return -1;
    char *copy = malloc(name->n ? name->n : 1);
    if (!copy || grow((void **)&s->regions, &s->capreg, s->nreg + 1, sizeof(Region))) {
        free(copy);
        return fail(e, ERR_MEMORY, -1, "out of memory");
    }
    memcpy(copy, name->p, name->n);
    s->regions[s->nreg++] = (Region){a[0], copy, name->n};
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_region_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    const Str *name;
    G *s = region_g(e, code, a, c, &name);
    if (!s)
        return -1;
    /* Regions that began before the trace did end without a begin. */
    if (s->nreg) {
        Region *top = &s->regions[s->nreg - 1];
        if (top->task != a[0] || top->n != name->n || memcmp(top->name, name->p, name->n) != 0) {
            char want[200], have[200];
            repr_bytes(want, sizeof want, name->p, name->n);
            repr_bytes(have, sizeof have, top->name, top->n);
            return ORDER("misuse of region in goroutine %llu: region end (%llu, %s) when the inner-most active region "
                         "start event is (%llu, %s)",
                         (unsigned long long)s->id, (unsigned long long)a[0], want, (unsigned long long)top->task,
                         have);
        }
        free(top->name);
        s->nreg--;
    }
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_user_go(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(USER_GO);
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_thread_proc(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(MUST, MUST, MAY);
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_thread(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(MUST, MAY, MAY);
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_gc_active(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    u64 seq = a[0];
    *nc = c;
    if (e->gen == e->initial_gen) {
        if (e->gc_state != 0)
            return ORDER("GCActive in the first generation isn't first GC event");
        e->gc_seq = seq;
        e->gc_state = 2;
        return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
    }
    if (e->gc_seq == UINT64_MAX || seq != e->gc_seq + 1)
        return 0;
    if (e->gc_state != 2)
        return ORDER("encountered GCActive while GC was not in progress");
    e->gc_seq = seq;
    CHECK(USER_GO);
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_gc_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    u64 seq = a[0];
    *nc = c;
    if (e->gc_state == 0) {
        e->gc_seq = seq;
        e->gc_state = 2;
        return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
    }
    if (e->gc_seq == UINT64_MAX || seq != e->gc_seq + 1)
        return 0;
    if (e->gc_state == 2)
        return ORDER("encountered GCBegin while GC was already in progress");
    e->gc_seq = seq;
    e->gc_state = 2;
    CHECK(USER_GO);
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_gc_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    u64 seq = a[0];
    *nc = c;
    if (e->gc_seq == UINT64_MAX || seq != e->gc_seq + 1)
        return 0;
    if (e->gc_state == 1)
        return ORDER("encountered GCEnd when GC was not in progress");
    if (e->gc_state == 0)
        return ORDER("encountered GCEnd when GC was in an undetermined state");
    e->gc_seq = seq;
    e->gc_state = 1;
    CHECK(USER_GO);
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static P *ctx_proc(Engine *e, int code, Ctx c) {
    P *ps = map_get(&e->ps, (u64)c.p);
    if (!ps)
        ORDER("uninitialized proc %lld found during %s", (long long)c.p, ename(e, code));
    return ps;
}

static int h_sweep_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(MUST, MUST, MAY);
    P *ps = ctx_proc(e, code, c);
    if (!ps || range_begin(e, &ps->ranges, &ps->nrng, &ps->caprng, (u64)code, 0))
        return -1;
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_sweep_active(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    P *ps = map_get(&e->ps, a[0]);
    if (!ps)
        return ORDER("encountered GCSweepActive for unknown proc %llu", (unsigned long long)a[0]);
    if (range_active(e, &ps->ranges, &ps->nrng, &ps->caprng, (u64)range_start_of(code), e->gen == e->initial_gen))
        return -1;
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_sweep_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(MUST, MUST, MAY);
    P *ps = ctx_proc(e, code, c);
    u64 desc;
    if (!ps || range_end(e, ps->ranges, &ps->nrng, code, &desc))
        return -1;
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static G *ctx_g(Engine *e, int code, Ctx c) {
    G *s = map_get(&e->gs, (u64)c.g);
    if (!s)
        ORDER("encountered event of type %d without known state for current goroutine %lld", code, (long long)c.g);
    return s;
}

static int h_go_range_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(USER_GO);
    G *s = ctx_g(e, code, c);
    if (!s)
        return -1;
    if (range_begin(e, &s->ranges, &s->nrng, &s->caprng, (u64)code, code == 26 ? a[0] : 0))
        return -1;
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_go_range_active(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    G *s = map_get(&e->gs, a[0]);
    if (!s)
        return ORDER("uninitialized goroutine %llu found during %s", (unsigned long long)a[0], ename(e, code));
    if (range_active(e, &s->ranges, &s->nrng, &s->caprng, (u64)range_start_of(code), e->gen == e->initial_gen))
        return -1;
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static int h_go_range_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(USER_GO);
    G *s = ctx_g(e, code, c);
    if (!s)
        return -1;
    u64 desc;
    if (range_end(e, s->ranges, &s->nrng, code, &desc))
        return -1;
    if (code == 27) /* the end of a stop-the-world names what its begin named */
        a[0] = desc;
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

typedef int (*Handler)(Engine *, int, i64, u64 *, Ctx, Ctx *);
static Handler HANDLERS[256];

static void init_handlers(void) {
    static const struct {
        int lo, hi;
        Handler h;
    } rows[] = {
        {9, 9, h_user_go}, {39, 39, h_user_go}, {44, 44, h_user_go}, {10, 10, h_proc_start},
        {11, 11, h_proc_stop}, {12, 12, h_proc_steal}, {13, 13, h_proc_status}, {14, 14, h_go_create},
        {47, 47, h_go_create}, {15, 15, h_go_create_syscall}, {16, 16, h_go_start}, {17, 17, h_go_stop_exec},
        {19, 20, h_go_stop_exec}, {18, 18, h_go_destroy_syscall}, {21, 21, h_go_unblock},
        {22, 22, h_syscall_begin}, {23, 23, h_syscall_end}, {24, 24, h_syscall_end_blocked},
        {25, 25, h_go_status}, {48, 48, h_go_status}, {26, 26, h_go_range_begin}, {35, 35, h_go_range_begin},
        {27, 27, h_go_range_end}, {36, 36, h_go_range_end}, {28, 28, h_gc_active}, {29, 29, h_gc_begin},
        {30, 30, h_gc_end}, {31, 31, h_sweep_active}, {32, 32, h_sweep_begin}, {33, 33, h_sweep_end},
        {34, 34, h_go_range_active}, {37, 38, h_thread_proc}, {40, 40, h_task_begin}, {41, 41, h_task_end},
        {42, 42, h_region_begin}, {43, 43, h_region_end}, {45, 46, h_go_switch}, {128, 136, h_thread},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (int c = rows[i].lo; c <= rows[i].hi; c++)
            HANDLERS[c] = rows[i].h;
}

/* ---- cursors and the frontier heap ---- */

/* 1: the cursor holds its next event, 0: it has none left, -1: error */
static int cursor_next(Engine *e, Cursor *c) {
    while (c->bi < c->nb && c->off == c->b[c->bi].len) {
        c->bi++;
        c->off = 0;
        c->started = 0;
    }
    if (c->bi == c->nb)
        return 0;
    BatchRef *b = &c->b[c->bi];
    if (!c->started) {
        if (ns_of(e, b->time, &c->last))
            return -1;
        c->started = 1;
    }
    size_t i = c->off, end = b->len;
    const u8 *p = b->p;
    int code = p[i];
    int n = T_TIMED[code];
    if (!n) {
        if (code > 136)
            return fail(e, ERR_FORMAT, b->offset + (i64)i, "found invalid event type: %d", code);
        return fail(e, ERR_FORMAT, b->offset + (i64)i, "found event without a timestamp: type=%d", code);
    }
    i++;
    u64 dt;
    if (uvarint(p, end, &i, &dt) != 1)
        return fail(e, ERR_FORMAT, b->offset + (i64)c->off, "found invalid uvarint");
    for (int k = 0; k < n - 1; k++)
        if (uvarint(p, end, &i, &c->args[k]) != 1)
            return fail(e, ERR_FORMAT, b->offset + (i64)c->off, "found invalid uvarint");
    i64 d = 0;
    if (ns_of(e, dt, &d))
        return -1;
    if (d > INT64_MAX - c->last)
        return fail(e, ERR_FORMAT, -1, "timestamp out of range");
    c->time = c->last = c->last + d;
    c->code = code;
    c->off = i;
    return 1;
}

static size_t sift_up(Cursor **h, size_t i) {
    while (i > 0 && h[(i - 1) / 2]->time > h[i]->time) {
        size_t j = (i - 1) / 2;
        Cursor *t = h[j];
        h[j] = h[i];
        h[i] = t;
        i = j;
    }
    return i;
}

static void sift_down(Cursor **h, size_t n, size_t i) {
    for (;;) {
        size_t m = i;
        i64 mt = h[i]->time;
        size_t l = 2 * i + 1, r = l + 1;
        if (l < n && h[l]->time < mt)
            m = l, mt = h[l]->time;
        if (r < n && h[r]->time < mt)
            m = r;
        if (m == i)
            return;
        Cursor *t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void heap_remove(Cursor **h, size_t *n, size_t i) {
    while (i > 0) {
        size_t j = (i - 1) / 2;
        Cursor *t = h[j];
        h[j] = h[i];
        h[i] = t;
        i = j;
    }
    h[0] = h[*n - 1];
    (*n)--;
    if (*n)
        sift_down(h, *n, 0);
}

/* Try the event of the frontier's i-th cursor: 1 it happened, 0 not yet, -1 error. */
static int try_cursor(Engine *e, size_t i) {
    Cursor *c = e->heap[i];
    if (e->initial_gen == 0) /* the first generation with an event to order */
        e->initial_gen = e->gen;
    Ctx ctx = {NO_ID, NO_ID, NO_ID};
    M *ms = NULL;
    if (c->m != NO_ID) {
        ms = m_get(e, c->m);
        if (!ms)
            return -1;
        ctx = (Ctx){c->m, ms->p, ms->g};
    }
    Handler h = HANDLERS[c->code];
    if (!h)
        return ORDER("bad event type found while ordering: %d", c->code);
    u64 a[NARGS];
    memcpy(a, c->args, sizeof a);
    Ctx nc;
    size_t before = e->out.n;
    i64 last_before = e->last;
    int r = h(e, c->code, c->time, a, ctx, &nc);
    if (r < 0) {
        /* As in the twin, what a failing handler emitted is not out. */
        e->out.n = before;
        e->last = last_before;
    }
    if (r != 1)
        return r;
    if (ms) {
        ms->p = nc.p;
        ms->g = nc.g;
    }
    int more = cursor_next(e, c);
    if (more < 0) {
        /* Nor is an event whose thread cannot go on. */
        e->out.n = before;
        e->last = last_before;
        return -1;
    }
    if (more) {
        if (sift_up(e->heap, i) == i)
            sift_down(e->heap, e->nheap, i);
    } else {
        heap_remove(e->heap, &e->nheap, i);
    }
    return 1;
}

/* Decode until the generation is done, an error, or max events are out. */
static void run_loop(Engine *e, size_t max) {
    while (!e->err && e->out.n < max) {
        int have_sample = e->si < e->nsamples;
        if (!e->nheap && !have_sample) {
            e->active = 0;
            return;
        }
        if (have_sample && (!e->nheap || e->samples[e->si].time < e->heap[0]->time)) {
            Sample *s = &e->samples[e->si++];
            u64 a[NARGS] = {s->stack, 0, 0, 0};
            emit(e, CPU_SAMPLE_CODE, s->time, (Ctx){s->m, s->p, s->g}, a, 0, 0);
            continue;
        }
        int r = try_cursor(e, 0);
        if (r)
            continue;
        /* Stable insertion sort by time, then try the others in that order. */
        for (size_t i = 1; i < e->nheap; i++) {
            Cursor *x = e->heap[i];
            size_t j = i;
            while (j > 0 && e->heap[j - 1]->time > x->time) {
                e->heap[j] = e->heap[j - 1];
                j--;
            }
            e->heap[j] = x;
        }
        for (size_t i = 1; i < e->nheap && !r; i++)
            r = try_cursor(e, i);
        if (!r)
            ORDER("broken trace: failed to advance: no thread's next event can happen");
    }
}

/* ---- the Engine type ---- */

static void gen_release(Engine *e) {
    for (size_t i = 0; i < e->ncur; i++)
        free(e->cur[i].b);
    free(e->cur);
    e->cur = NULL;
    e->ncur = 0;
    free(e->heap);
    e->heap = NULL;
    e->nheap = 0;
    free(e->samples);
    e->samples = NULL;
    e->nsamples = e->si = 0;
    free(e->strs);
    e->strs = NULL;
    map_clear(&e->strings);
    map_clear(&e->stacks);
    for (size_t i = 0; i < e->nx; i++)
        free((char *)e->xstr[i].p);
    e->nx = 0;
    Py_CLEAR(e->keep);
    e->active = 0;
}

static void Engine_dealloc(Engine *e) {
    gen_release(e);
    free(e->xstr);
    for (size_t i = 0; i < e->gs.cap; i++)
        if (e->gs.s[i].val)
            g_free(e->gs.s[i].val);
    for (size_t i = 0; i < e->ps.cap; i++)
        if (e->ps.s[i].val) {
            free(((P *)e->ps.s[i].val)->ranges);
            free(e->ps.s[i].val);
        }
    for (size_t i = 0; i < e->tasks.cap; i++)
        if (e->tasks.s[i].val) {
            free(((Task *)e->tasks.s[i].val)->name);
            free(e->tasks.s[i].val);
        }
    for (size_t i = 0; i < e->nms; i++)
        free(e->ms[i]);
    free(e->ms);
    map_clear(&e->gs);
    map_clear(&e->ps);
    map_clear(&e->tasks);
    map_clear(&e->msmap);
    Out *o = &e->out;
    free(o->code);
    free(o->time);
    free(o->m);
    free(o->p);
    free(o->g);
    free(o->args);
    free(o->extra);
    for (int i = 0; i < 256; i++)
        free(e->names[i]);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static int Engine_init(Engine *e, PyObject *args, PyObject *kw) {
    PyObject *names;
    Py_buffer mask;
    static char *kwlist[] = {"names", "mask", NULL};
    if (!tables_ready) {
        PyErr_SetString(PyExc_RuntimeError, "init_tables() first");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oy*", kwlist, &names, &mask))
        return -1;
    if (mask.len != 256 || !PyDict_Check(names)) {
        PyBuffer_Release(&mask);
        PyErr_SetString(PyExc_ValueError, "names must be a dict and mask 256 bytes");
        return -1;
    }
    memcpy(e->mask, mask.buf, 256);
    PyBuffer_Release(&mask);
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(names, &pos, &k, &v)) {
        long code = PyLong_AsLong(k);
        const char *s = PyUnicode_AsUTF8(v);
        if (!s || code < 0 || code > 255)
            return -1;
        free(e->names[code]);
        e->names[code] = strdup(s);
    }
    return 0;
}

/* begin(gen, ns_per_tick, start_ticks, threads, samples, strings, stacks)
 *   threads: [(m, [(payload, ticks, payload_offset), ...]), ...] in order of first appearance
 *   samples: [(ns, m, p, g, stack), ...] sorted by time
 *   strings: {id: bytes}; stacks: a collection of ids
 * Emits the generation's Sync and loads every thread's first event. */
static PyObject *Engine_begin(Engine *e, PyObject *args) {
    unsigned long long gen, start_ticks;
    double npt;
    PyObject *threads, *samples, *strings, *stacks;
    if (!PyArg_ParseTuple(args, "KdKO!O!O!O", &gen, &npt, &start_ticks, &PyList_Type, &threads, &PyList_Type,
                          &samples, &PyDict_Type, &strings, &stacks))
        return NULL;
    gen_release(e);
    e->err = 0;
    e->out.n = 0;
    e->gen = gen;
    e->ns_per_tick = npt;
    e->keep = Py_BuildValue("(OO)", threads, strings);
    if (!e->keep)
        return NULL;
    /* tables */
    Py_ssize_t ns = PyDict_Size(strings), pos = 0, k = 0;
    e->strs = calloc((size_t)ns + 1, sizeof(Str));
    if (!e->strs)
        return PyErr_NoMemory();
    PyObject *key, *val;
    while (PyDict_Next(strings, &pos, &key, &val)) {
        unsigned long long id = PyLong_AsUnsignedLongLong(key);
        char *p;
        Py_ssize_t n;
        if (PyErr_Occurred() || PyBytes_AsStringAndSize(val, &p, &n))
            return NULL;
        e->strs[k] = (Str){p, (size_t)n};
        if (map_put(&e->strings, id, &e->strs[k]))
            return PyErr_NoMemory();
        k++;
    }
    PyObject *it = PyObject_GetIter(stacks);
    if (!it)
        return NULL;
    PyObject *item;
    while ((item = PyIter_Next(it))) {
        unsigned long long id = PyLong_AsUnsignedLongLong(item);
        Py_DECREF(item);
        if (PyErr_Occurred() || map_put(&e->stacks, id, (void *)1)) {
            Py_DECREF(it);
            return PyErr_Occurred() ? NULL : PyErr_NoMemory();
        }
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        return NULL;
    /* CPU samples */
    Py_ssize_t nsmp = PyList_GET_SIZE(samples);
    e->samples = calloc((size_t)nsmp + 1, sizeof(Sample));
    if (!e->samples)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < nsmp; i++) {
        long long t, m, p, g;
        unsigned long long stk;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(samples, i), "LLLLK", &t, &m, &p, &g, &stk))
            return NULL;
        e->samples[i] = (Sample){t, m, p, g, stk};
    }
    e->nsamples = (size_t)nsmp;
    /* threads */
    Py_ssize_t nt = PyList_GET_SIZE(threads);
    e->cur = calloc((size_t)nt + 1, sizeof(Cursor));
    e->heap = calloc((size_t)nt + 1, sizeof(Cursor *));
    if (!e->cur || !e->heap)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < nt; i++) {
        long long m;
        PyObject *batches;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(threads, i), "LO!", &m, &PyList_Type, &batches))
            return NULL;
        Cursor *c = &e->cur[e->ncur++];
        c->m = m;
        Py_ssize_t nb = PyList_GET_SIZE(batches);
        c->b = calloc((size_t)nb + 1, sizeof(BatchRef));
        if (!c->b)
            return PyErr_NoMemory();
        for (Py_ssize_t j = 0; j < nb; j++) {
            PyObject *payload;
            unsigned long long ticks;
            long long off;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(batches, j), "O!KL", &PyBytes_Type, &payload, &ticks, &off))
                return NULL;
            c->b[j] = (BatchRef){(const u8 *)PyBytes_AS_STRING(payload), (size_t)PyBytes_GET_SIZE(payload), ticks,
                                 off};
        }
        c->nb = (size_t)nb;
    }
    e->active = 1;
    e->syncs++;
    i64 t0 = 0;
    if (!ns_of(e, start_ticks, &t0)) {
        u64 a[NARGS] = {e->syncs, 0, 0, 0};
        emit(e, SYNC_CODE, t0, (Ctx){NO_ID, NO_ID, NO_ID}, a, 0, 0);
    }
    for (size_t i = 0; i < e->ncur && !e->err; i++) {
        Cursor *c = &e->cur[i];
        int r = cursor_next(e, c);
        if (r == 1) {
            e->heap[e->nheap++] = c;
            sift_up(e->heap, e->nheap - 1);
        }
    }
    Py_RETURN_NONE;
}

/* The events written so far, as columns, and the error that stopped the
 * generation if any: (n, code, time, m, p, g, args, extra, extra_strings,
 * done, error) with error (kind, message, offset) or None. */
static PyObject *take(Engine *e) {
    Out *o = &e->out;
    size_t n = o->n;
    PyObject *xs = PyList_New((Py_ssize_t)e->nx);
    if (!xs)
        return NULL;
    for (size_t i = 0; i < e->nx; i++) {
        PyObject *b = PyBytes_FromStringAndSize(e->xstr[i].p, (Py_ssize_t)e->xstr[i].n);
        if (!b) {
            Py_DECREF(xs);
            return NULL;
        }
        PyList_SET_ITEM(xs, (Py_ssize_t)i, b);
    }
    PyObject *err = Py_None;
    Py_INCREF(err);
    if (e->err) {
        Py_DECREF(err);
        err = Py_BuildValue("(isL)", e->err, e->errmsg, (long long)e->err_offset);
        if (!err) {
            Py_DECREF(xs);
            return NULL;
        }
    }
#define COL(f) ((f) ? (char *)(f) : "") /* y# makes None of NULL */
    PyObject *r = Py_BuildValue("(ny#y#y#y#y#y#y#NON)", (Py_ssize_t)n, COL(o->code), (Py_ssize_t)n,
                                COL(o->time), (Py_ssize_t)(n * 8), COL(o->m), (Py_ssize_t)(n * 8),
                                COL(o->p), (Py_ssize_t)(n * 8), COL(o->g), (Py_ssize_t)(n * 8),
                                COL(o->args), (Py_ssize_t)(n * 8 * NARGS), COL(o->extra),
                                (Py_ssize_t)(n * 8 * NEXTRA), xs, (e->active && !e->err) ? Py_False : Py_True, err);
    o->n = 0;
    return r;
}

/* run(max_events): decode on, with the GIL released, until the generation is
 * done or max_events are out; returns what take() returns. */
static PyObject *Engine_run(Engine *e, PyObject *args) {
    Py_ssize_t max;
    if (!PyArg_ParseTuple(args, "n", &max))
        return NULL;
    if (e->active && !e->err && max > 0) {
        if (out_reserve(&e->out, (size_t)max + 4))
            return PyErr_NoMemory();
        Py_BEGIN_ALLOW_THREADS
        run_loop(e, (size_t)max);
        Py_END_ALLOW_THREADS
    }
    PyObject *r = take(e);
    if (!e->active || e->err)
        gen_release(e);
    return r;
}

/* final_sync(): the Sync event the stream's end makes: (time, n) */
static PyObject *Engine_final_sync(Engine *e, PyObject *noargs) {
    e->syncs++;
    e->last += 1;
    return Py_BuildValue("(LK)", (long long)e->last, (unsigned long long)e->syncs);
}

static PyMethodDef Engine_methods[] = {
    {"begin", (PyCFunction)Engine_begin, METH_VARARGS, "Start decoding a complete generation."},
    {"run", (PyCFunction)Engine_run, METH_VARARGS, "Decode up to max_events more events of the generation."},
    {"final_sync", (PyCFunction)Engine_final_sync, METH_NOARGS, "The Sync that ends the stream."},
    {NULL},
};

static PyTypeObject EngineType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "livetrace._trace._ccore.Engine",
    .tp_basicsize = sizeof(Engine),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Engine_init,
    .tp_dealloc = (destructor)Engine_dealloc,
    .tp_methods = Engine_methods,
    .tp_doc = "The ordering engine and frontier of the modern decoder, compiled.",
};

/* ---- JSON lines for state transitions (twin of _export.JsonlEncoder) ---- */

/* The output is written straight into a bytes object, sized for the usual
 * line up front (untouched pages cost nothing) and cut to length at the
 * end: a batch's lines are tens of megabytes, and every copy shows. */
typedef struct {
    PyObject *obj;
    char *p;
    size_t n, cap;
    int oom; /* sticky: a line is never written in part */
} Buf;

static int buf_init(Buf *b, size_t cap) {
    b->obj = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(cap ? cap : 1));
    if (!b->obj)
        return -1;
    b->p = PyBytes_AS_STRING(b->obj);
    b->cap = cap ? cap : 1;
    return 0;
}

static int buf_put(Buf *b, const char *s, size_t n) {
    if (b->oom)
        return -1;
    if (b->n + n > b->cap) {
        size_t nc = b->cap;
        while (nc < b->n + n)
            nc *= 2;
        if (_PyBytes_Resize(&b->obj, (Py_ssize_t)nc)) {
            b->oom = 1;
            return -1;
        }
        b->p = PyBytes_AS_STRING(b->obj);
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

#define PUTS(b, lit) buf_put(b, lit, sizeof(lit) - 1)

static int buf_i64(Buf *b, i64 v) {
    char tmp[24];
    int k = 24;
    u64 u = v < 0 ? (u64)0 - (u64)v : (u64)v;
    do {
        tmp[--k] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[--k] = '-';
    return buf_put(b, tmp + k, (size_t)(24 - k));
}

static int buf_u64(Buf *b, u64 u) {
    char tmp[24];
    int k = 24;
    do {
        tmp[--k] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    return buf_put(b, tmp + k, (size_t)(24 - k));
}

/* The JSON text (bytes) for a string or stack id: from the cache dict, or
 * made by miss(kind, id) ("string" or "stack"), which caches it too. */
static PyObject *json_part(PyObject *cache, PyObject *miss, const char *kind, u64 id) {
    PyObject *key = PyLong_FromUnsignedLongLong(id);
    if (!key)
        return NULL;
    PyObject *v = PyDict_GetItemWithError(cache, key);
    if (v) {
        Py_DECREF(key);
        Py_INCREF(v);
        return v;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    v = PyObject_CallFunction(miss, "sO", kind, key);
    Py_DECREF(key);
    if (v && !PyBytes_Check(v)) {
        Py_DECREF(v);
        PyErr_SetString(PyExc_TypeError, "miss() must return bytes");
        return NULL;
    }
    return v;
}

/* A few recently used parts, so that most lookups make no Python objects;
 * the cache dict keeps every part alive for the call. */
typedef struct {
    u64 id;
    const char *p;
    size_t n;
} Recent;
#define NRECENT 8192

static int put_part(Buf *b, Recent *recent, PyObject *cache, PyObject *miss, const char *kind, u64 id) {
    Recent *r = &recent[id % NRECENT];
    if (r->p && r->id == id)
        return buf_put(b, r->p, r->n);
    PyObject *v = json_part(cache, miss, kind, id);
    if (!v)
        return -1;
    *r = (Recent){id, PyBytes_AS_STRING(v), (size_t)PyBytes_GET_SIZE(v)};
    Py_DECREF(v); /* alive in the cache dict, which only grows during the call */
    return buf_put(b, r->p, r->n);
}

/* {"kind": K, "time_ns": T, ["wall": W, ]"g": G, "p": P, "m": M */
static void line_head(Buf *b, const char *kind, i64 t, i64 g, i64 p, i64 m, int has_wall, i64 wall_base,
                      i64 *cached_sec, char *sec_text, size_t *sec_len) {
    PUTS(b, "{\"kind\": \"");
    buf_put(b, kind, strlen(kind));
    PUTS(b, "\", \"time_ns\": ");
    buf_i64(b, t);
    if (has_wall) {
        i64 w = wall_base + t;
        i64 sec = w >= 0 ? w / 1000000000 : -((-w + 999999999) / 1000000000);
        i64 nsec = w - sec * 1000000000;
        if (sec != *cached_sec) {
            time_t tt = (time_t)sec;
            struct tm tm;
            gmtime_r(&tt, &tm);
            *sec_len = strftime(sec_text, 32, "%Y-%m-%dT%H:%M:%S", &tm);
            *cached_sec = sec;
        }
        PUTS(b, ", \"wall\": \"");
        buf_put(b, sec_text, *sec_len);
        if (nsec) {
            char frac[10];
            frac[0] = '.';
            for (int k = 9; k > 0; k--, nsec /= 10)
                frac[k] = (char)('0' + nsec % 10);
            size_t k = 10;
            while (frac[k - 1] == '0')
                k--;
            buf_put(b, frac, k);
        }
        PUTS(b, "Z\"");
    }
    PUTS(b, ", \"g\": ");
    buf_i64(b, g);
    PUTS(b, ", \"p\": ");
    buf_i64(b, p);
    PUTS(b, ", \"m\": ");
    buf_i64(b, m);
}

/* Metric, TaskBegin, RegionBegin/End and Log lines, as event_dict has them. */
static int annotation_line(Buf *b, int c, i64 t, i64 g, i64 p, i64 m, const u64 *a, int has_wall, i64 wall_base,
                           i64 *cached_sec, char *sec_text, size_t *sec_len, Recent *rstrings, Recent *rstacks,
                           PyObject *strings, PyObject *stacks, PyObject *miss) {
    static const char *kinds[] = {[9] = "Metric", [37] = "Metric", [38] = "Metric", [40] = "TaskBegin",
                                  [42] = "RegionBegin", [43] = "RegionEnd", [44] = "Log"};
    line_head(b, kinds[c], t, g, p, m, has_wall, wall_base, cached_sec, sec_text, sec_len);
    switch (c) {
    case 9: PUTS(b, ", \"name\": \"/sched/gomaxprocs:threads\", \"value\": "); buf_u64(b, a[0]); break;
    case 37: PUTS(b, ", \"name\": \"/memory/classes/heap/objects:bytes\", \"value\": "); buf_u64(b, a[0]); break;
    case 38: PUTS(b, ", \"name\": \"/gc/heap/goal:bytes\", \"value\": "); buf_u64(b, a[0]); break;
    case 40:
        PUTS(b, ", \"task\": ");
        buf_u64(b, a[0]);
        PUTS(b, ", \"parent\": ");
        if (a[1] == NO_TASK)
            PUTS(b, "null");
        else
            buf_u64(b, a[1]);
        PUTS(b, ", \"type\": ");
        if (put_part(b, rstrings, strings, miss, "string", a[2]))
            return -1;
        break;
    case 42: case 43:
        PUTS(b, ", \"task\": ");
        buf_u64(b, a[0]);
        PUTS(b, ", \"type\": ");
        if (put_part(b, rstrings, strings, miss, "string", a[1]))
            return -1;
        break;
    case 44:
        PUTS(b, ", \"task\": ");
        buf_u64(b, a[0]);
        PUTS(b, ", \"category\": ");
        if (put_part(b, rstrings, strings, miss, "string", a[1]))
            return -1;
        PUTS(b, ", \"message\": ");
        if (put_part(b, rstrings, strings, miss, "string", a[2]))
            return -1;
        break;
    }
    PUTS(b, ", \"stack\": ");
    int si = T_STACK[c];
    if (si != 255 && a[si]) {
        if (put_part(b, rstacks, stacks, miss, "stack", a[si]))
            return -1;
    } else {
        PUTS(b, "[]");
    }
    return PUTS(b, "}\n");
}

static const char *GS_NAMES[] = {"Undetermined", "NotExist", "Runnable", "Running", "Waiting", "Syscall"};
static const char *PS_NAMES[] = {"Undetermined", "NotExist", "Running", "Idle"};

/* jsonl(codes, times, m, p, g, args, extra, wall_base, strings, stacks, miss, other) -> bytes
 * One line per event: state transitions written here, any other event by
 * other(i), which returns its line (str). wall_base: ns to add to an event's
 * time for its Unix time, or None when the generation has no clock snapshot. */
static PyObject *jsonl(PyObject *self, PyObject *args) {
    Py_buffer cb, tb, mb, pb, gb, ab, xb;
    PyObject *wall_obj, *strings, *stacks, *miss, *other;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*OO!O!OO", &cb, &tb, &mb, &pb, &gb, &ab, &xb, &wall_obj, &PyDict_Type,
                          &strings, &PyDict_Type, &stacks, &miss, &other))
        return NULL;
    PyObject *result = NULL;
    Buf b = {0};
    Recent *rstacks = NULL, *rstrings = NULL;
    Py_buffer *all[] = {&cb, &tb, &mb, &pb, &gb, &ab, &xb};
    size_t n = (size_t)cb.len;
    if ((size_t)tb.len != n * 8 || (size_t)mb.len != n * 8 || (size_t)pb.len != n * 8 || (size_t)gb.len != n * 8 ||
        (size_t)ab.len != n * 8 * NARGS || (size_t)xb.len != n * 8 * NEXTRA) {
        PyErr_SetString(PyExc_ValueError, "columns of different lengths");
        goto done;
    }
    int has_wall = wall_obj != Py_None;
    i64 wall_base = has_wall ? PyLong_AsLongLong(wall_obj) : 0;
    if (PyErr_Occurred())
        goto done;
    const u8 *code = cb.buf;
    const i64 *time = tb.buf, *m = mb.buf, *p = pb.buf, *g = gb.buf;
    const u64 *a_all = ab.buf, *x_all = xb.buf;
    rstacks = calloc(NRECENT, sizeof(Recent));
    rstrings = calloc(NRECENT, sizeof(Recent));
    if (!rstacks || !rstrings || buf_init(&b, n * 768))
        goto fail;
    i64 cached_sec = INT64_MIN;
    char sec_text[32] = "";
    size_t sec_len = 0;
    for (size_t i = 0; i < n; i++) {
        int c = code[i];
        const u64 *a = a_all + i * NARGS, *x = x_all + i * NEXTRA;
        int proc = 0, old, new_, has_t = 0;
        i64 rid_signed = 0;
        u64 rid = 0, reason = 0, tstack = 0;
        int rid_is_signed = 0;
        switch (c) {
        case 10: proc = 1, rid = a[0], old = PS_IDLE, new_ = PS_RUNNING; break;
        case 11: proc = 1, rid_signed = p[i], rid_is_signed = 1, old = PS_RUNNING, new_ = PS_IDLE; break;
        case 12: proc = 1, rid = a[0], old = x[0] == PROC_SYSCALL_ABANDONED ? PS_IDLE : PS_RUNNING, new_ = PS_IDLE; break;
        case 13:
            proc = 1, rid = a[0], old = (int)x[0], new_ = a[1] < 5 ? PROC_STATUS_STATE[a[1]] : 0;
            break;
        case 14: case 47:
            rid = a[0], old = GS_NOT_EXIST, new_ = c == 47 ? GS_WAITING : GS_RUNNABLE, has_t = 1, tstack = a[1];
            break;
        case 15: rid = a[0], old = GS_NOT_EXIST, new_ = GS_SYSCALL; break;
        case 16: rid = a[0], old = GS_RUNNABLE, new_ = GS_RUNNING; break;
        case 17: rid_signed = g[i], rid_is_signed = 1, old = GS_RUNNING, new_ = GS_NOT_EXIST; break;
        case 18: rid_signed = g[i], rid_is_signed = 1, old = GS_SYSCALL, new_ = GS_NOT_EXIST; break;
        case 19: case 20:
            rid_signed = g[i], rid_is_signed = 1, old = GS_RUNNING, new_ = c == 19 ? GS_RUNNABLE : GS_WAITING;
            reason = a[0], has_t = a[1] != 0, tstack = a[1];
            break;
        case 21: case 45: case 46: rid = a[0], old = GS_WAITING, new_ = GS_RUNNABLE; break;
        case 22: rid_signed = g[i], rid_is_signed = 1, old = GS_RUNNING, new_ = GS_SYSCALL, has_t = a[1] != 0, tstack = a[1]; break;
        case 23: rid_signed = g[i], rid_is_signed = 1, old = GS_SYSCALL, new_ = GS_RUNNING; break;
        case 24: rid_signed = g[i], rid_is_signed = 1, old = GS_SYSCALL, new_ = GS_RUNNABLE; break;
        case 25: case 48:
            rid = a[0], old = (int)x[0], new_ = a[2] < 5 ? GO_STATUS_STATE[a[2]] : 0;
            has_t = c == 48 && a[3] != 0, tstack = c == 48 ? a[3] : 0;
            break;
        case 9: case 37: case 38: case 40: case 42: case 43: case 44:
            if (annotation_line(&b, c, time[i], g[i], p[i], m[i], a, has_wall, wall_base, &cached_sec, sec_text,
                                &sec_len, rstrings, rstacks, strings, stacks, miss))
                goto fail;
            continue;
        default: {
            PyObject *line = PyObject_CallFunction(other, "n", (Py_ssize_t)i);
            if (!line)
                goto done;
            Py_ssize_t len;
            const char *s = PyUnicode_AsUTF8AndSize(line, &len);
            int r = s ? buf_put(&b, s, (size_t)len) : -1;
            Py_DECREF(line);
            if (r || PUTS(&b, "\n"))
                goto fail;
            continue;
        }
        }
        if (old < 0 || old > 5 || (proc && old > 3))
            old = 0;
        line_head(&b, "StateTransition", time[i], g[i], p[i], m[i], has_wall, wall_base, &cached_sec, sec_text,
                  &sec_len);
        if (proc)
            PUTS(&b, ", \"resource\": \"proc\", \"id\": ");
        else
            PUTS(&b, ", \"resource\": \"goroutine\", \"id\": ");
        if (rid_is_signed)
            buf_i64(&b, rid_signed);
        else
            buf_u64(&b, rid);
        const char *on = proc ? PS_NAMES[old] : GS_NAMES[old], *nn = proc ? PS_NAMES[new_] : GS_NAMES[new_];
        PUTS(&b, ", \"from\": \"");
        buf_put(&b, on, strlen(on));
        PUTS(&b, "\", \"to\": \"");
        buf_put(&b, nn, strlen(nn));
        PUTS(&b, "\", \"reason\": ");
        if (reason) {
            if (put_part(&b, rstrings, strings, miss, "string", reason))
                goto done;
        } else {
            PUTS(&b, "\"\"");
        }
        if (has_t || c == 14 || c == 47) {
            PUTS(&b, ", \"transition_stack\": ");
            if (tstack) {
                if (put_part(&b, rstacks, stacks, miss, "stack", tstack))
                    goto done;
            } else {
                PUTS(&b, "[]");
            }
        }
        PUTS(&b, ", \"stack\": ");
        int si = T_STACK[c];
        if (si != 255 && a[si]) {
            if (put_part(&b, rstacks, stacks, miss, "stack", a[si]))
                goto done;
        } else {
            PUTS(&b, "[]");
        }
        if (PUTS(&b, "}\n"))
            goto fail;
    }
    if (b.oom || _PyBytes_Resize(&b.obj, (Py_ssize_t)b.n))
        goto fail;
    result = b.obj;
    b.obj = NULL;
    goto done;
fail:
    if (!PyErr_Occurred())
        PyErr_NoMemory();
done:
    Py_XDECREF(b.obj);
    free(rstacks);
    free(rstrings);
    for (int k = 0; k < 7; k++)
        PyBuffer_Release(all[k]);
    return result;
}

/* init_tables(timed, nargs, stack, str0, str1): 256 bytes each */
static PyObject *init_tables(PyObject *self, PyObject *args) {
    Py_buffer b[5];
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &b[0], &b[1], &b[2], &b[3], &b[4]))
        return NULL;
    u8 *dst[5] = {T_TIMED, T_NARGS, T_STACK, T_STR0, T_STR1};
    int ok = 1;
    for (int i = 0; i < 5; i++) {
        if (b[i].len == 256)
            memcpy(dst[i], b[i].buf, 256);
        else
            ok = 0;
        PyBuffer_Release(&b[i]);
    }
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "tables must have 256 entries");
        return NULL;
    }
    for (int c = 0; c < 256; c++)
        if (T_NARGS[c] > NARGS || T_TIMED[c] > NARGS + 1) {
            PyErr_Format(PyExc_ValueError, "code %d has more arguments than the engine holds", c);
            return NULL;
        }
    tables_ready = 1;
    Py_RETURN_NONE;
}

/* _ccore_legacy.c */
PyObject *legacy_exact(PyObject *self, PyObject *args);

static PyMethodDef module_methods[] = {
    {"wire_records", wire_records, METH_VARARGS, "The records of one batch payload, as columns."},
    {"legacy_exact", legacy_exact, METH_VARARGS, "A complete Go 1.11-1.21 trace in the modern model, or None."},
    {"init_tables", init_tables, METH_VARARGS, "Hand over the format tables."},
    {"jsonl", jsonl, METH_VARARGS, "JSON lines for a batch's events (state transitions here, others by callback)."},
    {NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "livetrace._trace._ccore",
                                    "Compiled hot loops of the decoders: modern traces, and legacy ones of Go 1.11 to 1.21.", -1, module_methods};

PyMODINIT_FUNC PyInit__ccore(void) {
    if (PyType_Ready(&EngineType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    init_handlers();
    WireError = PyErr_NewException("livetrace._trace._ccore.WireError", NULL, NULL);
    Py_INCREF(&EngineType);
    if (PyModule_AddObject(m, "Engine", (PyObject *)&EngineType) < 0 ||
        PyModule_AddObject(m, "WireError", WireError) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
