/* The modern decoder's ordering engine, compiled: its state across
 * generations, a generation's cursors and frontier, and what the handlers
 * (handlers.h) share. The twin is _trace/modern/decoder.py (_PythonEngine) with
 * _trace/modern/order.py. No Python object is touched here: the module (module.c)
 * hands the generation over and releases the GIL while the engine runs.
 *
 * Format facts both twins need (argument counts, which argument is a stack
 * or a string) come from Python at import time (module.c's init_tables),
 * so there is one source for them. Error messages follow Go's reader, as
 * the Python twin's do. */

#ifndef LIVETRACE_ENGINE_H
#define LIVETRACE_ENGINE_H

#include <stdio.h>
#include <string.h>

#include "common/containers.h"
#include "common/generated.h"
#include "common/model.h"
#include "decode/fresh.h"

#define NO_ID ((i64)-1)

/* ---- tables from Python (init_tables) ---- */
extern u8 T_TIMED[256];           /* arguments of a timed event, its timestamp delta included; 0: not timed */
extern u8 T_NARGS[256];           /* arguments an emitted event carries */
extern u8 T_STACK[256];           /* which argument is the event's stack, 255 none */
extern u8 T_STR0[256], T_STR1[256]; /* which arguments are string ids, 255 none */
extern u8 T_CHECKED[256];         /* nonzero: the event names a stack or string that must exist (engine_init_tables) */

/* Derives the tables the engine keeps from those Python gave. */
void engine_init_tables(void);

/* what stops a generation (the numbers are the module's ERR_* constants) */
enum { ERR_NONE, ERR_FORMAT, ERR_ORDER, ERR_MEMORY };

/* ---- state ---- */

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
    u8 unk; /* a fresh engine's: which of p and g are left from before (UNK_P, UNK_G) */
    u8 own; /* a fresh engine's: first met at its own event */
    u8 read; /* a fresh engine's: which unknown cells were noted as decided on (once is enough) */
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

typedef struct Cursor_ {
    i64 m;
    M *ms; /* the thread's state, once looked up: Ms live as long as the engine */
    BatchRef *b;
    size_t nb, bi; /* b[bi - 1] is the batch being read */
    const u8 *p;   /* its payload, of len bytes, off of them read */
    size_t len, off;
    i64 base; /* its payload's offset in the stream */
    i64 last, time;
    int code;
    u64 args[NARGS];
} Cursor;

typedef struct {
    i64 time, m, p, g;
    u64 stack;
} Sample;

typedef struct {
    i64 m, p, g;
} Ctx;

#define GCACHE 4096 /* a power of 2 */

typedef struct {
    /* across generations */
    Map gs, ps, tasks, msmap; /* values: G *, P *, Task *, M * */
    G *gcache[GCACHE];        /* recently found goroutines, by id modulo GCACHE: most lookups skip the hash */
    M **ms;                   /* in order of first appearance, as the Python twin's dict */
    size_t nms, capms;
    u64 gc_seq;
    int gc_state; /* 0 undetermined, 1 not running, 2 running */
    u64 initial_gen;
    i64 last;
    u64 syncs;
    /* A fresh engine's notes (fresh.h), NULL for a sequential one; and the
     * cells of the thread being tried that are left from before (0 unless
     * fresh), which check_ctx reads. */
    Fresh *fr;
    u8 cur_unk;
    size_t nout; /* events written out by the generation's earlier runs */
    /* the generation being decoded; its strings and batches point into
     * Python objects the module keeps alive */
    int active;
    u64 gen;
    double ns_per_tick;
    Str *strs; /* the strings' texts, nstrs of the room prepared */
    size_t nstrs;
    Map strings;         /* values: Str * */
    IdSet string_ids, stacks;
    Cursor *cur;
    size_t ncur;
    Cursor **heap;
    size_t nheap;
    Sample *samples;
    size_t nsamples, si;
    Str *xstr; /* a generation's derived strings: task types at their end */
    size_t nx, capx;
    u8 mask[256];
    Columns out;
    /* the first error stops the generation */
    int err;
    i64 err_offset;
    char errmsg[600];
    char *names[256]; /* event names, for messages */
} Engine;

/* ---- the engine's interface to the module ---- */

int engine_set_name(Engine *e, int code, const char *name);
/* Starts generation gen, with room for its strings, samples and threads: 0, or -1 when out of memory. */
int engine_gen_prepare(Engine *e, u64 gen, double ns_per_tick, size_t nstrings, size_t nsamples, size_t nthreads);
int engine_add_string(Engine *e, u64 id, const char *p, size_t n);
int engine_add_stack(Engine *e, u64 id);
void engine_add_sample(Engine *e, Sample s);
/* A thread's cursor, with room for nb batches (fill c->b[0:nb]); NULL when out of memory. */
Cursor *engine_add_thread(Engine *e, i64 m, size_t nb);
/* Emits the generation's Sync and loads every thread's first event. */
void engine_gen_start(Engine *e, u64 start_ticks);
/* Decodes until the generation is done, an error, or max events are out: 0, or -1 when out of memory. */
int engine_run(Engine *e, size_t max);
/* A batch of engine_run_all: its columns (n events, in memory of their own,
 * which the caller frees) and how many derived strings (xstr) there were at
 * its end. */
