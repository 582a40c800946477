/* The compiled fast path for legacy traces of Go 1.11 to 1.21: a complete
 * trace (or segment) in, its events in the modern event model out, as
 * columns. It is the twin of _legacy_wire, _legacy_decoder and
 * _legacy_model together, for valid traces only: at the first thing that is
 * not as a valid trace has it, it gives up (returns None) and the Python
 * twin decodes the trace again and reports the error, so errors are the
 * twin's by construction. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_ccore_common.h"

/* legacy event types (_legacy_spec) */
enum {
    L_BATCH = 1, L_FREQUENCY = 2, L_STACK = 3, L_GOMAXPROCS = 4, L_PROC_START = 5, L_PROC_STOP = 6,
    L_GC_START = 7, L_GC_DONE = 8, L_STW_START = 9, L_STW_DONE = 10, L_SWEEP_START = 11, L_SWEEP_DONE = 12,
    L_GO_CREATE = 13, L_GO_START = 14, L_GO_END = 15, L_GO_STOP = 16, L_GO_SCHED = 17, L_GO_PREEMPT = 18,
    L_GO_SLEEP = 19, L_GO_BLOCK = 20, L_GO_UNBLOCK = 21, L_BLOCK_SEND = 22, L_BLOCK_RECV = 23,
    L_BLOCK_SELECT = 24, L_BLOCK_SYNC = 25, L_BLOCK_COND = 26, L_BLOCK_NET = 27, L_SYSCALL = 28,
    L_SYS_EXIT = 29, L_SYS_BLOCK = 30, L_GO_WAITING = 31, L_IN_SYSCALL = 32, L_HEAP_ALLOC = 33,
    L_HEAP_GOAL = 34, L_TIMER_G = 35, L_FUTILE = 36, L_STRING = 37, L_START_LOCAL = 38, L_UNBLOCK_LOCAL = 39,
    L_SYS_EXIT_LOCAL = 40, L_START_LABEL = 41, L_BLOCK_GC = 42, L_ASSIST_START = 43, L_ASSIST_DONE = 44,
    L_TASK_CREATE = 45, L_TASK_END = 46, L_REGION = 47, L_LOG = 48, L_CPU_SAMPLE = 49, L_COUNT = 50
};

#define TIMER_P 1000001
#define NETPOLL_P 1000002
#define SYSCALL_P 1000003
#define GC_P 1000004
#define PROFILE_P 1000005
#define U64MAX UINT64_MAX
#define NO_TASK UINT64_MAX
#define MAX_STRING 1000000

/* builtin string ids, in the order _legacy_fast hands them over */
enum {
    B_FOREVER, B_SLEEP, B_EMPTY, B_SEND, B_RECV, B_SELECT, B_SYNC, B_COND, B_NETWORK, B_ASSIST, B_GOSCHED,
    B_PREEMPTED, B_STW0, B_COUNT = B_STW0 + 17
};

/* ---- u64 -> u64: open addressing, no deletion ---- */
typedef struct {
    u64 *keys, *vals;
    u8 *used;
    size_t cap, len;
} UMap;


static u64 *um_find(const UMap *m, u64 k) {
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1, i = hmix(k) & mask;
    while (m->used[i]) {
        if (m->keys[i] == k)
            return &m->vals[i];
        i = (i + 1) & mask;
    }
    return NULL;
}

static int um_resize(UMap *m, size_t cap);

/* the value slot of k, made (with v0) if new; NULL: out of memory */
static u64 *um_slot(UMap *m, u64 k, u64 v0) {
    if ((m->len + 1) * 2 > m->cap && um_resize(m, m->cap ? m->cap * 2 : 64))
        return NULL;
    size_t mask = m->cap - 1, i = hmix(k) & mask;
    while (m->used[i]) {
        if (m->keys[i] == k)
            return &m->vals[i];
        i = (i + 1) & mask;
    }
    m->used[i] = 1;
    m->keys[i] = k;
    m->vals[i] = v0;
    m->len++;
    return &m->vals[i];
}

static int um_resize(UMap *m, size_t cap) {
    UMap n = {calloc(cap, 8), calloc(cap, 8), calloc(cap, 1), cap, 0};
    if (!n.keys || !n.vals || !n.used) {
        free(n.keys), free(n.vals), free(n.used);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->used[i])
            *um_slot(&n, m->keys[i], m->vals[i]) = m->vals[i];
    free(m->keys), free(m->vals), free(m->used);
    *m = n;
    return 0;
}

static void um_free(UMap *m) {
    free(m->keys), free(m->vals), free(m->used);
    memset(m, 0, sizeof *m);
}

/* ---- events ---- */

typedef struct {
    i64 ts, p;
    u64 g, stk, a[3];
    u32 msg; /* a user log's message: index into the messages */
    u8 typ;
} LEv;

typedef struct {
    LEv *ev;
    size_t n, cap, head;
    i64 p;
} Stream;

typedef struct {
    const u8 *d;
    size_t end;
    int ver;
    const u8 *counts, *stackf, *mask;
    const u64 *builtin;
    /* tables */
    UMap str_at;       /* string id -> offset << 24 | length (MAX_STRING < 2^20) */
    UMap stacks;       /* truncated stack id -> 1, for stacks with frames */
    PyObject *stack_list, *string_list, *messages;
    UMap timer_gs;
    u64 ticks_per_sec;
    /* streams, by P, in order of their first event */
    Stream *st;
    size_t nst, capst;
    UMap p_stream; /* P (as u64) -> stream index + 1 */
    /* ordered events */
    LEv *all;
    size_t nall, capall;
} L;

static void l_free(L *l) {
    um_free(&l->str_at), um_free(&l->stacks), um_free(&l->timer_gs), um_free(&l->p_stream);
    for (size_t i = 0; i < l->nst; i++)
        free(l->st[i].ev);
    free(l->st);
    free(l->all);
    Py_XDECREF(l->stack_list), Py_XDECREF(l->string_list), Py_XDECREF(l->messages);
}

