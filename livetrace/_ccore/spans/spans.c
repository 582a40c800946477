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
    /* Split mode (an entry per goroutine then): regions from before it ended,
     * whether its exit ended the rest, and its latest RDep + 1. */
    u64 pops, rchain;
    int cleared;
} Regions;

/* Split mode: a span emitted whose names may be those of a region begun
 * before. Nearly every state span has one, so it is packed (16 bytes, not
 * 32: a generation's were most of what its builder held besides the spans). */
typedef struct {
    i32 depth;
    u32 batch, row;
    u32 next; /* the goroutine's previous RDep + 1 */
} RDep;

#define NAME_CACHE 4096 /* string ids below this have their name id cached per tables */

/* Split mode's records, numbered as in _trace/spans/twin.py (FT_G to ORIGIN; BEGIN, ACTIVE, END). */
enum { FT_G, FT_P, FT_GC, FT_STW, FT_MA, FT_TASK, FT_REGPOP, DEP_REGION, DEP_TASK, ORIGIN };
enum { BEGIN, ACTIVE, END };
/* Where an open span is kept, numbered as in _trace/spans/twin.py (IN_STATES to IN_STW). */
enum { IN_STATES, IN_ASSISTS, IN_TASKS, IN_PROCS, IN_REGIONS, IN_GC, IN_STW };

typedef struct {
    u8 type, what;
    u64 key;
    i64 depth, batch, row;
    u64 next; /* DEP_*: the previous record of the same key, + 1 (0: none) */
} Fix;

typedef struct {
    PyObject_HEAD Map states, assists, regions, tasks, procs; /* of Open* (regions: Regions*) */
    Open gc, stw;
    int has_gc, has_stw;
    u64 seq;
    i64 origin, last;
    long token;
    u32 cache[NAME_CACHE]; /* string id -> name id + 1, for the tables of token */
    Out out;
    /* Names: the list of the builder's names (held), each name's bytes (held),
     * and a map from a hash of the bytes to the id + 1, so that a batch is
     * named without the GIL. */
    PyObject *names_list;
    PyObject **names;
    size_t n_names, names_cap, n_known;
    Map by_hash;
    /* The strings of the batch's tables: string id -> its bytes (borrowed
     * from the held dict), and the extra strings (of the held list). */
    PyObject *strings_dict, *extra_list;
    Map strings;
    PyObject **extra;
    size_t extra_cap, n_extra; /* n_extra: the list's length when synced (it may grow since) */
    /* What it follows (FOLLOW_*): its subscribers may want neither
     * goroutines' states nor Ps', most of the events; it only widens.
     * FOLLOW_LOGS is the Python builder's (the logs' scan): kept here to be
     * said back. */
    int follow;
    /* Split mode. */
    int split, task0, touched_gc, touched_stw;
    Fix *fixes;
    size_t n_fixes, fixes_cap;
    u64 *touches;
    size_t n_touches, touches_cap;
    Map touched_g, touched_p, touched_ma, touched_task;
    RDep *rdeps;
    size_t n_rdeps, rdeps_cap;
    Map dep_tasks; /* task -> its latest DEP_TASK record + 1 */
    i64 nbatch;
} SpanCoreObject;

/* ---- names: ids into the builder's names list ---- */

static u64 hash_bytes(const char *p, size_t n) {
    u64 h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (u8)p[i]) * 1099511628211ULL;
    return h;
}

static int same_bytes(PyObject *a, const char *p, size_t n) {
    return (size_t)PyBytes_GET_SIZE(a) == n && memcmp(PyBytes_AS_STRING(a), p, n) == 0;
}

/* The id of bytes object s, appended (borrowed until names_commit) if new: -1 when out of memory. */
static i64 intern_bytes(SpanCoreObject *self, PyObject *s) {
    const char *p = PyBytes_AS_STRING(s);
    size_t n = (size_t)PyBytes_GET_SIZE(s);
    for (u64 h = hash_bytes(p, n);; h++) { /* the next key on a collision */
        u64 *v = map_find(&self->by_hash, h);
        if (!v)
            break;
        if (same_bytes(self->names[*v - 1], p, n))
            return (i64)*v - 1;
    }
    if (grow((void **)&self->names, &self->names_cap, self->n_names + 1, sizeof *self->names) < 0)
        return -1;
    u64 h = hash_bytes(p, n);
    while (map_find(&self->by_hash, h))
        h++;
    if (map_put(&self->by_hash, h, self->n_names + 1) < 0)
        return -1;
    self->names[self->n_names] = s;
    return (i64)self->n_names++;
}

