/* One legacy event to modern events (twin: _trace/legacy/convert.py's
 * ModelConverter.convert), the rule both compiled paths follow: the exact
 * one (legacy_convert.c: a whole trace's ordered events, into columns) and
 * the live provisional one (legacy_live.c: chunk by chunk, into the
 * release window). What differs between them is a parameter: where the
 * events go (ConvSink) and whether a string id must be known (ConvRules).
 *
 * conv_event is inlined into each path's loop with its sink's functions
 * known, so a path pays no indirect call an event. */

#ifndef LIVETRACE_LEGACY_CONV_H
#define LIVETRACE_LEGACY_CONV_H

#include "decode/legacy.h"
#include "common/model.h"

/* A fresh state, as the twin's converter starts (no stop-the-world yet: 0). */
static inline void cs_init(ConvState *cs) {
    memset(cs, 0, sizeof *cs);
    cs->pre_init = 1;
}

static inline void cs_free(ConvState *cs) {
    map_free(&cs->created), map_free(&cs->seen), map_free(&cs->pms), map_free(&cs->tasks_name);
    map_free(&cs->tasks_parent);
    free(cs->order);
    cs_init(cs);
}

/* The trace's side of the rules. */
typedef struct {
    const u64 *builtin;
    int ver;
    const Map *strs;   /* the string ids the trace has defined */
    int strict;        /* a string id not among them: give up (a complete trace), or let it be (a live
                        * one, whose strings may come later) */
    const Map *stacks; /* the stack ids with frames (another is 0), or NULL: every id as it is */
} ConvRules;

/* Where the events go: put writes one (-1: no memory); message and task_end
 * give what a user log's args[2] and a task end's extra[1] carry for its
 * message (index) and its type's name (string id, 0: none): 0, or -1. */
typedef struct {
    int (*put)(void *to, int code, i64 t, i64 m, i64 p, i64 g, u64 a0, u64 a1, u64 a2, u64 a3, u64 x0, u64 x1);
    int (*message)(void *to, u32 msg, u64 *out);
    int (*task_end)(void *to, u64 name, u64 *out);
    void *to;
} ConvSink;

/* Why an event of type t stops or blocks its goroutine: its builtin string. */
static const u8 CONV_WHY[LEV_COUNT] = {
    [LEV_GO_SCHED] = B_GO_SCHED,            [LEV_GO_PREEMPT] = B_GO_PREEMPT,
    [LEV_GO_STOP] = B_GO_STOP,              [LEV_GO_SLEEP] = B_GO_SLEEP,
    [LEV_GO_BLOCK] = B_GO_BLOCK,            [LEV_GO_BLOCK_SEND] = B_GO_BLOCK_SEND,
    [LEV_GO_BLOCK_RECV] = B_GO_BLOCK_RECV,  [LEV_GO_BLOCK_SELECT] = B_GO_BLOCK_SELECT,
    [LEV_GO_BLOCK_SYNC] = B_GO_BLOCK_SYNC,  [LEV_GO_BLOCK_COND] = B_GO_BLOCK_COND,
    [LEV_GO_BLOCK_NET] = B_GO_BLOCK_NET,    [LEV_GO_BLOCK_GC] = B_GO_BLOCK_GC,
};

static inline int cv_known(const ConvRules *x, u64 id) { return id == 0 || map_find(x->strs, id) != NULL; }

/* The event e, at ts (ns), into the sink: an L_* outcome. blocked: e is a
 * syscall whose goroutine's next event is its block. */
