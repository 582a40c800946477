/* Converting a legacy trace's ordered events to the modern event model
 * (twin: legacy/convert.py's ModelConverter and legacy_events), and the
 * whole legacy path from bytes to columns. */

#include "legacy.h"
#include "model.h"

static int col_put(Cols *c, int code, i64 t, i64 m, i64 p, i64 g, u64 a0, u64 a1, u64 a2, u64 a3, u64 x0,
                   u64 x1, int bump) {
    if (bump) {
        if (t <= c->last)
            t = c->last + 1;
        c->last = t;
    }
    if (!c->mask[code])
        return 0;
    if (c->count_only) {
        c->counted++;
        return 0;
    }
    Columns *o = &c->out;
    if (o->n == o->cap && cols_reserve(o, o->n + 1))
        return -1;
    size_t i = o->n++;
    o->code[i] = (u8)code, o->time[i] = t + c->offset, o->m[i] = m, o->p[i] = p, o->g[i] = g;
    u64 *a = &o->args[NARGS * i], *x = &o->extra[NEXTRA * i];
    a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3, x[0] = x0, x[1] = x1;
    return 0;
}

int l_times(L *l) {
    LRec *ev = l->all;
    if (!l->nall)
        return L_GIVE_UP;
    /* double: the same as the twin's float arithmetic */
    double npt = 1e9 / (double)l->ticks_per_sec;
    i64 min_ts = ev[0].ts;
    for (size_t i = 0; i < l->nall; i++) {
        double v = (double)(ev[i].ts - min_ts) * npt;
        if (!(v < 9.0e18 && v > -9.0e18))
            return L_GIVE_UP;
        ev[i].ts = (i64)v;
        if (ev[i].typ == LEV_GO_UNBLOCK && map_find(&l->timer_gs, ev[i].g))
            ev[i].p = TIMER_P;
        if (ev[i].typ == LEV_GO_SYS_EXIT)
            ev[i].p = SYSCALL_P;
    }
    return L_OK;
}

static int has_str(L *l, u64 id) { return id == 0 || map_find(&l->str_at, id) != NULL; }

void conv_free(Conv *cv) {
    map_free(&cv->created), map_free(&cv->seen), map_free(&cv->pms), map_free(&cv->tasks_name);
    map_free(&cv->tasks_parent);
    free(cv->blocked), free(cv->order);
    memset(cv, 0, sizeof *cv);
}

void conv_reset(Conv *cv) {
    map_free(&cv->created), map_free(&cv->seen), map_free(&cv->pms), map_free(&cv->tasks_name);
    map_free(&cv->tasks_parent);
    cv->norder = 0, cv->i = 0, cv->pre_init = 1, cv->stage = 0, cv->stw_reason = 0;
}

int conv_begin(L *l, Conv *cv, u64 msg_base, u64 syncs) {
    size_t n = l->nall;
    const LRec *ev = l->all;
    memset(cv, 0, sizeof *cv);
    cv->msg_base = msg_base, cv->syncs = syncs;
    conv_reset(cv);
    int rc = l_times(l);
    if (!rc)
        rc = l_check(l);
    if (rc)
        return rc;
    /* whether a syscall blocked: its goroutine's next event says so */
    Map pending = {0}; /* goroutine -> its syscall awaiting its next event, + 1 */
    if (!(cv->blocked = calloc(n / 8 + 1, 1)))
        return L_NO_MEMORY;
    for (size_t i = 0; i < n; i++) {
        u64 *w = map_slot(&pending, ev[i].g, 0);
        if (!w) {
            map_free(&pending);
            return L_NO_MEMORY;
        }
        if (*w && ev[i].typ == LEV_GO_SYS_BLOCK)
            cv->blocked[(*w - 1) >> 3] |= (u8)(1 << ((*w - 1) & 7));
        *w = ev[i].typ == LEV_GO_SYS_CALL ? i + 1 : 0;
    }
    map_free(&pending);
    return L_OK;
}