static inline int uv(const u8 *p, size_t end, size_t *pos, u64 *out) {
    size_t i = *pos;
    u64 v = 0;
    unsigned shift = 0;
    while (i < end) {
        u8 b = p[i++];
        if (shift == 63 && b > 1)
            return 0;
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

static Stream *stream_of(L *l, i64 p) {
    u64 *s = um_slot(&l->p_stream, (u64)p, 0);
    if (!s)
        return NULL;
    if (!*s) {
        if (grow((void **)&l->st, &l->capst, l->nst + 1, sizeof(Stream)))
            return NULL;
        memset(&l->st[l->nst], 0, sizeof(Stream));
        l->st[l->nst].p = p;
        *s = ++l->nst;
    }
    return &l->st[*s - 1];
}

static inline i64 sgn(u64 v) { return (i64)v; }

static int is_ends_g(int t) {
    switch (t) {
    case L_GO_END: case L_GO_STOP: case L_GO_SCHED: case L_GO_PREEMPT: case L_GO_SLEEP: case L_GO_BLOCK:
    case L_BLOCK_SEND: case L_BLOCK_RECV: case L_BLOCK_SELECT: case L_BLOCK_SYNC: case L_BLOCK_COND:
    case L_BLOCK_NET: case L_SYS_BLOCK: case L_BLOCK_GC:
        return 1;
    }
    return 0;
}

static int is_blocking(int t) {
    return t == L_GO_SLEEP || t == L_GO_BLOCK || (t >= L_BLOCK_SEND && t <= L_BLOCK_NET) || t == L_BLOCK_GC;
}

/* Reads every event into the tables and the per-P streams (the twin:
 * LegacyReader and LegacyDecoder._event). 0: done; 1: give up; -1: error set. */
static int l_read(L *l, size_t pos) {
    const u8 *d = l->d;
    size_t end = l->end;
    i64 cur_p = 0, cur_ts = 0;
    u64 cur_g = 0;
    UMap last_g = {0};
    u64 vals[4 + 4 * 1000];
    int rc = 1;
    while (pos < end) {
        u8 b = d[pos++];
        int typ = b & 0x3f, narg = (b >> 6) + 1;
        if (typ == 0 || typ >= L_COUNT || !l->counts[typ] || typ == L_FUTILE)
            goto out;
        if (typ == L_STRING) {
            u64 sid, n;
            if (!uv(d, end, &pos, &sid) || !uv(d, end, &pos, &n) || sid == 0 || n == 0 || n > MAX_STRING ||
                end - pos < n || um_find(&l->str_at, sid))
                goto out;
            if (!um_slot(&l->str_at, sid, ((u64)pos << 24) | n))
                goto oom;
            PyObject *t = Py_BuildValue("(Ky#)", (unsigned long long)sid, (const char *)d + pos, (Py_ssize_t)n);
            if (!t || PyList_Append(l->string_list, t)) {
                Py_XDECREF(t);
                rc = -1;
                goto out;
            }
            Py_DECREF(t);
            pos += n;
            continue;
        }
        size_t nv = 0;
        if (narg < 4) {
            for (int k = 0; k < narg; k++)
                if (!uv(d, end, &pos, &vals[nv++]))
                    goto out;
        } else {
            u64 len;
            if (!uv(d, end, &pos, &len))
                goto out;
            size_t vstart = pos;
            while (len > pos - vstart) {
                if (nv == sizeof vals / sizeof vals[0] || !uv(d, end, &pos, &vals[nv++]))
                    goto out;
            }
            if (len != pos - vstart)
                goto out;
        }
        size_t msg_at = 0, msg_len = 0;
        if (typ == L_LOG) {
            u64 n;
            if (!uv(d, end, &pos, &n) || n > MAX_STRING || end - pos < n)
                goto out;
            msg_at = pos, msg_len = n;
            pos += n;
        }
        if (typ != L_STACK && nv != l->counts[typ])
            goto out;
        switch (typ) {
        case L_BATCH: {
            u64 *s = um_slot(&last_g, (u64)cur_p, 0);
            if (!s)
                goto oom;
            *s = cur_g;
            cur_p = sgn(vals[0]);
            u64 *g = um_find(&last_g, (u64)cur_p);
            cur_g = g ? *g : 0;
            if (vals[1] > (u64)1 << 61)
                goto out;
            cur_ts = (i64)vals[1];
            continue;
        }
        case L_FREQUENCY:
            if (vals[0] == 0 || vals[0] > (u64)INT64_MAX)
                goto out;
            l->ticks_per_sec = vals[0];
            continue;
        case L_TIMER_G:
            if (!um_slot(&l->timer_gs, vals[0], 1))
                goto oom;
            continue;
        case L_STACK: {
            if (nv < 2 || vals[1] > 1000 || nv != 2 + 4 * vals[1])
                goto out;
            if (vals[0] && vals[1]) {
                if (!um_slot(&l->stacks, vals[0] & 0xffffffffu, 1))
                    goto oom;
                PyObject *frames = PyTuple_New((Py_ssize_t)(nv - 2));
                if (!frames) {
                    rc = -1;
                    goto out;
                }
                for (size_t k = 2; k < nv; k++) {
                    PyObject *v = PyLong_FromUnsignedLongLong(vals[k]);
                    if (!v) {
                        Py_DECREF(frames);
                        rc = -1;
                        goto out;
                    }
                    PyTuple_SET_ITEM(frames, (Py_ssize_t)(k - 2), v);
                }
                PyObject *t = Py_BuildValue("(KN)", (unsigned long long)vals[0], frames);
                if (!t || PyList_Append(l->stack_list, t)) {
                    Py_XDECREF(t);
                    rc = -1;
                    goto out;
                }
                Py_DECREF(t);
            }
            continue;
        }
        }
        LEv e = {0};
        e.typ = (u8)typ;
        e.p = cur_p;
        e.g = cur_g;
        if (vals[0] > (u64)1 << 61 || cur_ts > (i64)1 << 61)
            goto out; /* times this far out would overflow on the way: the twin judges */
        e.ts = cur_ts + (i64)vals[0];
        cur_ts = e.ts;
        size_t nrest = nv - 1;
        if (l->stackf[typ])
            e.stk = vals[--nv], nrest--;
        if (nrest > 3)
            goto out;
        for (size_t k = 0; k < nrest; k++)
            e.a[k] = vals[1 + k];
        switch (typ) {
        case L_GO_START: case L_START_LOCAL: case L_START_LABEL:
            cur_g = e.g = e.a[0];
            break;
        case L_STW_START:
            if (l->ver < 1021 && e.a[0] >= 2)
                goto out;
            break;
        case L_SYS_EXIT: case L_GO_WAITING: case L_IN_SYSCALL:
            e.g = e.a[0];
            break;
        case L_LOG: {
            PyObject *m = PyBytes_FromStringAndSize((const char *)d + msg_at, (Py_ssize_t)msg_len);
            if (!m || PyList_Append(l->messages, m)) {
                Py_XDECREF(m);
                rc = -1;
                goto out;
            }
            Py_DECREF(m);
            e.msg = (u32)(PyList_GET_SIZE(l->messages) - 1);
            break;
        }
        case L_CPU_SAMPLE:
            if (e.a[0] > (u64)1 << 61)
                goto out;
            e.ts = (i64)e.a[0];
            e.p = sgn(e.a[1]);
            e.g = e.a[2];
            e.a[0] = 0;
            break;
        default:
            if (is_ends_g(typ))
                cur_g = 0;
        }
        /* values the columns (int64) or the sequence arithmetic (wrapping)
         * would not carry as the twin's Python ints do */
        if (e.g > (u64)INT64_MAX || (typ == L_PROC_START && e.a[0] > (u64)INT64_MAX) ||
            ((typ == L_GO_START || typ == L_START_LABEL || typ == L_GO_UNBLOCK || typ == L_SYS_EXIT) &&
             e.a[1] == U64MAX) ||
            (typ == L_GC_START && e.a[0] == U64MAX))
            goto out;
        Stream *s = stream_of(l, typ == L_CPU_SAMPLE ? PROFILE_P : cur_p);
        if (!s || grow((void **)&s->ev, &s->cap, s->n + 1, sizeof(LEv)))
            goto oom;
        s->ev[s->n++] = e;
    }
    rc = (l->nst && l->ticks_per_sec) ? 0 : 1;
    goto out;
oom:
    PyErr_NoMemory();
    rc = -1;
out:
    um_free(&last_g);
    return rc;
}

/* ---- order (twin: _order_1007) ---- */

enum { G_DEAD, G_RUNNABLE, G_RUNNING, G_WAITING };
#define UNORDERED U64MAX
#define GARBAGE (U64MAX - 1)
#define NOSEQ U64MAX
#define SEQINC (U64MAX - 1)

typedef struct {
    u64 key, seq, nseq;
    int status, nstatus;
} Tr;

static Tr transition(const LEv *e) {
    Tr r = {UNORDERED, 0, 0, 0, 0};
    int t = e->typ;
    const u64 *a = e->a;
    if (t == L_GO_CREATE)
        r = (Tr){a[0], 0, 1, G_DEAD, G_RUNNABLE};
    else if (t == L_GO_WAITING || t == L_IN_SYSCALL)
        r = (Tr){e->g, 1, 2, G_RUNNABLE, G_WAITING};
    else if (t == L_GO_START || t == L_START_LABEL)
        r = (Tr){e->g, a[1], a[1] + 1, G_RUNNABLE, G_RUNNING};
    else if (t == L_START_LOCAL)
        r = (Tr){e->g, NOSEQ, SEQINC, G_RUNNABLE, G_RUNNING};
    else if (is_blocking(t) || t == L_SYS_BLOCK)
        r = (Tr){e->g, NOSEQ, NOSEQ, G_RUNNING, G_WAITING};
    else if (t == L_GO_SCHED || t == L_GO_PREEMPT)
        r = (Tr){e->g, NOSEQ, NOSEQ, G_RUNNING, G_RUNNABLE};
    else if (t == L_GO_UNBLOCK || t == L_SYS_EXIT)
        r = (Tr){a[0], a[1], a[1] + 1, G_WAITING, G_RUNNABLE};
    else if (t == L_UNBLOCK_LOCAL || t == L_SYS_EXIT_LOCAL)
        r = (Tr){a[0], NOSEQ, SEQINC, G_WAITING, G_RUNNABLE};
    else if (t == L_GC_START)
        r = (Tr){GARBAGE, a[0], a[0] + 1, G_DEAD, G_DEAD};
    return r;
}

typedef struct {
    i64 ts;
    u64 tie;
    size_t s;
} HE;

static inline int he_less(const HE *x, const HE *y) { return x->ts < y->ts || (x->ts == y->ts && x->tie < y->tie); }

typedef struct {
    HE *h;
    size_t n, cap;
} Heap;

static int heap_push(Heap *q, HE v) {
    if (grow((void **)&q->h, &q->cap, q->n + 1, sizeof(HE)))
        return -1;
    size_t i = q->n++;
    while (i) {
        size_t up = (i - 1) / 2;
        if (!he_less(&v, &q->h[up]))
            break;
        q->h[i] = q->h[up];
        i = up;
    }
    q->h[i] = v;
    return 0;
}

static HE heap_pop(Heap *q) {
    HE top = q->h[0], last = q->h[--q->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->n)
            break;
        if (c + 1 < q->n && he_less(&q->h[c + 1], &q->h[c]))
            c++;
        if (!he_less(&q->h[c], &last))
            break;
        q->h[i] = q->h[c];
        i = c;
    }
    if (q->n)
        q->h[i] = last;
    return top;
}

/* per-key state: seq and status packed; waiting streams as a linked list */
typedef struct {
    UMap seq, status, wait_head; /* wait_head: key -> first node + 1 */
    size_t *next, *stream;       /* nodes */
    size_t nnode, capn, capn2;
} Order;

static int sort_by_ts(LEv *ev, size_t n);

static int l_order(L *l) {
    /* CPU samples come in the order they were flushed: put them in time order */
    u64 *ps = um_find(&l->p_stream, (u64)(i64)PROFILE_P);
    if (ps && sort_by_ts(l->st[*ps - 1].ev, l->st[*ps - 1].n))
        return -1;
    size_t total = 0;
    for (size_t s = 0; s < l->nst; s++)
        total += l->st[s].n;
    if (grow((void **)&l->all, &l->capall, total + 1, sizeof(LEv)))
        return -1;
    Order o = {0};
    Heap q = {0};
    u64 tie = 0;
    int rc = 1;
#define OFFER(S)                                                                                                    \
    do {                                                                                                            \
        Stream *st_ = &l->st[S];                                                                                    \
        if (st_->head < st_->n) {                                                                                   \
            LEv *e_ = &st_->ev[st_->head];                                                                          \
            Tr tr_ = transition(e_);                                                                                \
            int ready_ = 1;                                                                                         \
            if (tr_.key != UNORDERED) {                                                                             \
                u64 *cs_ = um_find(&o.seq, tr_.key), *cst_ = um_find(&o.status, tr_.key);                           \
                u64 cseq_ = cs_ ? *cs_ : 0, cstat_ = cst_ ? *cst_ : G_DEAD;                                         \
                if (!((tr_.seq == NOSEQ || tr_.seq == cseq_) && (u64)tr_.status == cstat_)) {                       \
                    ready_ = 0;                                                                                     \
                    if (grow((void **)&o.next, &o.capn, o.nnode + 1, sizeof(size_t)) ||                          \
                        grow((void **)&o.stream, &o.capn2, o.nnode + 1, sizeof(size_t)))                         \
                        goto oom;                                                                                   \
                    /* append at the tail: walk (lists are short) */                                                \
                    u64 *h_ = um_slot(&o.wait_head, tr_.key, 0);                                                    \
                    if (!h_)                                                                                        \
                        goto oom;                                                                                   \
                    o.stream[o.nnode] = (S);                                                                        \
                    o.next[o.nnode] = 0;                                                                            \
                    if (!*h_)                                                                                       \
                        *h_ = o.nnode + 1;                                                                          \
                    else {                                                                                          \
                        size_t k_ = *h_ - 1;                                                                        \
                        while (o.next[k_])                                                                          \
                            k_ = o.next[k_] - 1;                                                                    \
                        o.next[k_] = o.nnode + 1;                                                                   \
                    }                                                                                               \
                    o.nnode++;                                                                                      \
                }                                                                                                   \
            }                                                                                                       \
            if (ready_ && heap_push(&q, (HE){e_->ts, tie++, (S)}))                                                  \
                goto oom;                                                                                           \
        }                                                                                                           \
    } while (0)

    for (size_t s = 0; s < l->nst; s++)
        OFFER(s);
    while (l->nall < total) {
        if (!q.n)
            goto out; /* no consistent order: the twin says so */
        HE top = heap_pop(&q);
        size_t s = top.s;
        LEv *e = &l->st[s].ev[l->st[s].head++];
        Tr tr = transition(e);
        if (e->typ == L_START_LOCAL)
            e->typ = L_GO_START;
        else if (e->typ == L_UNBLOCK_LOCAL)
            e->typ = L_GO_UNBLOCK;
        else if (e->typ == L_SYS_EXIT_LOCAL)
            e->typ = L_SYS_EXIT;
        l->all[l->nall++] = *e;
        if (tr.key != UNORDERED) {
            u64 *cs = um_slot(&o.seq, tr.key, 0), *cst;
            if (!cs)
                goto oom;
            *cs = tr.nseq == NOSEQ ? *cs : tr.nseq == SEQINC ? *cs + 1 : tr.nseq;
            if (!(cst = um_slot(&o.status, tr.key, G_DEAD)))
                goto oom;
            *cst = (u64)tr.nstatus;
            u64 *h = um_find(&o.wait_head, tr.key);
            if (h && *h) {
                size_t k = *h - 1;
                *h = 0;
                for (;;) {
                    OFFER(o.stream[k]);
                    if (!o.next[k])
                        break;
                    k = o.next[k] - 1;
                }
            }
        }
        OFFER(s);
    }
#undef OFFER
    for (size_t i = 1; i < l->nall; i++)
        if (l->all[i - 1].ts > l->all[i].ts)
            goto out;
    /* a syscall exit happened when the syscall returned */
    {
        UMap last_block = {0};
        for (size_t i = 0; i < l->nall; i++) {
            LEv *e = &l->all[i];
            if (e->typ == L_SYS_BLOCK || e->typ == L_IN_SYSCALL) {
                u64 *v = um_slot(&last_block, e->g, 0);
                if (!v) {
                    um_free(&last_block);
                    goto oom;
                }
                *v = (u64)e->ts;
            } else if (e->typ == L_SYS_EXIT && e->a[2]) {
                u64 *v = um_find(&last_block, e->g);
                if (!v || !*v || e->a[2] < *v || e->a[2] > (u64)1 << 61) {
                    um_free(&last_block);
                    goto out;
                }
                e->ts = (i64)e->a[2];
            }
        }
        um_free(&last_block);
    }
    rc = sort_by_ts(l->all, l->nall) ? -1 : 0;
    goto out;
oom:
    PyErr_NoMemory();
    rc = -1;
out:
    um_free(&o.seq), um_free(&o.status), um_free(&o.wait_head);
    free(o.next), free(o.stream), free(q.h);
    return rc;
}

/* stable merge sort by ts */
static int sort_by_ts(LEv *ev, size_t n) {
    int sorted = 1;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = ev[i - 1].ts <= ev[i].ts;
    if (sorted)
        return 0;
    LEv *tmp = malloc(n * sizeof(LEv));
    if (!tmp) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = ev[j].ts < ev[i].ts ? ev[j++] : ev[i++];
            while (i < mid)
                tmp[k++] = ev[i++];
            while (j < hi)
                tmp[k++] = ev[j++];
        }
        memcpy(ev, tmp, n * sizeof(LEv));
    }
    free(tmp);
    return 0;
}