/* With the GIL, before a batch: know what the names list holds (others may append to it). */
static int names_sync(SpanCoreObject *self, PyObject *list) {
    if (list != self->names_list) {
        for (size_t i = 0; i < self->n_known; i++)
            Py_DECREF(self->names[i]);
        self->n_names = self->n_known = 0;
        map_free(&self->by_hash);
        Py_INCREF(list);
        Py_XSETREF(self->names_list, list);
    }
    Py_ssize_t n = PyList_GET_SIZE(list);
    for (Py_ssize_t i = (Py_ssize_t)self->n_known; i < n; i++) {
        PyObject *s = PyList_GET_ITEM(list, i);
        if (!PyBytes_Check(s)) {
            PyErr_SetString(PyExc_TypeError, "names must be bytes");
            return -1;
        }
        size_t before = self->n_names;
        if (intern_bytes(self, s) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        if (self->n_names > before) {
            Py_INCREF(s);
        } else { /* a name twice in the list: its first id stands; keep the list's length in step */
            if (grow((void **)&self->names, &self->names_cap, self->n_names + 1, sizeof *self->names) < 0) {
                PyErr_NoMemory();
                return -1;
            }
            Py_INCREF(s);
            self->names[self->n_names++] = s;
        }
        self->n_known++;
    }
    return 0;
}

/* With the GIL, after a batch: the names it made go into the list. */
static int names_commit(SpanCoreObject *self) {
    for (size_t i = self->n_known; i < self->n_names; i++) {
        Py_INCREF(self->names[i]);
        if (PyList_Append(self->names_list, self->names[i]) < 0) {
            Py_DECREF(self->names[i]);
            self->n_names = i; /* the rest are borrowed: forget them */
            return -1;
        }
        self->n_known++;
    }
    return 0;
}

/* With the GIL, before a batch: the tables' strings, readable without it. */
static int strings_sync(SpanCoreObject *self, PyObject *strings, PyObject *extra) {
    if (strings != self->strings_dict) {
        map_free(&self->strings);
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(strings, &pos, &k, &v)) {
            if (!PyLong_Check(k) || !PyBytes_Check(v))
                continue; /* not a string id and its bytes: never looked up */
            u64 sid = PyLong_AsUnsignedLongLongMask(k);
            if (map_put(&self->strings, sid, (u64)(uintptr_t)v) < 0) {
                PyErr_NoMemory();
                return -1;
            }
        }
        Py_INCREF(strings);
        Py_XSETREF(self->strings_dict, strings);
    }
    Py_ssize_t n = PyList_GET_SIZE(extra);
    if (grow((void **)&self->extra, &self->extra_cap, (size_t)n + 1, sizeof *self->extra) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyList_GET_ITEM(extra, i);
        self->extra[i] = PyBytes_Check(s) ? s : NULL;
    }
    Py_INCREF(extra);
    Py_XSETREF(self->extra_list, extra);
    self->extra[n] = NULL;
    self->n_extra = (size_t)n;
    return 0;
}

/* The name id of string sid of the batch's tables (0 if it has none): -1 when out of memory. */
static i64 name_of(SpanCoreObject *self, u64 sid) {
    if (sid < NAME_CACHE && self->cache[sid])
        return self->cache[sid] - 1;
    PyObject *s = map_get_ptr(&self->strings, sid);
    if (!s)
        return 0;
    i64 id = intern_bytes(self, s);
    if (id >= 0 && sid < NAME_CACHE)
        self->cache[sid] = (u32)id + 1;
    return id;
}

static i64 extra_name_of(SpanCoreObject *self, u64 idx) {
    if (idx >= self->n_extra)
        return 0;
    PyObject *s = self->extra[idx];
    return s ? intern_bytes(self, s) : 0;
}

/* ---- split mode's records ---- */

/* A new record: its index + 1, or 0 when out of memory (the caller fails). */
static u32 add_fix(SpanCoreObject *self, int type, int what, u64 key, i64 depth) {
    if (grow((void **)&self->fixes, &self->fixes_cap, self->n_fixes + 1, sizeof *self->fixes) < 0)
        return 0;
    size_t i = self->n_fixes++;
    Fix f = {(u8)type, (u8)what, key, depth, -1, -1, 0};
    if (type == DEP_TASK) {
        u64 *head = map_slot(&self->dep_tasks, key, 0);
        if (!head)
            return 0;
        f.next = *head;
        *head = i + 1;
    } else {
        if (grow((void **)&self->touches, &self->touches_cap, self->n_touches + 1, sizeof *self->touches) < 0)
            return 0;
        self->touches[self->n_touches++] = i;
    }
    self->fixes[i] = f;
    return (u32)(i + 1);
}

/* Marks key touched: 1 if it was not (its first touch), 0 if it was, -1 when out of memory. */
static int first_touch(Map *m, u64 key) {
    if (map_find(m, key))
        return 0;
    return map_put(m, key, 1) < 0 ? -1 : 1;
}