int conv_run(L *l, Conv *cv, Cols *c, size_t until) {
    size_t n = l->nall;
    const LRec *ev = l->all;
    const u64 *B = l->builtin;
    const u8 *blocked = cv->blocked;
    if (!cv->stw_reason)
        cv->stw_reason = B[B_STW0];
    if (cv->stage == 0) {
        if (col_put(c, SYNC_CODE, ev[0].ts - 1, -1, -1, -1, cv->syncs + 1, 0, 0, 0, 0, 0, 0))
            return L_NO_MEMORY;
        cv->stage = 1;
    }
    size_t i = cv->i;
    int rc = L_GIVE_UP;
    for (; i < n && (c->count_only || c->out.n < until); i++) {
        LEv ex, *e = &ex;
        l_expand(l, &ev[i], e);
        int t = e->typ;
        const u64 *a = e->a;
        i64 p = e->p, ts = e->ts;
        u64 *pm = p != -1 ? map_find(&cv->pms, (u64)p) : NULL;
        i64 m = pm ? (i64)*pm : -1;
        i64 g = e->g ? (i64)e->g : -1;
        u64 s32 = e->stk & 0xffffffffu;
        u64 stk = map_find(&l->stacks, s32) ? s32 : 0;
        int r = 0;
#define PUT(CODE, M, G, A0, A1, A2, A3, X0, X1) r = col_put(c, CODE, ts, M, p, G, A0, A1, A2, A3, X0, X1, 1)
        switch (t) {
        case LEV_GOMAXPROCS:
            if (cv->pre_init) {
                cv->pre_init = 0;
                for (size_t k = 0; k < cv->norder && !r; k++) {
                    u64 *alive = map_find(&cv->created, cv->order[k]);
                    if (alive && *alive == k + 1)
                        r = col_put(c, EV_GO_STATUS, ts, -1, -1, -1, cv->order[k], U64MAX, GO_RUNNABLE, 0, 0, 0, 1);
                }
                cv->norder = 0;
                map_free(&cv->created);
            } else
                PUT(EV_PROCS_CHANGE, m, g, a[0], stk, 0, 0, 0, 0);
            break;
        case LEV_GO_CREATE:
            if (cv->pre_init) {
                u64 *v = map_slot(&cv->created, a[0], 0);
                if (!v || grow((void **)&cv->order, &cv->caporder, cv->norder + 1, 8))
                    goto oom;
                if (!*v) {
                    cv->order[cv->norder++] = a[0];
                    *v = cv->norder;
                }
            } else
                PUT(EV_GO_CREATE, m, g, a[0], a[1], stk, 0, 0, 0);
            break;
        case LEV_PROC_START: {
            u64 *v = map_slot(&cv->pms, (u64)p, 0), *sv;
            if (!v)
                goto oom;
            *v = a[0];
            m = p != -1 ? (i64)a[0] : -1;
            if (!(sv = map_slot(&cv->seen, (u64)p, 0)))
                goto oom;
            if (*sv)
                PUT(EV_PROC_START, m, g, (u64)p, 0, 0, 0, 0, 0);
            else {
                *sv = 1;
                PUT(EV_PROC_STATUS, m, g, (u64)p, PROC_RUNNING, 0, 0, 0, 0);
            }
            break;
        }
        case LEV_PROC_STOP: {
            u64 *v = map_find(&cv->pms, (u64)p), *sv;
            if (v)
                *v = (u64)-1; /* no thread any more (no real thread id is this: see l_read) */
            if (!(sv = map_slot(&cv->seen, (u64)p, 0)))
                goto oom;
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
            int k = l->ver < LEGACY_GO1_21 ? (int)a[0] + 1 : (a[0] < B_COUNT - B_STW0 ? (int)a[0] : 0);
            cv->stw_reason = B[B_STW0 + k];
            PUT(EV_STW_BEGIN, m, g, cv->stw_reason, 0, 0, 0, 0, 0);
            break;
        }
        case LEV_STW_DONE: PUT(EV_STW_END, m, g, cv->stw_reason, 0, 0, 0, 0, 0); break;
        case LEV_GC_SWEEP_START: PUT(EV_GC_SWEEP_BEGIN, m, g, stk, 0, 0, 0, 0, 0); break;
        case LEV_GC_SWEEP_DONE: PUT(EV_GC_SWEEP_END, m, g, a[0], a[1], 0, 0, 0, 0); break;
        case LEV_GO_START:
            if (cv->pre_init) {
                u64 *v = map_find(&cv->created, a[0]);
                if (v)
                    *v = 0;
                PUT(EV_GO_STATUS, m, g, a[0], U64MAX, GO_RUNNING, 0, 0, 0);
            } else
                PUT(EV_GO_START, m, g, a[0], a[1], 0, 0, 0, 0);
            break;
        case LEV_GO_START_LABEL: {
            u64 *v = map_find(&cv->pms, (u64)p);
            i64 m0 = v && *v != (u64)-1 ? (i64)*v : 0;
            if (!has_str(l, a[2]))
                goto out;
            PUT(EV_GO_START, m0, (i64)e->g, a[0], a[1], 0, 0, 0, 0);
            if (!r)
                PUT(EV_GO_LABEL, m0, (i64)e->g, a[2], 0, 0, 0, 0, 0);
            break;
        }
        case LEV_GO_END: PUT(EV_GO_DESTROY, m, g, 0, 0, 0, 0, 0, 0); break;
        case LEV_GO_SCHED: PUT(EV_GO_STOP, m, g, B[B_GOSCHED], stk, 0, 0, 0, 0); break;
        case LEV_GO_PREEMPT: PUT(EV_GO_STOP, m, g, B[B_PREEMPTED], stk, 0, 0, 0, 0); break;
        case LEV_GO_STOP: PUT(EV_GO_BLOCK, m, g, B[B_FOREVER], stk, 0, 0, 0, 0); break;
        case LEV_GO_SLEEP: PUT(EV_GO_BLOCK, m, g, B[B_SLEEP], stk, 0, 0, 0, 0); break;
        case LEV_GO_BLOCK: PUT(EV_GO_BLOCK, m, g, B[B_EMPTY], stk, 0, 0, 0, 0); break;
        case LEV_GO_BLOCK_SEND: PUT(EV_GO_BLOCK, m, g, B[B_SEND], stk, 0, 0, 0, 0); break;
        case LEV_GO_BLOCK_RECV: PUT(EV_GO_BLOCK, m, g, B[B_RECV], stk, 0, 0, 0, 0); break;
        case LEV_GO_BLOCK_SELECT: PUT(EV_GO_BLOCK, m, g, B[B_SELECT], stk, 0, 0, 0, 0); break;
        case LEV_GO_BLOCK_SYNC: PUT(EV_GO_BLOCK, m, g, B[B_SYNC], stk, 0, 0, 0, 0); break;
        case LEV_GO_BLOCK_COND: PUT(EV_GO_BLOCK, m, g, B[B_COND], stk, 0, 0, 0, 0); break;
        case LEV_GO_BLOCK_NET: PUT(EV_GO_BLOCK, m, g, B[B_NETWORK], stk, 0, 0, 0, 0); break;
        case LEV_GO_BLOCK_GC: PUT(EV_GO_BLOCK, m, g, B[B_ASSIST], stk, 0, 0, 0, 0); break;
        case LEV_GO_UNBLOCK: PUT(EV_GO_UNBLOCK, m, g, a[0], a[1], stk, 0, 0, 0); break;
        case LEV_GO_SYS_CALL:
            if (blocked[i >> 3] >> (i & 7) & 1)
                PUT(EV_GO_SYSCALL_BEGIN, m, g, 0, stk, 0, 0, 0, 0);
            else {
                u64 *v = map_find(&cv->pms, (u64)p);
                i64 m0 = v && *v != (u64)-1 ? (i64)*v : 0;
                PUT(EV_GO_SYSCALL_BEGIN, m0, (i64)e->g, 0, stk, 0, 0, 0, 0);
                if (!r)
                    r = col_put(c, EV_GO_SYSCALL_END, ts + 1, m0, p, (i64)e->g, 0, 0, 0, 0, 0, 0, 1);
            }
            break;
        case LEV_GO_SYS_EXIT: PUT(EV_GO_SYSCALL_END_BLOCKED, m, g, 0, 0, 0, 0, 0, 0); break;
        case LEV_GO_SYS_BLOCK: break;
        case LEV_GO_WAITING: case LEV_GO_IN_SYSCALL: {
            u64 *v = map_find(&cv->created, a[0]);
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
            if (!has_str(l, a[2]))
                goto out;
            u64 *nm = map_slot(&cv->tasks_name, a[0], 0), *pa = map_slot(&cv->tasks_parent, a[0], 0);
            if (!nm || !pa)
                goto oom;
            *nm = a[2] + 1, *pa = a[1]; /* name id + 1: 0 is "no open task" */
            PUT(EV_USER_TASK_BEGIN, m, g, a[0], a[1] ? a[1] : NO_TASK, a[2], stk, 0, 0);
            break;
        }
        case LEV_USER_TASK_END: {
            u64 *nm = map_find(&cv->tasks_name, a[0]), *pa = map_find(&cv->tasks_parent, a[0]);
            u64 name = 0, parent = NO_TASK;
            if (nm && *nm) {
                name = *nm - 1, parent = *pa;
                *nm = 0;
            }
            /* extra[1]: the name's string id; Python makes it an extra string */
            PUT(EV_USER_TASK_END, m, g, a[0], stk, 0, 0, parent, name);
            break;
        }
        case LEV_USER_REGION:
            if (!has_str(l, a[2]))
                goto out;
            PUT(a[1] == REGION_START ? EV_USER_REGION_BEGIN : EV_USER_REGION_END, m, g, a[0], a[2], stk, 0, 0, 0);
            break;
        case LEV_USER_LOG:
            if (!has_str(l, a[1]))
                goto out;
            PUT(EV_USER_LOG, m, g, a[0], a[1], cv->msg_base + e->msg, stk, 0, 0);
            break;
        case LEV_CPU_SAMPLE: PUT(EV_CPU_SAMPLE, -1, g, stk, 0, 0, 0, 0, 0); break;
        default:
            goto out;
        }
#undef PUT
        if (r)
            goto oom;
    }
    if (i == n && cv->stage == 1) {
        if (col_put(c, SYNC_CODE, c->last + 1, -1, -1, -1, cv->syncs + 2, 0, 0, 0, 0, 0, 0))
            goto oom;
        cv->stage = 2;
    }
    rc = L_OK;
    goto out;
oom:
    rc = L_NO_MEMORY;
out:
    cv->i = i;
    return rc;
}