/* ---- checks (twin: _check_states); 1: give up ---- */

static int str_eq(L *l, u64 a, u64 b) {
    if (a == b)
        return 1;
    u64 *x = um_find(&l->str_at, a), *y = um_find(&l->str_at, b);
    size_t nx = x ? (size_t)(*x & 0xffffff) : 0, ny = y ? (size_t)(*y & 0xffffff) : 0;
    return nx == ny && (!nx || !memcmp(l->d + (*x >> 24), l->d + (*y >> 24), nx));
}

typedef struct {
    u64 *task, *name;
    size_t n, cap, cap2;
} RegionStack;

static int l_check(L *l) {
    UMap gstate = {0}, glast = {0}, prun = {0}, pg = {0}, psweep = {0}, tasks = {0}, assists = {0}, reg = {0};
    RegionStack *rs = NULL;
    size_t nrs = 0, caprs = 0;
    int gc_on = 0, stw_on = 0, rc = 1;
    if (!um_slot(&gstate, 0, G_RUNNING))
        goto oom;
    for (size_t i = 0; i < l->nall; i++) {
        LEv *e = &l->all[i];
        int t = e->typ;
        u64 key = (t == L_GC_START || t == L_GC_DONE || t == L_STW_START || t == L_STW_DONE) ? 0 : e->g;
        u64 *gs = um_slot(&gstate, key, G_DEAD), *gl = um_slot(&glast, key, 0);
        u64 *pr = um_slot(&prun, (u64)e->p, 0), *pgv = um_slot(&pg, (u64)e->p, 0);
        u64 *psw = um_slot(&psweep, (u64)e->p, 0);
        if (!gs || !gl || !pr || !pgv || !psw)
            goto oom;
#define RUNNING(ALLOW0) if (*gs != G_RUNNING || *pgv != e->g || (!(ALLOW0) && e->g == 0)) goto out
        switch (t) {
        case L_PROC_START:
            if (*pr)
                goto out;
            *pr = 1;
            break;
        case L_PROC_STOP:
            if (!*pr || *pgv)
                goto out;
            *pr = 0;
            break;
        case L_GC_START:
            if (gc_on)
                goto out;
            gc_on = 1;
            e->p = GC_P;
            break;
        case L_GC_DONE:
            if (!gc_on)
                goto out;
            gc_on = 0;
            break;
        case L_STW_START: case L_STW_DONE:
            if ((t == L_STW_START) == stw_on)
                goto out;
            stw_on = t == L_STW_START;
            break;
        case L_SWEEP_START:
            if (*psw)
                goto out;
            *psw = 1;
            break;
        case L_SWEEP_DONE:
            if (!*psw)
                goto out;
            *psw = 0;
            break;
        case L_ASSIST_START: {
            u64 *a = um_slot(&assists, e->g, 0);
            if (!a)
                goto oom;
            if (*a)
                goto out;
            *a = 1;
            break;
        }
        case L_ASSIST_DONE: {
            u64 *a = um_find(&assists, e->g);
            if (a)
                *a = 0;
            break;
        }
        case L_GO_WAITING: case L_IN_SYSCALL:
            if (*gs != G_RUNNABLE)
                goto out;
            *gs = G_WAITING, *gl = (u64)t;
            break;
        case L_GO_CREATE: {
            RUNNING(1);
            if (um_find(&gstate, e->a[0]))
                goto out;
            u64 *ns = um_slot(&gstate, e->a[0], G_RUNNABLE), *nl = um_slot(&glast, e->a[0], 0);
            if (!ns || !nl)
                goto oom;
            *ns = G_RUNNABLE, *nl = (u64)t;
            break;
        }
        case L_GO_START: case L_START_LABEL:
            if (*gs != G_RUNNABLE || *pgv)
                goto out;
            *gs = G_RUNNING, *gl = 0;
            *pgv = e->g;
            break;
        case L_GO_END: case L_GO_STOP:
            RUNNING(0);
            *gs = G_DEAD, *pgv = 0;
            if (t == L_GO_END) {
                u64 *r = um_find(&reg, e->g);
                if (r && *r)
                    rs[*r - 1].n = 0;
            }
            break;
        case L_GO_SCHED: case L_GO_PREEMPT:
            RUNNING(0);
            *gs = G_RUNNABLE, *gl = (u64)t, *pgv = 0;
            break;
        case L_GO_UNBLOCK: {
            if (*gs != G_RUNNING || (e->p != TIMER_P && *pgv != e->g))
                goto out;
            u64 *ts = um_slot(&gstate, e->a[0], G_DEAD), *tl = um_slot(&glast, e->a[0], 0);
            if (!ts || !tl)
                goto oom;
            if (*ts != G_WAITING)
                goto out;
            if (*tl == L_BLOCK_NET && e->p != TIMER_P)
                e->p = NETPOLL_P;
            *ts = G_RUNNABLE, *tl = (u64)t;
            break;
        }
        case L_SYSCALL:
            RUNNING(0);
            *gl = (u64)t;
            break;
        case L_SYS_BLOCK:
            RUNNING(0);
            *gs = G_WAITING, *pgv = 0;
            break;
        case L_SYS_EXIT:
            if (*gs != G_WAITING)
                goto out;
            *gs = G_RUNNABLE, *gl = (u64)t;
            break;
        case L_TASK_CREATE: {
            u64 *k = um_slot(&tasks, e->a[0], 0);
            if (!k)
                goto oom;
            if (*k)
                goto out;
            *k = 1;
            break;
        }
        case L_TASK_END: {
            u64 *k = um_find(&tasks, e->a[0]);
            if (k)
                *k = 0;
            break;
        }
        case L_REGION: {
            u64 *r = um_slot(&reg, e->g, 0);
            if (!r)
                goto oom;
            if (!*r) {
                if (grow((void **)&rs, &caprs, nrs + 1, sizeof(RegionStack)))
                    goto oom;
                memset(&rs[nrs], 0, sizeof(RegionStack));
                *r = ++nrs;
            }
            RegionStack *st = &rs[*r - 1];
            if (e->a[1] == 0) {
                if (grow((void **)&st->task, &st->cap, st->n + 1, 8) ||
                    grow((void **)&st->name, &st->cap2, st->n + 1, 8))
                    goto oom;
                st->task[st->n] = e->a[0], st->name[st->n] = e->a[2];
                st->n++;
            } else if (e->a[1] == 1) {
                if (st->n) {
                    if (st->task[st->n - 1] != e->a[0] || !str_eq(l, st->name[st->n - 1], e->a[2]))
                        goto out;
                    st->n--;
                }
            } else
                goto out;
            break;
        }
        default:
            if (is_blocking(t)) {
                RUNNING(0);
                *gs = G_WAITING, *gl = (u64)t, *pgv = 0;
            }
        }
#undef RUNNING
    }
    rc = 0;
    goto out;
oom:
    PyErr_NoMemory();
    rc = -1;
out:
    um_free(&gstate), um_free(&glast), um_free(&prun), um_free(&pg), um_free(&psweep), um_free(&tasks);
    um_free(&assists), um_free(&reg);
    for (size_t i = 0; i < nrs; i++)
        free(rs[i].task), free(rs[i].name);
    free(rs);
    return rc;
}