/* Emits span o (regs: its goroutine's regions, when it is a state span and they were looked up). */
static int emit_in(SpanCoreObject *self, const Open *o, Regions *regs, i64 end, u64 estack, u32 etok, u8 flags) {
    u32 f[2] = {o->fix, o->dep};
    for (int k = 0; k < 2; k++)
        if (f[k]) {
            self->fixes[f[k] - 1].batch = self->nbatch;
            self->fixes[f[k] - 1].row = (i64)self->out.n;
        }
    if (o->rdepth >= 0) {
        if (!regs)
            regs = map_get_ptr(&self->regions, (u64)o->rid);
        if (regs) { /* (always, in split mode) */
            if (self->n_rdeps >= UINT32_MAX || (u64)self->nbatch > UINT32_MAX || self->out.n > UINT32_MAX ||
                grow((void **)&self->rdeps, &self->rdeps_cap, self->n_rdeps + 1, sizeof *self->rdeps) < 0)
                return -1;
            self->rdeps[self->n_rdeps] = (RDep){o->rdepth, (u32)self->nbatch, (u32)self->out.n, (u32)regs->rchain};
            regs->rchain = ++self->n_rdeps;
        }
    }
    return out_emit(&self->out, o, end, estack, etok, flags);
}

static int emit(SpanCoreObject *self, const Open *o, i64 end, u64 estack, u32 etok, u8 flags) {
    return emit_in(self, o, NULL, end, estack, etok, flags);
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

/* A span that opens now; its task name from the open task, where there is one
 * (split: or a record that the name may come from a task begun before). */
static int opened(SpanCoreObject *self, Open *o, u8 kind, u8 rkind, i64 rid, i64 t, u64 stack, u8 flags, u64 task) {
    *o = (Open){kind, rkind, flags, 0, rid, t, -1, stack, task, ++self->seq, (u32)self->token, 0, 0, 0, 0, 0, -1};
    Open *tk = map_get_ptr(&self->tasks, task);
    o->tname = tk ? tk->name : 0;
    if (!tk && self->split && !map_find(&self->touched_task, task)) {
        if (!task)
            self->task0 = 1;
        else if (!(o->dep = add_fix(self, DEP_TASK, 0, task, 0)))
            return -1;
    }
    return 0;
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

/* Every open span (pointers into the core), with where it is kept and its key. */
typedef struct {
    const Open **v;
    u8 *where;
    u64 *key;
    size_t n;
} OpenList;

/* Appends m's open spans to l (only counts them when l->v is NULL). */
static void list_map(const Map *m, int where, OpenList *l) {
    for (size_t i = 0; i <= m->cap; i++) {
        void *p;
        u64 key;
        if (i < m->cap && m->s[i].key)
            p = (void *)(uintptr_t)m->s[i].val, key = m->s[i].key;
        else if (i == m->cap && m->has_zero)
            p = (void *)(uintptr_t)m->zero_val, key = 0;
        else
            continue;
        size_t count = where == IN_REGIONS ? ((Regions *)p)->len : 1;
        for (size_t k = 0; k < count; k++) {
            if (l->v) {
                l->v[l->n] = where == IN_REGIONS ? &((Regions *)p)->v[k] : p;
                l->where[l->n] = (u8)where;
                l->key[l->n] = key;
            }
            l->n++;
        }
    }
}

static void free_list(OpenList *l) { free(l->v), free(l->where), free(l->key); }

static int all_open(SpanCoreObject *self, OpenList *l) {
    OpenList count = {0};
    Map *maps[] = {&self->states, &self->assists, &self->tasks, &self->procs, &self->regions};
    for (int w = IN_STATES; w <= IN_REGIONS; w++)
        list_map(maps[w], w, &count);
    size_t total = count.n + 2;
    l->v = malloc(total * sizeof *l->v);
    l->where = malloc(total);
    l->key = malloc(total * sizeof *l->key);
    l->n = 0;
    if (!l->v || !l->where || !l->key) {
        free_list(l);
        return -1;
    }
    for (int w = IN_STATES; w <= IN_REGIONS; w++)
        list_map(maps[w], w, l);
    if (self->has_gc)
        l->v[l->n] = &self->gc, l->where[l->n] = IN_GC, l->key[l->n++] = 0;
    if (self->has_stw)
        l->v[l->n] = &self->stw, l->where[l->n] = IN_STW, l->key[l->n++] = 0;
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

/* Split mode: goroutine g's regions entry, made if it has none. */
static Regions *regions_of(SpanCoreObject *self, u64 g) {
    Regions *r = map_get_ptr(&self->regions, g);
    if (!r && (r = calloc(1, sizeof *r)) && map_put_ptr(&self->regions, g, r) < 0) {
        free(r);
        r = NULL;
    }
    return r;
}

/* Goroutine gid exits at t: the regions it left open end with it, as Go's
 * goroutine analysis ends them (regs: its entry, looked up in split mode). */
static int exit_regions(SpanCoreObject *self, Regions *regs, i64 gid, i64 t) {
    int bad = 0;
    Regions *r = self->split ? regs : map_del_ptr(&self->regions, (u64)gid);
    for (size_t k = r ? r->len : 0; !bad && k-- > 0;)
        bad = emit(self, &r->v[k], t, 0, (u32)self->token, CLIPPED_END) < 0;
    if (r && self->split)
        r->len = 0, r->cleared = 1; /* (split: the entry stays, with what the join needs) */
    else if (r)
        free_regions(r);
    return bad ? -1 : 0;
}

/* A transition where goroutines' states are not followed: only an exit
 * matters, to the regions (which are followed whatever the kinds). */
static int on_exit_only(SpanCoreObject *self, const Batch *b, size_t i) {
    const Transition *tr = &TRANSITIONS[b->code[i]];
    if (tr->new_state != NOT_EXIST)
        return 0;
    i64 gid = tr->whose ? (i64)b->args[i * NARGS] : b->g[i];
    Regions *regs = NULL;
    if (self->split && !(regs = regions_of(self, (u64)gid)))
        return -1;
    return exit_regions(self, regs, gid, b->time[i]);
}

static int on_transition(SpanCoreObject *self, const Batch *b, size_t i) {
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
    Regions *regs = self->split ? regions_of(self, (u64)gid) : map_get_ptr(&self->regions, (u64)gid);
    FAIL_IF(self->split && !regs);
    int known = st != NULL;
    u32 first = 0;
    Open *reuse = NULL;
    if (st) {
        if (st->state == new_state)
            return 0;
        FAIL_IF(emit_in(self, st, regs, t, stack, (u32)self->token, 0) < 0);
        if (new_state == NOT_EXIST)
            free(map_del_ptr(&self->states, (u64)gid));
        else /* the goroutine's next span takes the ended one's place: no map delete and put, no free and malloc */
            reuse = st;
    } else if (self->split) {
        int r = first_touch(&self->touched_g, (u64)gid);
        FAIL_IF(r < 0);
        if (r)
            FAIL_IF(!(first = add_fix(self, FT_G, new_state, (u64)gid, 0)));
    }
    if (new_state == NOT_EXIST)
        return exit_regions(self, regs, gid, t);
    u8 code = b->code[i];
    u8 clipped = !known && (code == EV_GO_STATUS || code == EV_GO_STATUS_STACK) ? CLIPPED_START : 0;
    const Open *inner = regs && regs->len ? &regs->v[regs->len - 1] : NULL;
    /* Made where it is kept: a copy of it made here, just after its bytes
     * were stored one field at a time, waited on those stores (a third of
     * this function's time). */
    Open fresh, *o = reuse ? reuse : &fresh;
    FAIL_IF(opened(self, o, STATE_KIND[new_state], RES_GOROUTINE, gid, t, stack, clipped, inner ? inner->task : 0) < 0);
    o->fix = first;
    if (inner) {
        o->name = inner->name, o->tname = inner->tname, o->dep = 0;
        if (inner->dep) {
            const Fix *d = &self->fixes[inner->dep - 1];
            FAIL_IF(!(o->dep = add_fix(self, d->type, d->what, d->key, d->depth)));
        }
    } else if (self->split && !regs->cleared) {
        o->rdepth = (i32)regs->pops;
    }
    if (tr->reason >= 0) {
        i64 r = name_of(self, a[tr->reason]);
        FAIL_IF(r < 0);
        o->reason = (u32)r;
    }
    if (new_state == RUNNING)
        o->proc = b->p[i];
    o->state = (u8)new_state;
    if (!reuse)
        FAIL_IF(!new_open(&self->states, (u64)gid, fresh));
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
    u32 first = 0;
    if (!o && self->split) {
        int r = first_touch(&self->touched_p, (u64)pid);
        FAIL_IF(r < 0);
        if (r)
            FAIL_IF(!(first = add_fix(self, FT_P, runs, (u64)pid, 0)));
    }
    if (runs && !o) {
        Open n;
        FAIL_IF(opened(self, &n, K_RUNNING, RES_PROC, pid, t, 0, code == EV_PROC_STATUS ? CLIPPED_START : 0, 0) < 0);
        n.proc = pid;
        n.fix = first;
        FAIL_IF(!new_open(&self->procs, (u64)pid, n));
    } else if (!runs && o) {
        int bad = emit(self, o, t, 0, (u32)self->token, 0) < 0;
        free(map_del_ptr(&self->procs, (u64)pid));
        FAIL_IF(bad);
    }
    return 0;
}

/* Split mode: the record of a single slot's (GC, stop-the-world) first event. */
static int first_slot(SpanCoreObject *self, int *touched, int type, int what, u32 *fix) {
    *fix = 0;
    if (!self->split || *touched)
        return 0;
    *touched = 1;
    return (*fix = add_fix(self, type, what, 0, 0)) ? 0 : -1;
}

/* Split mode: the record of a key's first event (0: not its first). */
static int first_of(SpanCoreObject *self, Map *touched, int type, int what, u64 key, u32 *fix) {
    *fix = 0;
    if (!self->split)
        return 0;
    int r = first_touch(touched, key);
    if (r <= 0)
        return r;
    return (*fix = add_fix(self, type, what, key, 0)) ? 0 : -1;
}

/* A region or task that ends with its begin unseen (before the trace, a gap,
 * or, split, the generation): clipped, from the origin. */
static int unbegun(SpanCoreObject *self, Open *o, u8 kind, i64 g, u64 task) {
    u8 rkind = kind == K_TASK ? RES_NONE : RES_GOROUTINE;
    return opened(self, o, kind, rkind, g, self->origin, 0, CLIPPED_START, task);
}

static int on_range(SpanCoreObject *self, const Batch *b, size_t i) {
    u8 code = b->code[i];
    const u64 *a = &b->args[i * NARGS];
    i64 t = b->time[i], g = b->g[i];
    u32 tok = (u32)self->token, fix;
    i64 id;
    Open o, *p;
    switch (code) {
    case EV_GC_ACTIVE:
        if (self->has_gc)
            break;
        /* fall through */
    case EV_GC_BEGIN: {
        int active = code == EV_GC_ACTIVE;
        FAIL_IF(first_slot(self, &self->touched_gc, FT_GC, active ? ACTIVE : BEGIN, &fix) < 0);
        FAIL_IF(opened(self, &self->gc, K_GC, RES_NONE, 0, t, active ? 0 : a[1], active ? CLIPPED_START : 0, 0) < 0);
        self->gc.fix = active ? fix : 0;
        self->has_gc = 1;
        break;
    }
    case EV_GC_END:
        if (self->has_gc) {
            FAIL_IF(emit(self, &self->gc, t, 0, tok, 0) < 0);
            self->has_gc = 0;
        } else
            FAIL_IF(first_slot(self, &self->touched_gc, FT_GC, END, &fix) < 0);
        break;
    case EV_STW_BEGIN:
        FAIL_IF(first_slot(self, &self->touched_stw, FT_STW, BEGIN, &fix) < 0);
        FAIL_IF(opened(self, &self->stw, K_STW, RES_GOROUTINE, g, t, a[1], 0, 0) < 0);
        self->has_stw = 1;
        FAIL_IF((id = name_of(self, a[0])) < 0);
        self->stw.reason = (u32)id;
        break;
    case EV_STW_END:
        if (self->has_stw) {
            FAIL_IF(emit(self, &self->stw, t, 0, tok, 0) < 0);
            self->has_stw = 0;
        } else
            FAIL_IF(first_slot(self, &self->touched_stw, FT_STW, END, &fix) < 0);
        break;
    case EV_GC_MARK_ASSIST_BEGIN:
    case EV_GC_MARK_ASSIST_ACTIVE: {
        int active = code == EV_GC_MARK_ASSIST_ACTIVE;
        i64 gid = active ? (i64)a[0] : g;
        int local = map_find(&self->assists, (u64)gid) != NULL;
        if (active && local)
            break;
        fix = 0;
        if (!local)
            FAIL_IF(first_of(self, &self->touched_ma, FT_MA, active ? ACTIVE : BEGIN, (u64)gid, &fix) < 0);
        FAIL_IF(opened(self, &o, K_MARK_ASSIST, RES_GOROUTINE, gid, t, active ? 0 : a[0], active ? CLIPPED_START : 0, 0) < 0);
        o.fix = active ? fix : 0;
        FAIL_IF(!new_open(&self->assists, (u64)gid, o));
        break;
    }
    case EV_GC_MARK_ASSIST_END:
        if ((p = map_del_ptr(&self->assists, (u64)g))) {
            int bad = emit(self, p, t, 0, tok, 0) < 0;
            free(p);
            FAIL_IF(bad);
        } else
            FAIL_IF(first_of(self, &self->touched_ma, FT_MA, END, (u64)g, &fix) < 0);
        break;
    case EV_USER_REGION_BEGIN: {
        FAIL_IF(opened(self, &o, K_REGION, RES_GOROUTINE, g, t, a[2], 0, a[0]) < 0);
        FAIL_IF((id = name_of(self, a[1])) < 0);
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
            FAIL_IF((id = name_of(self, a[1])) < 0);
            FAIL_IF(unbegun(self, &o, K_REGION, g, a[0]) < 0);
            o.name = (u32)id;
            if (self->split) {
                FAIL_IF(!(r = regions_of(self, (u64)g)));
                if (r->cleared)
                    FAIL_IF(!(o.fix = add_fix(self, ORIGIN, 0, (u64)g, 0)));
                else {
                    FAIL_IF(!(o.fix = add_fix(self, FT_REGPOP, 0, (u64)g, (i64)r->pops)));
                    r->pops++;
                }
            }
        }
        FAIL_IF(emit(self, &o, t, a[2], tok, 0) < 0);
        break;
    }
    case EV_USER_TASK_BEGIN:
        if (!map_find(&self->tasks, a[0]))
            FAIL_IF(first_of(self, &self->touched_task, FT_TASK, BEGIN, a[0], &fix) < 0);
        FAIL_IF(opened(self, &o, K_TASK, RES_NONE, 0, t, a[3], 0, a[0]) < 0);
        FAIL_IF((id = name_of(self, a[2])) < 0);
        o.name = o.tname = (u32)id;
        o.dep = 0;
        FAIL_IF(!new_open(&self->tasks, a[0], o));
        break;
    case EV_USER_TASK_END:
        if ((p = map_del_ptr(&self->tasks, a[0]))) {
            o = *p;
            free(p);
        } else {
            FAIL_IF(unbegun(self, &o, K_TASK, 0, a[0]) < 0);
            FAIL_IF((id = extra_name_of(self, b->extra[i * NEXTRA + 1])) < 0);
            o.name = o.tname = (u32)id;
            o.dep = 0;
            if (self->split) {
                FAIL_IF(first_of(self, &self->touched_task, FT_TASK, END, a[0], &o.fix) < 0);
                if (!o.fix)
                    FAIL_IF(!(o.fix = add_fix(self, ORIGIN, 0, 0, 0)));
            }
        }
        FAIL_IF(emit(self, &o, t, a[1], tok, 0) < 0);
        break;
    }
    return 0;
}

static u8 IS_RANGE[256], IS_PROC[256];

/* feed(codes, times, procs, goroutines, args, extra, token, strings, extra_strings, names) -> list of bytes */
static PyObject *SpanCore_feed(SpanCoreObject *self, PyObject *args) {
    Py_buffer cb, tb, pb, gb, ab, xb;
    long token;
    PyObject *strings, *extra_strings, *names;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*lO!O!O!", &cb, &tb, &pb, &gb, &ab, &xb, &token, &PyDict_Type, &strings,
                          &PyList_Type, &extra_strings, &PyList_Type, &names))
        return NULL;
    PyObject *result = NULL;
    size_t n = (size_t)cb.len;
    if ((size_t)tb.len != n * 8 || (size_t)pb.len != n * 8 || (size_t)gb.len != n * 8 || (size_t)ab.len != n * 8 * NARGS ||
        (size_t)xb.len != n * 8 * NEXTRA) {
        PyErr_SetString(PyExc_ValueError, "columns of different lengths");
        goto done;
    }
    if (names_sync(self, names) < 0 || strings_sync(self, strings, extra_strings) < 0)
        goto done;
    if (token != self->token) {
        self->token = token;
        memset(self->cache, 0, sizeof self->cache);
    }
    Batch b = {n, cb.buf, tb.buf, pb.buf, gb.buf, ab.buf, xb.buf};
    if (n && self->origin < 0)
        self->origin = b.time[0];
    int r = 0, follow = self->follow;
    /* The batch is read from its buffers and named from the held tables:
     * nothing here needs the GIL, so other threads run (a generation
     * built in each). */
    Py_BEGIN_ALLOW_THREADS;
    for (size_t i = 0; r >= 0 && i < n; i++) {
        u8 code = b.code[i];
        self->last = b.time[i];
        r = TRANSITIONS[code].is ? (follow & FOLLOW_GOROUTINES ? on_transition : on_exit_only)(self, &b, i)
            : IS_RANGE[code]     ? on_range(self, &b, i)
            : IS_PROC[code]      ? (follow & FOLLOW_PROCS ? on_proc(self, &b, i) : 0)
                                 : 0;
    }
    Py_END_ALLOW_THREADS;
    if (names_commit(self) < 0 || r < 0) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        self->out.n = 0;
        goto done;
    }
    result = out_take(&self->out, self->split);
    self->nbatch++;
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
        if (emit(self, o, self->last > o->start ? self->last : o->start, 0, o->tok, CLIPPED_END) < 0) {
            free_list(&l);
            self->out.n = 0;
            return PyErr_NoMemory();
        }
    }
    free_list(&l);
    core_clear(self);
    PyObject *r = out_take(&self->out, self->split);
    self->nbatch++;
    return r;
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
    free_list(&l);
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
    free_list(&l);
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
    free_list(&l);
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

