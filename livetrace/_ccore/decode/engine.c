/* The ordering engine's state, a generation's cursors over each thread's
 * batches, and the frontier heap that merges them (see engine.h). */

#include <stdarg.h>

#include "decode/engine.h"
#include "decode/handlers.h"
#include "common/varint.h"

u8 T_TIMED[256], T_NARGS[256], T_STACK[256], T_STR0[256], T_STR1[256], T_CHECKED[256];

void engine_init_tables(void) {
    for (int c = 0; c < 256; c++)
        T_CHECKED[c] = T_STACK[c] != 255 || T_STR0[c] != 255 || T_STR1[c] != 255 || c == EV_GO_CREATE ||
                       c == EV_GO_CREATE_BLOCKED;
}

int check_ids(Engine *e, int code, const u64 *a) {
    int si = T_STACK[code];
    if (si != 255 && !has_stack(e, a[si]))
        return fail(e, ERR_FORMAT, -1, "found invalid stack ID %llu for event %s", (unsigned long long)a[si],
                    ename(e, code));
    /* the new goroutine's stack */
    if ((code == EV_GO_CREATE || code == EV_GO_CREATE_BLOCKED) && !has_stack(e, a[1]))
        return fail(e, ERR_FORMAT, -1, "found invalid stack ID %llu for event %s", (unsigned long long)a[1],
                    ename(e, code));
    if (T_STR0[code] != 255 && !has_string(e, a[T_STR0[code]]))
        return fail(e, ERR_FORMAT, -1, "found invalid string ID %llu for event %s",
                    (unsigned long long)a[T_STR0[code]], ename(e, code));
    if (T_STR1[code] != 255 && !has_string(e, a[T_STR1[code]]))
        return fail(e, ERR_FORMAT, -1, "found invalid string ID %llu for event %s",
                    (unsigned long long)a[T_STR1[code]], ename(e, code));
    return 0;
}

const int GO_STATUS_STATE[GO_STATUS_COUNT] = GO_STATUS_STATE_INIT;
const int PROC_STATUS_STATE[PROC_STATUS_COUNT] = PROC_STATUS_STATE_INIT;
const char *const GO_STATUS_NAMES[GO_STATUS_COUNT] = GO_STATUS_NAMES_INIT;
const char *const PROC_STATUS_NAMES[PROC_STATUS_COUNT] = PROC_STATUS_NAMES_INIT;
const char *const GS_NAMES[GS_COUNT] = GS_NAMES_INIT;
const char *const PS_NAMES[PS_COUNT] = PS_NAMES_INIT;

