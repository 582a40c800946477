/* Handlers of the collector's events, and of the ranges procs and
 * goroutines are in (stop-the-world, sweeping, mark assists): see handlers.h. */

#include "decode/handlers.h"

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

/* The begin code of the range a range-end or range-active code belongs to, -1 none. */
static int range_start_of(int code) {
    switch (code) {
    case EV_STW_END: return EV_STW_BEGIN;
    case EV_GC_ACTIVE: case EV_GC_END: return EV_GC_BEGIN;
    case EV_GC_SWEEP_ACTIVE: case EV_GC_SWEEP_END: return EV_GC_SWEEP_BEGIN;
    case EV_GC_MARK_ASSIST_ACTIVE: case EV_GC_MARK_ASSIST_END: return EV_GC_MARK_ASSIST_BEGIN;
    case EV_GO_SYSCALL_END: case EV_GO_SYSCALL_END_BLOCKED: return EV_GO_SYSCALL_BEGIN;
    case EV_USER_REGION_END: return EV_USER_REGION_BEGIN;
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


/* A fresh engine notes the GC's first event: its sequence and state are the
 * carried state's to decide. */
static int gc_first(Engine *e) {
    if (!e->fr || e->fr->gc_noted)
        return 0;
    e->fr->gc_noted = 1;
    return fresh_note(e, NOTE_GC, 0) ? 0 : -1;
}

/* A fresh engine notes the ranges begun or ended on a proc (0) or goroutine (1):
 * a range open before must be restated before any of them. */
static void ranged(Engine *e, int kind, i64 key) {
    if (e->fr && key != NO_ID && idset_add(&e->fr->ranged[kind], (u64)key))
        fail(e, ERR_MEMORY, -1, "out of memory");
}

/* A fresh engine notes a range restated as active on a proc (0) or goroutine
 * (1): the carry compares it with what was open before, which must be
 * restated before any range began or ended there. */
static void restated(Engine *e, int kind, u64 key, int code) {
    Note *n = fresh_note(e, NOTE_ACTIVE, key);
    if (n) {
        n->args[0] = (u64)kind;
        n->args[1] = (u64)range_start_of(code);
        n->args[2] = (u64)idset_has(&e->fr->ranged[kind], key);
    }
}

int h_gc_active(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    if (gc_first(e))
        return -1;
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

int h_gc_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    if (gc_first(e))
        return -1;
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

int h_gc_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    if (gc_first(e))
        return -1;
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
    P *ps = p_get(e, (u64)c.p);
    if (!ps)
        ORDER("uninitialized proc %lld found during %s", (long long)c.p, ename(e, code));
    return ps;
}

int h_sweep_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    ranged(e, 0, c.p);
    CHECK(MUST, MUST, MAY);
    P *ps = ctx_proc(e, code, c);
    if (!ps || range_begin(e, &ps->ranges, &ps->nrng, &ps->caprng, (u64)code, 0))
        return -1;
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_sweep_active(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    P *ps = p_get(e, a[0]);
    if (!ps)
        return ORDER("encountered GCSweepActive for unknown proc %llu", (unsigned long long)a[0]);
    if (range_active(e, &ps->ranges, &ps->nrng, &ps->caprng, (u64)range_start_of(code), e->gen == e->initial_gen))
        return -1;
    if (e->fr)
        restated(e, 0, a[0], code);
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_sweep_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    ranged(e, 0, c.p);
    CHECK(MUST, MUST, MAY);
    P *ps = ctx_proc(e, code, c);
    u64 desc = 0;
    if (!ps || range_end(e, ps->ranges, &ps->nrng, code, &desc))
        return -1;
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

static G *ctx_g(Engine *e, int code, Ctx c) {
    G *s = g_get(e, (u64)c.g);
    if (!s)
        ORDER("encountered event of type %d without known state for current goroutine %lld", code, (long long)c.g);
    return s;
}

int h_go_range_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    ranged(e, 1, c.g);
    CHECK(USER_GO);
    G *s = ctx_g(e, code, c);
    if (!s)
        return -1;
    if (range_begin(e, &s->ranges, &s->nrng, &s->caprng, (u64)code, code == EV_STW_BEGIN ? a[0] : 0))
        return -1;
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_go_range_active(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    G *s = g_get(e, a[0]);
    if (!s)
        return ORDER("uninitialized goroutine %llu found during %s", (unsigned long long)a[0], ename(e, code));
    if (range_active(e, &s->ranges, &s->nrng, &s->caprng, (u64)range_start_of(code), e->gen == e->initial_gen))
        return -1;
    if (e->fr)
        restated(e, 1, a[0], code);
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_go_range_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    ranged(e, 1, c.g);
    CHECK(USER_GO);
    G *s = ctx_g(e, code, c);
    if (!s)
        return -1;
    u64 desc = 0;
    if (range_end(e, s->ranges, &s->nrng, code, &desc))
        return -1;
    if (code == EV_STW_END) /* the end of a stop-the-world names what its begin named */
        a[0] = desc;
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}