/* ---- split mode: what the join reads, and where a builder goes on from ---- */

/* Keys as the twin has them: a goroutine's or P's id signed, a task's not. */
static PyObject *key_obj(int is_task, u64 key) {
    return is_task ? PyLong_FromUnsignedLongLong(key) : PyLong_FromLongLong((long long)key);
}

static PyObject *open_tuple(int where, u64 key, const Open *o) {
    return Py_BuildValue("(iNiiLLKkkkkKiKLkkii)", where, key_obj(where == IN_TASKS, key), o->kind, o->rkind, (long long)o->rid,
                         (long long)o->start, (unsigned long long)o->stack, (unsigned long)o->tok,
                         (unsigned long)o->reason, (unsigned long)o->name, (unsigned long)o->tname,
                         (unsigned long long)o->task, o->flags, (unsigned long long)o->seq, (long long)o->proc,
                         (unsigned long)o->fix, (unsigned long)o->dep, o->state, (int)o->rdepth);
}

static PyObject *fix_tuple(SpanCoreObject *self, size_t i) {
    const Fix *f = &self->fixes[i];
    return Py_BuildValue("(niiNLLL)", (Py_ssize_t)i, f->type, f->what, key_obj(f->type == FT_TASK || f->type == DEP_TASK, f->key),
                         (long long)f->depth,
                         (long long)f->batch, (long long)f->row);
}