int fail(Engine *e, int kind, i64 offset, const char *fmt, ...) {
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

const char *ename(Engine *e, int code) {
    static __thread char buf[32]; /* per thread: engines run without the GIL, on several threads at once */
    if (code >= 0 && code < 256 && e->names[code])
        return e->names[code];
    snprintf(buf, sizeof buf, "Invalid(%d)", code);
    return buf;
}

int engine_set_name(Engine *e, int code, const char *name) {
    size_t n = strlen(name) + 1;
    char *copy = malloc(n);
    if (!copy)
        return -1;
    memcpy(copy, name, n);
    free(e->names[code]);
    e->names[code] = copy;
    return 0;
}

/* ---- goroutines and threads ---- */

G *g_new(Engine *e, u64 id, int status) {
    G *g = calloc(1, sizeof(G));
    if (!g || map_put_ptr(&e->gs, id, g)) {
        free(g);
        fail(e, ERR_MEMORY, -1, "out of memory");
        return NULL;
    }
    g->id = id;
    g->status = status;
    g->seq_gen = e->gen;
    return g;
}

static void g_free(void *p) {
    G *g = p;
    for (size_t i = 0; i < g->nreg; i++)
        free(g->regions[i].name);
    free(g->regions);
    free(g->ranges);
    free(g);
}

void g_delete(Engine *e, u64 id) {
    G *g = map_del_ptr(&e->gs, id);
    if (g) {
        if (e->gcache[id & (GCACHE - 1)] == g)
            e->gcache[id & (GCACHE - 1)] = NULL;
        g_free(g);
    }
}

static void p_free(void *p) {
    free(((P *)p)->ranges);
    free(p);
}

static void task_free(void *p) {
    free(((Task *)p)->name);
    free(p);
}

M *m_new(Engine *e, i64 id) {
    M *m = calloc(1, sizeof(M));
    if (!m || grow((void **)&e->ms, &e->capms, e->nms + 1, sizeof(M *)) || map_put_ptr(&e->msmap, (u64)id, m)) {
        free(m);
        fail(e, ERR_MEMORY, -1, "out of memory");
        return NULL;
    }
    m->id = id;
    m->p = m->g = NO_ID;
    e->ms[e->nms++] = m;
    return m;
}

/* The thread a cursor reads. A fresh engine meets a new one with its proc
 * and goroutine left from the generation before: unknown to it. */
static M *m_own(Engine *e, i64 id) {
    M *m = map_get_ptr(&e->msmap, (u64)id);
    if (m || !(m = m_new(e, id)))
        return m;
    if (e->fr) {
        m->unk = UNK_P | UNK_G;
        m->own = 1;
    }
    return m;
}

/* ---- cursors and the frontier heap ---- */

static inline int ns_of(Engine *e, u64 ticks, i64 *out) {
    double v = (double)ticks * e->ns_per_tick;
    if (!(v < 9.2e18))
        return fail(e, ERR_FORMAT, -1, "timestamp out of range");
    *out = (i64)v;
    return 0;
}

/* Moves c past its used-up batches: 1 it is in a batch with events left, 0 it has none, -1 error. */
static int cursor_batch(Engine *e, Cursor *c) {
    while (c->off == c->len) {
        if (c->bi == c->nb)
            return 0;
        const BatchRef *b = &c->b[c->bi++];
        if (!b->len) /* an empty batch's time is never read */
            continue;
        if (ns_of(e, b->time, &c->last))
            return -1;
        c->p = b->p;
        c->len = b->len;
        c->base = b->offset;
        c->off = 0;
    }
    return 1;
}

/* The longest event: its code, then a varint of at most 10 bytes for its
 * time and each argument. Further than that from a batch's end, varints
 * are read without checking for the end. */
#define EVENT_MAX (1 + 10 * (NARGS + 1))

/* 1: the cursor holds its next event, 0: it has none left, -1: error */
static int cursor_next(Engine *e, Cursor *c) {
    int r = c->off == c->len ? cursor_batch(e, c) : 1;
    if (r != 1)
        return r;
    size_t i = c->off, end = c->len;
    const u8 *p = c->p;
    int code = p[i];
    int n = T_TIMED[code];
    if (!n) {
        if (code > EV_MAX_CODE)
            return fail(e, ERR_FORMAT, c->base + (i64)i, "found invalid event type: %d", code);
        return fail(e, ERR_FORMAT, c->base + (i64)i, "found event without a timestamp: type=%d", code);
    }
    i++;
    u64 v[NARGS + 1];
    int k = 0;
    if (end - i >= EVENT_MAX) {
        for (; k < n; k++)
            if (uvarint_unbounded(p, &i, &v[k]) != 1)
                break;
    } else {
        for (; k < n; k++)
            if (uvarint(p, end, &i, &v[k]) != 1)
                break;
    }
    if (k < n)
        return fail(e, ERR_FORMAT, c->base + (i64)c->off, "found invalid uvarint");
    for (k = 1; k <= NARGS; k++) /* emit copies them all: those past the code's are 0 */
        c->args[k - 1] = k < n ? v[k] : 0;
    i64 d = 0;
    if (ns_of(e, v[0], &d))
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
        ms = c->ms ? c->ms : (c->ms = m_own(e, c->m));
        if (!ms)
            return -1;
        ctx = (Ctx){c->m, ms->p, ms->g};
    }
    Handler h = HANDLERS[c->code];
    if (!h)
        return ORDER("bad event type found while ordering: %d", c->code);
    Ctx nc;
    size_t before = e->out.n;
    i64 last_before = e->last;
    Fresh *f = e->fr;
    size_t notes_before = 0;
    u64 skipped_before = 0;
    if (f) { /* what a note of this attempt records (fresh_note) */
        f->cur = c;
        e->cur_unk = ms ? ms->unk : 0;
        notes_before = f->len;
        skipped_before = f->nskipped;
    }
    /* The handler may rewrite the arguments it emits: only when the event
     * happens or fails, so the cursor reads the next event over them. */
    int r = h(e, c->code, c->time, c->args, ctx, &nc);
    if (r < 0) {
        /* As in the twin, what a failing handler emitted is not out. */
        e->out.n = before;
        e->last = last_before;
    }
    if (r != 1)
        return r;
    /* An attempt that took no note, on a thread that restated its context, is all a busy generation has. */
    if (f && (f->len != notes_before || e->cur_unk) && fresh_happened(e, ms, nc, before, notes_before, skipped_before))
        return -1;
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

int engine_run(Engine *e, size_t max) {
    if (!e->active || e->err || !max)
        return 0;
    if (cols_reserve(&e->out, max + 4))
        return -1;
    while (!e->err && e->out.n < max) {
        int have_sample = e->si < e->nsamples;
        if (!e->nheap && !have_sample) {
            e->active = 0;
            break;
        }
        if (have_sample && (!e->nheap || e->samples[e->si].time < e->heap[0]->time)) {
            Sample *s = &e->samples[e->si++];
            u64 a[NARGS] = {s->stack, 0, 0, 0};
            emit(e, EV_CPU_SAMPLE, s->time, (Ctx){s->m, s->p, s->g}, a, 0, 0);
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
    return 0;
}

/* Columns with room for room events, each in memory of its own that the
 * engine never grows (a batch of engine_run has room enough): 0, or -1. */
static int cols_alloc(Columns *c, size_t room) {
    *c = (Columns){0,
                   room,
                   malloc(room),
                   malloc(room * 8),
                   malloc(room * 8),
                   malloc(room * 8),
                   malloc(room * 8),
                   malloc(room * 8 * NARGS),
                   malloc(room * 8 * NEXTRA),
                   1};
    if (c->code && c->time && c->m && c->p && c->g && c->args && c->extra)
        return 0;
    cols_free(c);
    return -1;
}

/* Gives back the room past c's events (a column keeps a byte at least, so none is NULL). */
static void cols_fit(Columns *c) {
#define FIT(f, w)                                         \
    {                                                     \
        void *q = realloc(c->f, c->n ? c->n * (w) : 1);   \
        if (q)                                            \
            c->f = q;                                     \
    }
    FIT(code, 1) FIT(time, 8) FIT(m, 8) FIT(p, 8) FIT(g, 8) FIT(args, 8 * NARGS) FIT(extra, 8 * NEXTRA)
#undef FIT
    c->cap = c->n;
}

int engine_run_all(Engine *e, size_t max, RunBatch **out, size_t *n) {
    RunBatch *b = NULL;
    size_t nb = 0, cap = 0;
    int rc = 0;
    for (;;) {
        /* As the module's run: the engine's own columns hold what begin wrote
         * (its Sync), which goes first in the first batch. */
        Columns own = e->out, c;
        if (grow((void **)&b, &cap, nb + 1, sizeof *b) || cols_alloc(&c, own.n + max + 4)) {
            rc = -1;
            break;
        }
        const void *src[7] = {own.code, own.time, own.m, own.p, own.g, own.args, own.extra};
        void *dst[7] = {c.code, c.time, c.m, c.p, c.g, c.args, c.extra};
        static const size_t width[7] = {1, 8, 8, 8, 8, 8 * NARGS, 8 * NEXTRA};
        for (int k = 0; k < 7 && own.n; k++)
            memcpy(dst[k], src[k], own.n * width[k]);
        c.n = own.n;
        e->out = c;
        int r = engine_run(e, max);
        c = e->out;
        e->out = own;
        e->out.n = 0;
        e->nout += c.n;
        if (r) {
            cols_free(&c);
            rc = -1;
            break;
        }
        cols_fit(&c);
        b[nb++] = (RunBatch){c, e->nx};
        if (!e->active || e->err)
            break;
    }
    *out = b;
    *n = nb;
    return rc;
}

/* ---- a generation's life ---- */

void engine_gen_release(Engine *e) {
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
    e->nstrs = 0;
    map_free(&e->strings);
    idset_clear(&e->string_ids);
    idset_clear(&e->stacks);
    for (size_t i = 0; i < e->nx; i++)
        free((char *)e->xstr[i].p);
    e->nx = 0;
    e->active = 0;
}

int engine_gen_prepare(Engine *e, u64 gen, double ns_per_tick, size_t nstrings, size_t nsamples, size_t nthreads) {
    engine_gen_release(e);
    e->err = 0;
    e->out.n = 0;
    e->nout = 0;
    if (e->fr) { /* its notes are one generation's */
        Fresh *f = e->fr;
        f->len = f->nskips = 0;
        f->created.len = f->begun.len = f->task_ends.len = 0;
        idset_clear(&f->ranged[0]);
        idset_clear(&f->ranged[1]);
        f->nskipped = 0;
        f->gc_noted = 0;
        idset_clear(&f->seen_g);
        idset_clear(&f->seen_p);
        idset_clear(&f->seen_task);
    }
    e->gen = gen;
    e->ns_per_tick = ns_per_tick;
    e->strs = calloc(nstrings + 1, sizeof(Str));
    e->samples = calloc(nsamples + 1, sizeof(Sample));
    e->cur = calloc(nthreads + 1, sizeof(Cursor));
    e->heap = calloc(nthreads + 1, sizeof(Cursor *));
    return e->strs && e->samples && e->cur && e->heap ? 0 : -1;
}

int engine_add_string(Engine *e, u64 id, const char *p, size_t n) {
    Str *s = &e->strs[e->nstrs++];
    *s = (Str){p, n};
    return map_put_ptr(&e->strings, id, s) || idset_add(&e->string_ids, id) ? -1 : 0;
}

int engine_add_stack(Engine *e, u64 id) { return idset_add(&e->stacks, id); }

void engine_add_sample(Engine *e, Sample s) { e->samples[e->nsamples++] = s; }

Cursor *engine_add_thread(Engine *e, i64 m, size_t nb) {
    Cursor *c = &e->cur[e->ncur];
    c->b = calloc(nb + 1, sizeof(BatchRef));
    if (!c->b)
        return NULL;
    e->ncur++;
    c->m = m;
    c->nb = nb;
    return c;
}

void engine_gen_start(Engine *e, u64 start_ticks) {
    e->active = 1;
    /* Each thread's first event read before the generation's Sync: as Go's
     * reader, a generation whose first events are unreadable has none. */
    for (size_t i = 0; i < e->ncur && !e->err; i++) {
        Cursor *c = &e->cur[i];
        int r = cursor_next(e, c);
        if (r == 1) {
            e->heap[e->nheap++] = c;
            sift_up(e->heap, e->nheap - 1);
        }
    }
    if (e->err)
        return;
    e->syncs++;
    i64 t0 = 0;
    if (!ns_of(e, start_ticks, &t0)) {
        u64 a[NARGS] = {e->syncs, 0, 0, 0};
        emit(e, SYNC_CODE, t0, (Ctx){NO_ID, NO_ID, NO_ID}, a, 0, 0);
    }
}

u64 engine_final_sync(Engine *e, i64 *time) {
    e->syncs++;
    e->last += 1;
    *time = e->last;
    return e->syncs;
}

void engine_state_clear(Engine *e) {
    map_each_ptr(&e->gs, g_free);
    map_each_ptr(&e->ps, p_free);
    map_each_ptr(&e->tasks, task_free);
    for (size_t i = 0; i < e->nms; i++)
        free(e->ms[i]);
    free(e->ms);
    e->ms = NULL;
    e->nms = e->capms = 0;
    map_free(&e->gs);
    map_free(&e->ps);
    map_free(&e->tasks);
    map_free(&e->msmap);
    memset(e->gcache, 0, sizeof e->gcache);
    e->gc_seq = 0;
    e->gc_state = 0;
    e->initial_gen = 0;
    e->last = 0;
    e->syncs = 0;
}

G *engine_put_g(Engine *e, u64 id, int status, u64 seq_gen, u64 seq) {
    G *g = g_new(e, id, status);
    if (g) {
        g->seq_gen = seq_gen;
        g->seq = seq;
    }
    return g;
}

int engine_put_region(G *g, u64 task, const char *name, size_t n) {
    char *copy = malloc(n ? n : 1);
    if (!copy || grow((void **)&g->regions, &g->capreg, g->nreg + 1, sizeof(Region))) {
        free(copy);
        return -1;
    }
    memcpy(copy, name, n);
    g->regions[g->nreg++] = (Region){task, copy, n};
    return 0;
}

int engine_put_range(Range **r, size_t *n, size_t *cap, u64 typ, u64 desc) {
    if (grow((void **)r, cap, *n + 1, sizeof(Range)))
        return -1;
    (*r)[(*n)++] = (Range){typ, desc};
    return 0;
}

P *engine_put_p(Engine *e, u64 id, int status, u64 seq_gen, u64 seq) {
    P *p = calloc(1, sizeof(P));
    if (!p || map_put_ptr(&e->ps, id, p)) {
        free(p);
        return NULL;
    }
    *p = (P){.id = id, .status = status, .seq_gen = seq_gen, .seq = seq};
    return p;
}

int engine_put_task(Engine *e, u64 id, const char *name, size_t n, u64 parent) {
    Task *task = malloc(sizeof(Task));
    char *copy = malloc(n ? n : 1);
    if (!task || !copy || map_put_ptr(&e->tasks, id, task)) {
        free(task);
        free(copy);
        return -1;
    }
    memcpy(copy, name, n);
    *task = (Task){copy, n, parent};
    return 0;
}

void engine_free(Engine *e) {
    engine_gen_release(e);
    fresh_free(e->fr);
    e->fr = NULL;
    free(e->xstr);
    engine_state_clear(e);
    cols_free(&e->out);
    for (int i = 0; i < 256; i++)
        free(e->names[i]);
}