static inline __attribute__((always_inline)) int conv_event(ConvState *cs, const ConvRules *x, const ConvSink *k,
                                                            const LEv *e, i64 ts, int blocked) {
    const u64 *B = x->builtin;
    int t = l_unlocal(e->typ);
    const u64 *a = e->a;
    i64 p = e->p;
    u64 *pm = p != -1 ? map_find(&cs->pms, (u64)p) : NULL;
    i64 m = pm ? (i64)*pm : -1;
    i64 g = e->g ? (i64)e->g : -1;
    u64 stk = e->stk & 0xffffffffu;
    if (x->stacks && !map_find(x->stacks, stk))
        stk = 0;
    int r = 0;
#define PUT(CODE, M, G, A0, A1, A2, A3, X0, X1) r = k->put(k->to, CODE, ts, M, p, G, A0, A1, A2, A3, X0, X1)
    switch (t) {
    case LEV_GOMAXPROCS:
        if (cs->pre_init) {
            cs->pre_init = 0;
            for (size_t j = 0; j < cs->norder && !r; j++) {
                u64 *alive = map_find(&cs->created, cs->order[j]);
                if (alive && *alive == j + 1)
                    r = k->put(k->to, EV_GO_STATUS, ts, -1, -1, -1, cs->order[j], U64MAX, GO_RUNNABLE, 0, 0, 0);
            }
            cs->norder = 0;
            map_free(&cs->created);
        } else
            PUT(EV_PROCS_CHANGE, m, g, a[0], stk, 0, 0, 0, 0);
        break;
    case LEV_GO_CREATE:
        if (cs->pre_init) {
            u64 *v = map_slot(&cs->created, a[0], 0);
            if (!v || grow((void **)&cs->order, &cs->caporder, cs->norder + 1, 8))
                return L_NO_MEMORY;
            if (!*v) {
                cs->order[cs->norder++] = a[0];
                *v = cs->norder;
            }
        } else
            PUT(EV_GO_CREATE, m, g, a[0], a[1], stk, 0, 0, 0);
        break;
    case LEV_PROC_START: {
        u64 *v = map_slot(&cs->pms, (u64)p, 0), *sv;
        if (!v)
            return L_NO_MEMORY;
        *v = a[0];
        m = p != -1 ? (i64)a[0] : -1;
        if (!(sv = map_slot(&cs->seen, (u64)p, 0)))
            return L_NO_MEMORY;
        if (*sv)
            PUT(EV_PROC_START, m, g, (u64)p, 0, 0, 0, 0, 0);
        else {
            *sv = 1;
            PUT(EV_PROC_STATUS, m, g, (u64)p, PROC_RUNNING, 0, 0, 0, 0);
        }
        break;
    }
    case LEV_PROC_STOP: {
        u64 *v = map_find(&cs->pms, (u64)p), *sv;
        if (v)
            *v = (u64)-1; /* no thread any more (no real thread id is this: see the readers) */
        if (!(sv = map_slot(&cs->seen, (u64)p, 0)))
            return L_NO_MEMORY;
        if (*sv)
            PUT(EV_PROC_STOP, m, g, 0, 0, 0, 0, 0, 0);
        else {
            *sv = 1;
            PUT(EV_PROC_STATUS, m, g, (u64)p, PROC_IDLE, 0, 0, 0, 0);
        }
        break;
    }
    case LEV_GC_START: PUT(EV_GC_BEGIN, m, g, a[0], stk, 0, 0, 0, 0); break;
    case LEV_GC_DONE: PUT(EV_GC_END, m, g, 0, 0, 0, 0, 0, 0); break;
    case LEV_STW_START: {
        int j = x->ver < LEGACY_GO1_21 ? (int)a[0] + 1 : (a[0] < B_COUNT - B_STW0 ? (int)a[0] : 0);
        cs->stw_reason = B[B_STW0 + j];
        PUT(EV_STW_BEGIN, m, g, cs->stw_reason, 0, 0, 0, 0, 0);
        break;
    }
    case LEV_STW_DONE: PUT(EV_STW_END, m, g, cs->stw_reason, 0, 0, 0, 0, 0); break;
    case LEV_GC_SWEEP_START: PUT(EV_GC_SWEEP_BEGIN, m, g, stk, 0, 0, 0, 0, 0); break;
    case LEV_GC_SWEEP_DONE: PUT(EV_GC_SWEEP_END, m, g, a[0], a[1], 0, 0, 0, 0); break;
    case LEV_GO_START:
        if (cs->pre_init) {
            u64 *v = map_find(&cs->created, a[0]);
            if (v)
                *v = 0;
            PUT(EV_GO_STATUS, m, g, a[0], U64MAX, GO_RUNNING, 0, 0, 0);
        } else
            PUT(EV_GO_START, m, g, a[0], a[1], 0, 0, 0, 0);
        break;
    case LEV_GO_START_LABEL: {
        u64 *v = map_find(&cs->pms, (u64)p);
        i64 m0 = v && *v != (u64)-1 ? (i64)*v : 0;
        if (x->strict && !cv_known(x, a[2]))
            return L_GIVE_UP;
        PUT(EV_GO_START, m0, (i64)e->g, a[0], a[1], 0, 0, 0, 0);
        if (!r)
            PUT(EV_GO_LABEL, m0, (i64)e->g, a[2], 0, 0, 0, 0, 0);
        break;
    }
    case LEV_GO_END: PUT(EV_GO_DESTROY, m, g, 0, 0, 0, 0, 0, 0); break;
    case LEV_GO_SCHED: case LEV_GO_PREEMPT: PUT(EV_GO_STOP, m, g, B[CONV_WHY[t]], stk, 0, 0, 0, 0); break;
    case LEV_GO_STOP: case LEV_GO_SLEEP: case LEV_GO_BLOCK: case LEV_GO_BLOCK_SEND: case LEV_GO_BLOCK_RECV:
    case LEV_GO_BLOCK_SELECT: case LEV_GO_BLOCK_SYNC: case LEV_GO_BLOCK_COND: case LEV_GO_BLOCK_NET: case LEV_GO_BLOCK_GC:
        PUT(EV_GO_BLOCK, m, g, B[CONV_WHY[t]], stk, 0, 0, 0, 0);
        break;
    case LEV_GO_UNBLOCK: PUT(EV_GO_UNBLOCK, m, g, a[0], a[1], stk, 0, 0, 0); break;
    case LEV_GO_SYS_CALL:
        if (blocked)
            PUT(EV_GO_SYSCALL_BEGIN, m, g, 0, stk, 0, 0, 0, 0);
        else {
            u64 *v = map_find(&cs->pms, (u64)p);
            i64 m0 = v && *v != (u64)-1 ? (i64)*v : 0;
            PUT(EV_GO_SYSCALL_BEGIN, m0, (i64)e->g, 0, stk, 0, 0, 0, 0);
            if (!r)
                r = k->put(k->to, EV_GO_SYSCALL_END, ts + 1, m0, p, (i64)e->g, 0, 0, 0, 0, 0, 0);
        }
        break;
    case LEV_GO_SYS_EXIT: PUT(EV_GO_SYSCALL_END_BLOCKED, m, g, 0, 0, 0, 0, 0, 0); break;
    case LEV_GO_SYS_BLOCK: break;
    case LEV_GO_WAITING: case LEV_GO_IN_SYSCALL: {
        u64 *v = map_find(&cs->created, a[0]);
        if (v)
            *v = 0;
        PUT(EV_GO_STATUS, m, g, a[0], U64MAX, t == LEV_GO_WAITING ? GO_WAITING : GO_SYSCALL, 0, 0, 0);
        break;
    }
    case LEV_HEAP_ALLOC: PUT(EV_HEAP_ALLOC, m, g, a[0], 0, 0, 0, 0, 0); break;
    case LEV_HEAP_GOAL: PUT(EV_HEAP_GOAL, m, g, a[0], 0, 0, 0, 0, 0); break;
    case LEV_GC_MARK_ASSIST_START: PUT(EV_GC_MARK_ASSIST_BEGIN, m, g, stk, 0, 0, 0, 0, 0); break;
    case LEV_GC_MARK_ASSIST_DONE: PUT(EV_GC_MARK_ASSIST_END, m, g, 0, 0, 0, 0, 0, 0); break;
    case LEV_USER_TASK_CREATE: {
        int known = cv_known(x, a[2]);
        if (x->strict && !known)
            return L_GIVE_UP;
        u64 *nm = map_slot(&cs->tasks_name, a[0], 0), *pa = map_slot(&cs->tasks_parent, a[0], 0);
        if (!nm || !pa)
            return L_NO_MEMORY;
        /* the type's name as far as the strings have come: id + 1, or 1 (id 0, ""); 0 is "no open task" */
        *nm = (known ? a[2] : 0) + 1, *pa = a[1];
        PUT(EV_USER_TASK_BEGIN, m, g, a[0], a[1] ? a[1] : NO_TASK, a[2], stk, 0, 0);
        break;
    }
    case LEV_USER_TASK_END: {
        u64 *nm = map_find(&cs->tasks_name, a[0]), *pa = map_find(&cs->tasks_parent, a[0]);
        u64 name = 0, parent = NO_TASK, x1;
        if (nm && *nm) {
            name = *nm - 1, parent = *pa;
            *nm = 0;
        }
        if (k->task_end(k->to, name, &x1))
            return L_NO_MEMORY;
        PUT(EV_USER_TASK_END, m, g, a[0], stk, 0, 0, parent, x1);
        break;
    }
    case LEV_USER_REGION:
        if (x->strict && !cv_known(x, a[2]))
            return L_GIVE_UP;
        PUT(a[1] == REGION_START ? EV_USER_REGION_BEGIN : EV_USER_REGION_END, m, g, a[0], a[2], stk, 0, 0, 0);
        break;
    case LEV_USER_LOG: {
        u64 a2;
        if (x->strict && !cv_known(x, a[1]))
            return L_GIVE_UP;
        if (k->message(k->to, e->msg, &a2))
            return L_NO_MEMORY;
        PUT(EV_USER_LOG, m, g, a[0], a[1], a2, stk, 0, 0);
        break;
    }
    case LEV_CPU_SAMPLE: PUT(EV_CPU_SAMPLE, -1, g, stk, 0, 0, 0, 0, 0); break;
    default:
        return L_GIVE_UP;
    }
#undef PUT
    return r ? L_NO_MEMORY : L_OK;
}

#endif