/* Appends the tuple x to list l, stealing it: 0, or -1 with an exception. */
static int append_new(PyObject *l, PyObject *x) {
    int r = x ? PyList_Append(l, x) : -1;
    Py_XDECREF(x);
    return r;
}

static PyObject *SpanCore_export(SpanCoreObject *self, PyObject *unused) {
    /* A split builder is done: the join reads its RDeps, while the generation
     * waits its turn, and none is added, so they keep no room to grow (up to
     * as much again, from doubling). */
    if (self->rdeps_cap > self->n_rdeps && self->n_rdeps) {
        RDep *fit = realloc(self->rdeps, self->n_rdeps * sizeof *self->rdeps);
        if (fit)
            self->rdeps = fit, self->rdeps_cap = self->n_rdeps;
    }
    OpenList l;
    if (all_open(self, &l) < 0)
        return PyErr_NoMemory();
    PyObject *opens = PyList_New(0), *touches = PyList_New(0), *result = NULL;
    int bad = !opens || !touches;
    for (size_t i = 0; !bad && i < l.n; i++)
        bad = append_new(opens, open_tuple(l.where[i], l.key[i], l.v[i])) < 0;
    for (size_t i = 0; !bad && i < self->n_touches; i++)
        bad = append_new(touches, fix_tuple(self, self->touches[i])) < 0;
    free_list(&l);
    if (!bad)
        result = Py_BuildValue("(OOOLLK)", opens, touches, self->task0 ? Py_True : Py_False, (long long)self->origin,
                               (long long)self->last, (unsigned long long)self->seq);
    Py_XDECREF(opens), Py_XDECREF(touches);
    return result;
}