/* ---- the modern model (twin: ModelConverter, legacy_events) ---- */

typedef struct {
    u8 *code;
    i64 *time, *m, *p, *g;
    u64 *args, *extra;
    size_t n, cap;
    const u8 *mask;
    i64 last, offset; /* offset: added to every time written (segments stitched together) */
} Cols;

static int col_put(Cols *c, int code, i64 t, i64 m, i64 p, i64 g, u64 a0, u64 a1, u64 a2, u64 a3, u64 x0,
                   u64 x1, int bump) {
    if (bump) {
        if (t <= c->last)
            t = c->last + 1;
        c->last = t;
    }
    if (!c->mask[code])
        return 0;
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 4096;
        void *p1 = realloc(c->code, nc), *p2 = realloc(c->time, nc * 8), *p3 = realloc(c->m, nc * 8),
             *p4 = realloc(c->p, nc * 8), *p5 = realloc(c->g, nc * 8), *p6 = realloc(c->args, nc * 32),
             *p7 = realloc(c->extra, nc * 16);
        if (p1) c->code = p1;
        if (p2) c->time = p2;
        if (p3) c->m = p3;
        if (p4) c->p = p4;
        if (p5) c->g = p5;
        if (p6) c->args = p6;
        if (p7) c->extra = p7;
        if (!p1 || !p2 || !p3 || !p4 || !p5 || !p6 || !p7)
            return -1;
        c->cap = nc;
    }
    size_t i = c->n++;
    c->code[i] = (u8)code, c->time[i] = t + c->offset, c->m[i] = m, c->p[i] = p, c->g[i] = g;
    u64 *a = &c->args[4 * i], *x = &c->extra[2 * i];
    a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3, x[0] = x0, x[1] = x1;
    return 0;
}