typedef struct {
    Columns c;
    size_t nx;
} RunBatch;
/* Decodes the rest of the generation, cut into batches as repeated
 * engine_run(e, max) calls cut it (the first holds what engine_gen_start
 * wrote, the last is where it is done or stopped by an error, and may be
 * empty): 0, or -1 when out of memory. Either way *out holds the *n batches
 * made, to free. Touches no Python object: it runs without the GIL. */
int engine_run_all(Engine *e, size_t max, RunBatch **out, size_t *n);
/* The Sync event the stream's end makes: its count, and its time in *time. */
u64 engine_final_sync(Engine *e, i64 *time);
void engine_gen_release(Engine *e);
void engine_free(Engine *e);
/* Forgets the state carried across generations (goroutines, procs, threads,
 * tasks, the GC, times and Syncs), between generations, so that another
 * one can be put in its place (the module's Engine.set_state). */
void engine_state_clear(Engine *e);
/* A fresh engine orders its generations as if each were the trace's first,
 * noting where the state from before could have mattered (fresh.h): 0, or
 * -1 when out of memory. */
int engine_make_fresh(Engine *e);
/* Put back one record of a carried state: 0, or -1 when out of memory. */
G *engine_put_g(Engine *e, u64 id, int status, u64 seq_gen, u64 seq);
int engine_put_region(G *g, u64 task, const char *name, size_t n);
int engine_put_range(Range **r, size_t *n, size_t *cap, u64 typ, u64 desc);
P *engine_put_p(Engine *e, u64 id, int status, u64 seq_gen, u64 seq);
int engine_put_task(Engine *e, u64 id, const char *name, size_t n, u64 parent);

/* ---- for the handlers ---- */

int fail(Engine *e, int kind, i64 offset, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define ORDER(...) fail(e, ERR_ORDER, -1, __VA_ARGS__)
const char *ename(Engine *e, int code);

/* fresh.c: a fresh engine's notes */
void fresh_free(Fresh *f);
void fresh_miss(Engine *e, int kind, u64 key);
void fresh_skip(Engine *e);
int fresh_push(Engine *e, U64s *s, u64 x);
Note *fresh_note(Engine *e, int kind, u64 key);
void fresh_read(Engine *e, M *m, int cell);
int fresh_happened(Engine *e, M *ms, Ctx nc, size_t before, size_t notes_before, u64 skipped_before);

G *g_new(Engine *e, u64 id, int status);
void g_delete(Engine *e, u64 id);
M *m_new(Engine *e, i64 id);

/* The goroutine of id, or NULL. */
static inline G *g_get(Engine *e, u64 id) {
    G **slot = &e->gcache[id & (GCACHE - 1)];
    G *g = *slot;
    if (g && g->id == id)
        return g;
    g = map_get_ptr(&e->gs, id);
    if (g)
        *slot = g;
    else if (e->fr)
        fresh_miss(e, NOTE_FIRST_G, id);
    return g;
}

/* The proc of id, or NULL. */
static inline P *p_get(Engine *e, u64 id) {
    P *p = map_get_ptr(&e->ps, id);
    if (!p && e->fr)
        fresh_miss(e, NOTE_FIRST_P, id);
    return p;
}

static inline M *m_get(Engine *e, i64 id) {
    M *m = map_get_ptr(&e->msmap, (u64)id);
    return m ? m : m_new(e, id);
}

static inline int has_string(Engine *e, u64 id) { return id == 0 || idset_has(&e->string_ids, id); }
static inline int has_stack(Engine *e, u64 id) { return id == 0 || idset_has(&e->stacks, id); }

/* The stack and string ids of an event exist in the generation's tables:
 * 0, or -1 with the engine's error set. */
int check_ids(Engine *e, int code, const u64 *a);

/* One event happens: its ids are checked against the generation's tables,
 * its time made strictly later than the one before, and it is written out
 * if the filter wants its code. Inline: every handler ends in it. a holds
 * NARGS values, those past the code's arguments 0, so all are copied. */
static inline int emit(Engine *e, int code, i64 t, Ctx c, const u64 *a, u64 x0, u64 x1) {
    if (T_CHECKED[code] && check_ids(e, code, a))
        return -1;
    if (t <= e->last)
        t = e->last + 1;
    e->last = t;
    if (!e->mask[code]) {
        if (e->fr) /* it still counts in the times a later carry clamps */
            fresh_skip(e);
        return 0;
    }
    Columns *o = &e->out;
    if (o->n == o->cap && cols_reserve(o, o->n + 1))
        return fail(e, ERR_MEMORY, -1, "out of memory");
    size_t i = o->n++;
    o->code[i] = (u8)code;
    o->time[i] = t;
    o->m[i] = c.m;
    o->p[i] = c.p;
    o->g[i] = c.g;
    memcpy(o->args + i * NARGS, a, NARGS * sizeof(u64));
    o->extra[i * NEXTRA] = x0;
    o->extra[i * NEXTRA + 1] = x1;
    return 0;
}

#endif