/* The records of a DEP_ map's key, as a list. */
static PyObject *deps_of(SpanCoreObject *self, const Map *deps, u64 key) {
    PyObject *out = PyList_New(0);
    u64 *head = map_find(deps, key);
    for (u64 i = head ? *head : 0; out && i; i = self->fixes[i - 1].next)
        if (append_new(out, fix_tuple(self, i - 1)) < 0)
            Py_CLEAR(out);
    return out;
}

static PyObject *SpanCore_region_meta(SpanCoreObject *self, PyObject *arg) {
    u64 g = PyLong_AsUnsignedLongLongMask(arg);
    if (PyErr_Occurred())
        return NULL;
    Regions *r = map_get_ptr(&self->regions, g);
    PyObject *rows = PyList_New(0);
    for (u64 i = r ? r->rchain : 0; rows && i; i = self->rdeps[i - 1].next) {
        const RDep *d = &self->rdeps[i - 1];
        if (append_new(rows, Py_BuildValue("(LLL)", (long long)d->depth, (long long)d->batch, (long long)d->row)) < 0)
            Py_CLEAR(rows);
    }
    if (!rows)
        return NULL;
    return Py_BuildValue("(KiN)", (unsigned long long)(r ? r->pops : 0), r ? r->cleared : 0, rows);
}