static void cols_free(Cols *c) {
    free(c->code), free(c->time), free(c->m), free(c->p), free(c->g), free(c->args), free(c->extra);
}

/* modern codes */
enum {
    M_CPU = 7, M_PROCS = 9, M_PSTART = 10, M_PSTOP = 11, M_PSTATUS = 13, M_GCREATE = 14, M_GSTART = 16,
    M_GDESTROY = 17, M_GSTOP = 19, M_GBLOCK = 20, M_GUNBLOCK = 21, M_SCBEGIN = 22, M_SCEND = 23,
    M_SCENDB = 24, M_GSTATUS = 25, M_STWB = 26, M_STWE = 27, M_GCB = 29, M_GCE = 30, M_SWB = 32, M_SWE = 33,
    M_MAB = 35, M_MAE = 36, M_HEAP = 37, M_GOAL = 38, M_LABEL = 39, M_TASKB = 40, M_TASKE = 41, M_REGB = 42,
    M_REGE = 43, M_LOG = 44, M_SYNC = 255
};

static int has_str(L *l, u64 id) { return id == 0 || um_find(&l->str_at, id) != NULL; }

static int l_convert(L *l, Cols *c, u64 msg_base, u64 syncs) {
    size_t n = l->nall;
    LEv *ev = l->all;
    const u64 *B = l->builtin;
    int rc = 1;
    UMap next_g = {0}, created = {0}, seen = {0}, pms = {0}, tasks_name = {0}, tasks_parent = {0};
    size_t *after = NULL;
    u64 *order = NULL;
    size_t norder = 0, caporder = 0;
    int pre_init = 1;
    u64 stw_reason = B[B_STW0];
    if (!n)
        goto out;
    /* double: the same as the twin's float arithmetic */
    double npt = 1e9 / (double)l->ticks_per_sec;
    i64 min_ts = ev[0].ts;
    for (size_t i = 0; i < n; i++) {
        double v = (double)(ev[i].ts - min_ts) * npt;
        if (!(v < 9.0e18 && v > -9.0e18))
            goto out;
        ev[i].ts = (i64)v;
        if (ev[i].typ == L_GO_UNBLOCK && um_find(&l->timer_gs, ev[i].g))
            ev[i].p = TIMER_P;
        if (ev[i].typ == L_SYS_EXIT)
            ev[i].p = SYSCALL_P;
    }
    int chk = l_check(l);
    if (chk) {
        rc = chk;
        goto out;
    }
    /* the next event on the same goroutine: whether a syscall blocked */
    if (!(after = malloc(n * sizeof(size_t))))
        goto oom;
    for (size_t i = n; i-- > 0;) {
        u64 *v = um_slot(&next_g, ev[i].g, n);
        if (!v)
            goto oom;
        after[i] = (size_t)*v;
        *v = i;
    }
    if (col_put(c, M_SYNC, ev[0].ts - 1, -1, -1, -1, syncs + 1, 0, 0, 0, 0, 0, 0))
        goto oom;
    for (size_t i = 0; i < n; i++) {
        LEv *e = &ev[i];
        int t = e->typ;
        const u64 *a = e->a;
        i64 p = e->p, ts = e->ts;
        u64 *pm = p != -1 ? um_find(&pms, (u64)p) : NULL;
        i64 m = pm ? (i64)*pm : -1;
        i64 g = e->g ? (i64)e->g : -1;
        u64 s32 = e->stk & 0xffffffffu;
        u64 stk = um_find(&l->stacks, s32) ? s32 : 0;
        int r = 0;
#define PUT(CODE, M, G, A0, A1, A2, A3, X0, X1) r = col_put(c, CODE, ts, M, p, G, A0, A1, A2, A3, X0, X1, 1)
        switch (t) {
        case L_GOMAXPROCS:
            if (pre_init) {
                pre_init = 0;
                for (size_t k = 0; k < norder && !r; k++) {
                    u64 *alive = um_find(&created, order[k]);
                    if (alive && *alive == k + 1)
                        r = col_put(c, M_GSTATUS, ts, -1, -1, -1, order[k], U64MAX, 1, 0, 0, 0, 1);
                }
                norder = 0;
                um_free(&created);
            } else
                PUT(M_PROCS, m, g, a[0], stk, 0, 0, 0, 0);
            break;
        case L_GO_CREATE:
            if (pre_init) {
                u64 *v = um_slot(&created, a[0], 0);
                if (!v || grow((void **)&order, &caporder, norder + 1, 8))
                    goto oom;
                if (!*v) {
                    order[norder++] = a[0];
                    *v = norder;
                }
            } else
                PUT(M_GCREATE, m, g, a[0], a[1], stk, 0, 0, 0);
            break;
        case L_PROC_START: {
            u64 *v = um_slot(&pms, (u64)p, 0), *sv;
            if (!v)
                goto oom;
            *v = a[0];
            m = p != -1 ? (i64)a[0] : -1;
            if (!(sv = um_slot(&seen, (u64)p, 0)))
                goto oom;
            if (*sv)
                PUT(M_PSTART, m, g, (u64)p, 0, 0, 0, 0, 0);
            else {
                *sv = 1;
                PUT(M_PSTATUS, m, g, (u64)p, 1, 0, 0, 0, 0);
            }
            break;
        }
        case L_PROC_STOP: {
            u64 *v = um_find(&pms, (u64)p), *sv;
            if (v)
                *v = (u64)-1; /* no thread any more (no real thread id is this: see l_read) */
            if (!(sv = um_slot(&seen, (u64)p, 0)))
                goto oom;
            if (*sv)
                PUT(M_PSTOP, m, g, 0, 0, 0, 0, 0, 0);
            else {
                *sv = 1;
                PUT(M_PSTATUS, m, g, (u64)p, 2, 0, 0, 0, 0);
            }
            break;
        }
        case L_GC_START: PUT(M_GCB, m, g, a[0], stk, 0, 0, 0, 0); break;
        case L_GC_DONE: PUT(M_GCE, m, g, 0, 0, 0, 0, 0, 0); break;
        case L_STW_START: {
            int k = l->ver < 1021 ? (int)a[0] + 1 : (a[0] < 17 ? (int)a[0] : 0);
            stw_reason = B[B_STW0 + k];
            PUT(M_STWB, m, g, stw_reason, 0, 0, 0, 0, 0);
            break;
        }
        case L_STW_DONE: PUT(M_STWE, m, g, stw_reason, 0, 0, 0, 0, 0); break;
        case L_SWEEP_START: PUT(M_SWB, m, g, stk, 0, 0, 0, 0, 0); break;
        case L_SWEEP_DONE: PUT(M_SWE, m, g, a[0], a[1], 0, 0, 0, 0); break;
        case L_GO_START:
            if (pre_init) {
                u64 *v = um_find(&created, a[0]);
                if (v)
                    *v = 0;
                PUT(M_GSTATUS, m, g, a[0], U64MAX, 2, 0, 0, 0);
            } else
                PUT(M_GSTART, m, g, a[0], a[1], 0, 0, 0, 0);
            break;
        case L_START_LABEL: {
            u64 *v = um_find(&pms, (u64)p);
            i64 m0 = v && *v != (u64)-1 ? (i64)*v : 0;
            if (!has_str(l, a[2]))
                goto out;
            PUT(M_GSTART, m0, (i64)e->g, a[0], a[1], 0, 0, 0, 0);
            if (!r)
                PUT(M_LABEL, m0, (i64)e->g, a[2], 0, 0, 0, 0, 0);
            break;
        }
        case L_GO_END: PUT(M_GDESTROY, m, g, 0, 0, 0, 0, 0, 0); break;
        case L_GO_SCHED: PUT(M_GSTOP, m, g, B[B_GOSCHED], stk, 0, 0, 0, 0); break;
        case L_GO_PREEMPT: PUT(M_GSTOP, m, g, B[B_PREEMPTED], stk, 0, 0, 0, 0); break;
        case L_GO_STOP: PUT(M_GBLOCK, m, g, B[B_FOREVER], stk, 0, 0, 0, 0); break;
        case L_GO_SLEEP: PUT(M_GBLOCK, m, g, B[B_SLEEP], stk, 0, 0, 0, 0); break;
        case L_GO_BLOCK: PUT(M_GBLOCK, m, g, B[B_EMPTY], stk, 0, 0, 0, 0); break;
        case L_BLOCK_SEND: PUT(M_GBLOCK, m, g, B[B_SEND], stk, 0, 0, 0, 0); break;
        case L_BLOCK_RECV: PUT(M_GBLOCK, m, g, B[B_RECV], stk, 0, 0, 0, 0); break;
        case L_BLOCK_SELECT: PUT(M_GBLOCK, m, g, B[B_SELECT], stk, 0, 0, 0, 0); break;
        case L_BLOCK_SYNC: PUT(M_GBLOCK, m, g, B[B_SYNC], stk, 0, 0, 0, 0); break;
        case L_BLOCK_COND: PUT(M_GBLOCK, m, g, B[B_COND], stk, 0, 0, 0, 0); break;
        case L_BLOCK_NET: PUT(M_GBLOCK, m, g, B[B_NETWORK], stk, 0, 0, 0, 0); break;
        case L_BLOCK_GC: PUT(M_GBLOCK, m, g, B[B_ASSIST], stk, 0, 0, 0, 0); break;
        case L_GO_UNBLOCK: PUT(M_GUNBLOCK, m, g, a[0], a[1], stk, 0, 0, 0); break;
        case L_SYSCALL:
            if (after[i] < n && ev[after[i]].typ == L_SYS_BLOCK)
                PUT(M_SCBEGIN, m, g, 0, stk, 0, 0, 0, 0);
            else {
                u64 *v = um_find(&pms, (u64)p);
                i64 m0 = v && *v != (u64)-1 ? (i64)*v : 0;
                PUT(M_SCBEGIN, m0, (i64)e->g, 0, stk, 0, 0, 0, 0);
                if (!r)
                    r = col_put(c, M_SCEND, ts + 1, m0, p, (i64)e->g, 0, 0, 0, 0, 0, 0, 1);
            }
            break;
        case L_SYS_EXIT: PUT(M_SCENDB, m, g, 0, 0, 0, 0, 0, 0); break;
        case L_SYS_BLOCK: break;
        case L_GO_WAITING: case L_IN_SYSCALL: {
            u64 *v = um_find(&created, a[0]);
            if (v)
                *v = 0;
            PUT(M_GSTATUS, m, g, a[0], U64MAX, t == L_GO_WAITING ? 4 : 3, 0, 0, 0);
            break;
        }
        case L_HEAP_ALLOC: PUT(M_HEAP, m, g, a[0], 0, 0, 0, 0, 0); break;
        case L_HEAP_GOAL: PUT(M_GOAL, m, g, a[0], 0, 0, 0, 0, 0); break;
        case L_ASSIST_START: PUT(M_MAB, m, g, stk, 0, 0, 0, 0, 0); break;
        case L_ASSIST_DONE: PUT(M_MAE, m, g, 0, 0, 0, 0, 0, 0); break;
        case L_TASK_CREATE: {
            if (!has_str(l, a[2]))
                goto out;
            u64 *nm = um_slot(&tasks_name, a[0], 0), *pa = um_slot(&tasks_parent, a[0], 0);
            if (!nm || !pa)
                goto oom;
            *nm = a[2] + 1, *pa = a[1]; /* name id + 1: 0 is "no open task" */
            PUT(M_TASKB, m, g, a[0], a[1] ? a[1] : NO_TASK, a[2], stk, 0, 0);
            break;
        }
        case L_TASK_END: {
            u64 *nm = um_find(&tasks_name, a[0]), *pa = um_find(&tasks_parent, a[0]);
            u64 name = 0, parent = NO_TASK;
            if (nm && *nm) {
                name = *nm - 1, parent = *pa;
                *nm = 0;
            }
            /* extra[1]: the name's string id; Python makes it an extra string */
            PUT(M_TASKE, m, g, a[0], stk, 0, 0, parent, name);
            break;
        }
        case L_REGION:
            if (!has_str(l, a[2]))
                goto out;
            PUT(a[1] == 0 ? M_REGB : M_REGE, m, g, a[0], a[2], stk, 0, 0, 0);
            break;
        case L_LOG:
            if (!has_str(l, a[1]))
                goto out;
            PUT(M_LOG, m, g, a[0], a[1], msg_base + e->msg, stk, 0, 0);
            break;
        case L_CPU_SAMPLE: PUT(M_CPU, -1, g, stk, 0, 0, 0, 0, 0); break;
        default:
            goto out;
        }
#undef PUT
        if (r)
            goto oom;
    }
    if (col_put(c, M_SYNC, c->last + 1, -1, -1, -1, syncs + 2, 0, 0, 0, 0, 0, 0))
        goto oom;
    rc = 0;
    goto out;
oom:
    PyErr_NoMemory();
    rc = -1;
out:
    um_free(&next_g), um_free(&created), um_free(&seen), um_free(&pms), um_free(&tasks_name);
    um_free(&tasks_parent);
    free(after), free(order);
    return rc;
}

