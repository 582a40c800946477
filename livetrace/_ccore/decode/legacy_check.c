/* Checking the states a legacy trace's ordered events go through (twin:
 * _trace/legacy/checks.py's check_states): a trace that breaks them is given up on. */

#include "decode/legacy.h"

static int str_eq(L *l, u64 a, u64 b) {
    if (a == b)
        return 1;
    u64 *x = map_find(&l->str_at, a), *y = map_find(&l->str_at, b);
    size_t nx = x ? (size_t)(*x & 0xffffff) : 0, ny = y ? (size_t)(*y & 0xffffff) : 0;
    return nx == ny && (!nx || !memcmp(l->d + (*x >> 24), l->d + (*y >> 24), nx));
}

typedef struct {
    u64 *task, *name;
    size_t n, cap, cap2;
} RegionStack;

int l_check(L *l) {
    Map gstate = {0}, glast = {0}, prun = {0}, pg = {0}, psweep = {0}, tasks = {0}, assists = {0}, reg = {0};
    RegionStack *rs = NULL;
    size_t nrs = 0, caprs = 0;
    Map pstw = {0}; /* P -> in a stop-the-world, before 1.10 */
    u64 stw_on = 0;
    int gc_on = 0, rc = L_GIVE_UP;
    if (!map_slot(&gstate, 0, G_RUNNING))
        goto oom;
    for (size_t i = 0; i < l->nall; i++) {
        LRec *r = &l->all[i];
        int t = r->typ;
        LEv ex, *e = &ex;
        l_view(l, r, e,
               t == LEV_GO_CREATE || t == LEV_GO_UNBLOCK || t == LEV_USER_TASK_CREATE || t == LEV_USER_TASK_END ||
                   t == LEV_USER_REGION);
        u64 key = (t == LEV_GC_START || t == LEV_GC_DONE || t == LEV_STW_START || t == LEV_STW_DONE) ? 0 : e->g;
        u64 *gs = map_slot(&gstate, key, G_DEAD), *gl = map_slot(&glast, key, 0);
        u64 *pr = map_slot(&prun, (u64)e->p, 0), *pgv = map_slot(&pg, (u64)e->p, 0);
        u64 *psw = map_slot(&psweep, (u64)e->p, 0);
        if (!gs || !gl || !pr || !pgv || !psw)
            goto oom;
#define RUNNING(ALLOW0) if (*gs != G_RUNNING || *pgv != e->g || (!(ALLOW0) && e->g == 0)) goto out
        switch (t) {
        case LEV_PROC_START:
            if (*pr)
                goto out;
            *pr = 1;
            break;
        case LEV_PROC_STOP:
            if (!*pr || *pgv)
                goto out;
            *pr = 0;
            break;
        case LEV_GC_START:
            if (gc_on)
                goto out;
            gc_on = 1;
            e->p = r->p = GC_P;
            break;
        case LEV_GC_DONE:
            if (!gc_on)
                goto out;
            gc_on = 0;
            break;
        case LEV_STW_START: case LEV_STW_DONE: {
            /* before 1.10 they pair per P, from 1.10 on across the trace */
            u64 *on = l->ver < LEGACY_GO1_10 ? map_slot(&pstw, (u64)e->p, 0) : &stw_on;
            if (!on)
                goto oom;
            if ((t == LEV_STW_START) == (*on != 0))
                goto out;
            *on = t == LEV_STW_START;
            break;
        }
        case LEV_GC_SWEEP_START:
            if (*psw)
                goto out;
            *psw = 1;
            break;
        case LEV_GC_SWEEP_DONE:
            if (!*psw)
                goto out;
            *psw = 0;
            break;
        case LEV_GC_MARK_ASSIST_START: {
            u64 *a = map_slot(&assists, e->g, 0);
            if (!a)
                goto oom;
            if (*a)
                goto out;
            *a = 1;
            break;
        }
        case LEV_GC_MARK_ASSIST_DONE: {
            u64 *a = map_find(&assists, e->g);
            if (a)
                *a = 0;
            break;
        }
        case LEV_GO_WAITING: case LEV_GO_IN_SYSCALL:
            if (*gs != G_RUNNABLE)
                goto out;
            *gs = G_WAITING, *gl = (u64)t;
            break;
        case LEV_GO_CREATE: {
            RUNNING(1);
            if (map_find(&gstate, e->a[0]))
                goto out;
            u64 *ns = map_slot(&gstate, e->a[0], G_RUNNABLE), *nl = map_slot(&glast, e->a[0], 0);
            if (!ns || !nl)
                goto oom;
            *ns = G_RUNNABLE, *nl = (u64)t;
            break;
        }
        case LEV_GO_START: case LEV_GO_START_LABEL:
            if (*gs != G_RUNNABLE || *pgv)
                goto out;
            *gs = G_RUNNING, *gl = 0;
            *pgv = e->g;
            break;
        case LEV_GO_END: case LEV_GO_STOP:
            RUNNING(0);
            *gs = G_DEAD, *pgv = 0;
            if (t == LEV_GO_END) {
                u64 *r = map_find(&reg, e->g);
                if (r && *r)
                    rs[*r - 1].n = 0;
            }
            break;
        case LEV_GO_SCHED: case LEV_GO_PREEMPT:
            RUNNING(0);
            *gs = G_RUNNABLE, *gl = (u64)t, *pgv = 0;
            break;
        case LEV_GO_UNBLOCK: {
            if (*gs != G_RUNNING || (e->p != TIMER_P && *pgv != e->g))
                goto out;
            u64 *ts = map_slot(&gstate, e->a[0], G_DEAD), *tl = map_slot(&glast, e->a[0], 0);
            if (!ts || !tl)
                goto oom;
            if (*ts != G_WAITING)
                goto out;
            if (*tl == LEV_GO_BLOCK_NET && e->p != TIMER_P)
                e->p = r->p = NETPOLL_P;
            *ts = G_RUNNABLE, *tl = (u64)t;
            break;
        }
        case LEV_GO_SYS_CALL:
            RUNNING(0);
            *gl = (u64)t;
            break;
        case LEV_GO_SYS_BLOCK:
            RUNNING(0);
            *gs = G_WAITING, *pgv = 0;
            break;
        case LEV_GO_SYS_EXIT:
            if (*gs != G_WAITING)
                goto out;
            *gs = G_RUNNABLE, *gl = (u64)t;
            break;
        case LEV_USER_TASK_CREATE: {
            u64 *k = map_slot(&tasks, e->a[0], 0);
            if (!k)
                goto oom;
            if (*k)
                goto out;
            *k = 1;
            break;
        }
        case LEV_USER_TASK_END: {
            u64 *k = map_find(&tasks, e->a[0]);
            if (k)
                *k = 0;
            break;
        }
        case LEV_USER_REGION: {
            u64 *r = map_slot(&reg, e->g, 0);
            if (!r)
                goto oom;
            if (!*r) {
                if (grow((void **)&rs, &caprs, nrs + 1, sizeof(RegionStack)))
                    goto oom;
                memset(&rs[nrs], 0, sizeof(RegionStack));
                *r = ++nrs;
            }
            RegionStack *st = &rs[*r - 1];
            if (e->a[1] == REGION_START) {
                if (grow((void **)&st->task, &st->cap, st->n + 1, 8) ||
                    grow((void **)&st->name, &st->cap2, st->n + 1, 8))
                    goto oom;
                st->task[st->n] = e->a[0], st->name[st->n] = e->a[2];
                st->n++;
            } else if (e->a[1] == REGION_END) {
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
    rc = L_OK;
    goto out;
oom:
    rc = L_NO_MEMORY;
out:
    map_free(&gstate), map_free(&glast), map_free(&prun), map_free(&pg), map_free(&psweep), map_free(&tasks);
    map_free(&assists), map_free(&reg), map_free(&pstw);
    for (size_t i = 0; i < nrs; i++)
        free(rs[i].task), free(rs[i].name);
    free(rs);
    return rc;
}