static PyObject *SpanCore_regions_ended(SpanCoreObject *self, PyObject *arg) {
    u64 g = PyLong_AsUnsignedLongLongMask(arg);
    if (PyErr_Occurred())
        return NULL;
    Regions *r = map_get_ptr(&self->regions, g);
    return Py_BuildValue("(Ki)", (unsigned long long)(r ? r->pops : 0), r ? r->cleared : 0);
}

static PyObject *SpanCore_task_deps(SpanCoreObject *self, PyObject *arg) {
    u64 task = PyLong_AsUnsignedLongLongMask(arg);
    if (PyErr_Occurred())
        return NULL;
    return deps_of(self, &self->dep_tasks, task);
}

/* load(opens, origin, last, seq): the open spans (as export gives them, names
 * as this builder's ids) to go on from. */
static PyObject *SpanCore_load(SpanCoreObject *self, PyObject *args) {
    PyObject *opens;
    long long origin, last;
    unsigned long long seq;
    if (!PyArg_ParseTuple(args, "O!LLK", &PyList_Type, &opens, &origin, &last, &seq))
        return NULL;
    core_clear(self);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(opens); i++) {
        int where, kind, rkind, flags, state;
        unsigned long long key, stack, task, oseq;
        long long rid, start, proc;
        unsigned long tok, reason, name, tname, fix, dep;
        int rdepth;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(opens, i), "iKiiLLKkkkkKiKLkkii", &where, &key, &kind, &rkind, &rid, &start,
                              &stack, &tok, &reason, &name, &tname, &task, &flags, &oseq, &proc, &fix, &dep, &state,
                              &rdepth))
            return NULL;
        Open o = {(u8)kind, (u8)rkind, (u8)flags, (u8)state, rid, start, proc, stack, task, oseq,
                  (u32)tok, (u32)reason, (u32)name, (u32)tname, 0, 0, -1};
        int bad = 0;
        if (where == IN_GC)
            self->gc = o, self->has_gc = 1;
        else if (where == IN_STW)
            self->stw = o, self->has_stw = 1;
        else if (where == IN_REGIONS) {
            Regions *r = map_get_ptr(&self->regions, key);
            if (!r && (!(r = calloc(1, sizeof *r)) || map_put_ptr(&self->regions, key, r) < 0)) {
                free(r);
                return PyErr_NoMemory();
            }
            bad = grow((void **)&r->v, &r->cap, r->len + 1, sizeof *r->v) < 0;
            if (!bad)
                r->v[r->len++] = o;
        } else {
            Map *maps[] = {&self->states, &self->assists, &self->tasks, &self->procs};
            if (where < IN_STATES || where > IN_PROCS) {
                PyErr_SetString(PyExc_ValueError, "not a place an open span is kept");
                return NULL;
            }
            bad = !new_open(maps[where], key, o);
        }
        if (bad)
            return PyErr_NoMemory();
    }
    self->origin = origin, self->last = last, self->seq = seq;
    Py_RETURN_NONE;
}