/* legacy_exact(data, ver, counts, stackflags, mask, builtin, msg_base, offset, syncs)
 *   -> None (the twin must decode it) or
 *      (codes, times, ms, ps, gs, args, extra, strings, stacks, ticks_per_sec, messages)
 * offset is added to every time, and the Syncs count on from syncs. */
PyObject *legacy_exact(PyObject *self, PyObject *args) {
    Py_buffer db, cb, sb, mb, bb;
    int ver;
    unsigned long long msg_base, syncs;
    long long offset;
    if (!PyArg_ParseTuple(args, "y*iy*y*y*y*KLK", &db, &ver, &cb, &sb, &mb, &bb, &msg_base, &offset, &syncs))
        return NULL;
    PyObject *res = NULL;
    L l = {0};
    Cols c = {0};
    if (cb.len < L_COUNT || sb.len < L_COUNT || mb.len < 256 || bb.len < (Py_ssize_t)(B_COUNT * 8) || db.len < 16)
        goto done_none;
    l.d = db.buf, l.end = (size_t)db.len, l.ver = ver;
    l.counts = cb.buf, l.stackf = sb.buf, l.mask = mb.buf, l.builtin = bb.buf;
    l.stack_list = PyList_New(0), l.string_list = PyList_New(0), l.messages = PyList_New(0);
    if (!l.stack_list || !l.string_list || !l.messages)
        goto done;
    int rc = l_read(&l, 16);
    if (rc < 0)
        goto done;
    if (rc)
        goto done_none;
    rc = l_order(&l);
    if (rc < 0)
        goto done;
    if (rc)
        goto done_none;
    c.mask = l.mask, c.last = -1, c.offset = (i64)offset;
    rc = l_convert(&l, &c, msg_base, syncs);
    if (rc < 0)
        goto done;
    if (rc)
        goto done_none;
    Py_ssize_t n = (Py_ssize_t)c.n;
    res = Py_BuildValue("(y#y#y#y#y#y#NOOKO)", (const char *)c.code, n, (const char *)c.time, n * 8,
                        (const char *)c.m, n * 8, (const char *)c.p, n * 8, (const char *)c.g, n * 8,
                        (const char *)c.args, n * 32, PyByteArray_FromStringAndSize((const char *)c.extra, n * 16),
                        l.string_list, l.stack_list, (unsigned long long)l.ticks_per_sec, l.messages);
    goto done;
done_none:
    res = Py_None;
    Py_INCREF(res);
done:
    l_free(&l);
    cols_free(&c);
    PyBuffer_Release(&db), PyBuffer_Release(&cb), PyBuffer_Release(&sb), PyBuffer_Release(&mb);
    PyBuffer_Release(&bb);
    return res;
}