/* Whether flags are not FOLLOW_* flags (then with the exception set). */
static int bad_follow(long flags) {
    if (!(flags & ~(long)FOLLOW_ALL))
        return 0;
    PyErr_Format(PyExc_ValueError, "follow flags %ld: only %d (goroutines), %d (Ps) and %d (logs)", flags,
                 FOLLOW_GOROUTINES, FOLLOW_PROCS, FOLLOW_LOGS);
    return 1;
}

/* The records of which region a span may be in (split mode): at most this many reserved at once. */
#define MAX_RDEPS_RESERVED ((Py_ssize_t)1 << 28)

static int SpanCore_init(SpanCoreObject *self, PyObject *args, PyObject *kw) {
    int split = 0, follow = FOLLOW_ALL;
    Py_ssize_t events = 0;
    if (!PyArg_ParseTuple(args, "|pin:SpanCore", &split, &follow, &events))
        return -1;
    if (bad_follow(follow))
        return -1;
    core_clear(self);
    self->token = -1;
    self->split = split;
    self->follow = follow;
    /* A split core records about a region a span (the state spans'), a span or so an event: growing
     * those records copy by copy faulted a generation's pages in twice (a third of a pool's page
     * faults). Room for the events it will be fed is reserved at once instead; what is never
     * written is never touched, so costs no memory. Past it, they grow as before. */
    if (split && events > 0 && !self->rdeps) {
        size_t n = (size_t)(events < MAX_RDEPS_RESERVED ? events : MAX_RDEPS_RESERVED);
        RDep *r = malloc(n * sizeof *r);
        if (r)
            self->rdeps = r, self->rdeps_cap = n;
    }
    return 0;
}

static PyObject *SpanCore_widen(SpanCoreObject *self, PyObject *arg) {
    long more = PyLong_AsLong(arg);
    if (more == -1 && PyErr_Occurred())
        return NULL;
    if (bad_follow(more))
        return NULL;
    self->follow |= (int)more;
    return PyLong_FromLong(self->follow);
}

static void SpanCore_dealloc(SpanCoreObject *self) {
    core_clear(self);
    out_free(&self->out);
    for (size_t i = 0; i < self->n_known; i++)
        Py_DECREF(self->names[i]);
    free(self->names), free(self->extra), free(self->fixes), free(self->touches), free(self->rdeps);
    Py_XDECREF(self->names_list), Py_XDECREF(self->strings_dict), Py_XDECREF(self->extra_list);
    Map *maps[] = {&self->by_hash, &self->strings, &self->touched_g, &self->touched_p, &self->touched_ma,
                   &self->touched_task, &self->dep_tasks};
    for (size_t i = 0; i < sizeof maps / sizeof *maps; i++)
        map_free(maps[i]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef SpanCore_methods[] = {
    {"feed", (PyCFunction)SpanCore_feed, METH_VARARGS,
     "feed($self, codes, times, procs, goroutines, args, extra, token, strings, extra_strings, names, /)\n--\n\n"
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
    {"export", (PyCFunction)SpanCore_export, METH_NOARGS,
     "export($self, /)\n--\n\nThe open spans, the first touches' records, task 0 seen unbegun, origin, last, seq."},
    {"region_meta", (PyCFunction)SpanCore_region_meta, METH_O,
     "region_meta($self, g, /)\n--\n\nRegions from before goroutine g ended, whether its exit ended the rest, and "
     "(depth, batch, row) of the spans emitted whose names may be a region's from before."},
    {"regions_ended", (PyCFunction)SpanCore_regions_ended, METH_O,
     "regions_ended($self, g, /)\n--\n\nregion_meta's first two: what the join's check needs, without the rows "
     "(a long-lived goroutine's are thousands)."},
    {"task_deps", (PyCFunction)SpanCore_task_deps, METH_O,
     "task_deps($self, task, /)\n--\n\nThe records of the spans that took task's name unseen."},
    {"widen", (PyCFunction)SpanCore_widen, METH_O,
     "widen($self, more, /)\n--\n\nFollow these too (FOLLOW_* flags) from now on; the flags now followed."},
    {"load", (PyCFunction)SpanCore_load, METH_VARARGS,
     "load($self, opens, origin, last, seq, /)\n--\n\nThe open spans to go on from."},
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
    .tp_doc = "SpanCore(split=False, follow=7, events=0, /)\n--\n\nOpen spans across batches; the compiled twin of spans.twin.SpanCore.",
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
    if (span_select_register(module) < 0)
        return -1;
    if (span_logs_register(module) < 0)
        return -1;
    return span_join_register(module);
}
