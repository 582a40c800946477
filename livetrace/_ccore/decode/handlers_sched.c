/* Handlers of the scheduler's events: procs starting, stopping and being
 * stolen, goroutines being created, run, blocked and woken, syscalls, and
 * the statuses a generation starts from (see handlers.h). */

#include "decode/handlers.h"

int h_proc_status(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    u64 pid = a[0], status = a[1];
    if (status >= PROC_STATUS_COUNT)
        return ORDER("invalid status for proc %llu: %llu", (unsigned long long)pid, (unsigned long long)status);
    int old = PROC_STATUS_STATE[status];
    P *s = p_get(e, pid);
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
        if (!s || map_put_ptr(&e->ps, pid, s)) {
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
        if (e->fr && !fresh_note(e, NOTE_ITERATED, 0))
            return -1;
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

int h_proc_start(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    P *s = p_get(e, a[0]);
    if (!s || s->status != PROC_IDLE || !next_seq(s->seq_gen, s->seq, e->gen, a[1]) || has_proc(e, c))
        return 0;
    CHECK(MUST, MUST_NOT, MAY);
    s->status = PROC_RUNNING;
    s->seq_gen = e->gen;
    s->seq = a[1];
    *nc = (Ctx){c.m, (i64)a[0], c.g};
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_proc_stop(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    P *s = p_get(e, (u64)c.p);
    if (!s)
        return ORDER("event %s for proc (%lld) that doesn't exist", ename(e, code), (long long)c.p);
    if (s->status != PROC_RUNNING && s->status != PROC_SYSCALL)
        return ORDER("%s event for proc that's not Running or Syscall", ename(e, code));
    CHECK(MUST, MUST, MAY);
    s->status = PROC_IDLE;
    *nc = (Ctx){c.m, NO_ID, c.g};
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_proc_steal(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    u64 pid = a[0];
    P *s = p_get(e, pid);
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
    M *vm = map_get_ptr(&e->msmap, (u64)victim);
    if (!vm)
        return ORDER("stole proc from non-existent thread %lld", (long long)victim);
    if (vm->unk & UNK_P)
        fresh_read(e, vm, 0);
    if (vm->p != (i64)pid)
        return ORDER("tried to steal proc %llu from thread %lld, but got proc %lld instead", (unsigned long long)pid,
                     (long long)victim, (long long)vm->p);
    vm->p = NO_ID;
    vm->unk &= (u8)~UNK_P;
    return emit(e, code, t, c, a, (u64)old, 0) ? -1 : 1;
}

int h_go_status(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    u64 gid = a[0], status = a[2];
    i64 mid = (i64)a[1];
    if (status >= GO_STATUS_COUNT)
        return ORDER("invalid status for goroutine %llu: %llu", (unsigned long long)gid, (unsigned long long)status);
    int old = GO_STATUS_STATE[status];
    G *s = g_get(e, gid);
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
            /* Only a later generation checks the thread's goroutine: the carry will. */
            if (e->fr) {
                Note *n = fresh_note(e, NOTE_SYSCALL_SELF, gid);
                if (!n)
                    return -1;
                n->unk &= UNK_G;
            }
            if (e->gen != e->initial_gen && c.g != (i64)gid)
                return ORDER("inconsistent thread for syscalling goroutine %llu: thread has goroutine %lld",
                             (unsigned long long)gid, (long long)c.g);
            *nc = (Ctx){c.m, c.p, (i64)gid};
        } else {
            M *ms = map_get_ptr(&e->msmap, (u64)mid);
            if (ms) {
                if (ms->unk & UNK_G)
                    fresh_read(e, ms, 1);
                if (ms->g != (i64)gid)
                    return ORDER("inconsistent thread for syscalling goroutine %llu: thread has goroutine %lld",
                                 (unsigned long long)gid, (long long)ms->g);
                c.g = ms->g;
            } else {
                ms = m_get(e, mid);
                if (!ms)
                    return -1;
                ms->g = (i64)gid;
                /* First met here: its proc is the one the carried state gives it. */
                if (e->fr) {
                    ms->unk = UNK_P;
                    Note *n = fresh_note(e, NOTE_SYSCALL_OTHER, gid);
                    if (!n)
                        return -1;
                    n->m = mid;
                }
            }
            c.m = mid;
        }
    }
    return emit(e, code, t, c, a, (u64)old, 0) ? -1 : 1;
}

static G *running_g(Engine *e, int code, Ctx c, int want) {
    G *s = g_get(e, (u64)c.g);
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

int h_go_create(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(MUST, MUST, MAY);
    G *s = g_get(e, (u64)c.g); /* NO_ID, or an unknown cell, is not noted (fresh_miss) */
    if (s && s->status != GO_RUNNING)
        return ORDER("%s event for goroutine that's not Running", ename(e, code));
    if (g_get(e, a[0]))
        return ORDER("tried to create goroutine (%llu) that already exists", (unsigned long long)a[0]);
    if (!g_new(e, a[0], code == EV_GO_CREATE_BLOCKED ? GO_WAITING : GO_RUNNABLE))
        return -1;
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_go_stop_exec(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(USER_GO);
    G *s = running_g(e, code, c, GO_RUNNING);
    if (!s)
        return -1;
    if (code == EV_GO_DESTROY)
        g_delete(e, (u64)c.g);
    else
        s->status = code == EV_GO_STOP ? GO_RUNNABLE : GO_WAITING;
    *nc = (Ctx){c.m, c.p, NO_ID};
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_go_start(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    G *s = g_get(e, a[0]);
    if (!s || s->status != GO_RUNNABLE || !next_seq(s->seq_gen, s->seq, e->gen, a[1]))
        return 0;
    CHECK(MUST, MUST, MUST_NOT);
    s->status = GO_RUNNING;
    s->seq_gen = e->gen;
    s->seq = a[1];
    *nc = (Ctx){c.m, c.p, (i64)a[0]};
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_go_unblock(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    G *s = g_get(e, a[0]);
    if (!s || s->status != GO_WAITING || !next_seq(s->seq_gen, s->seq, e->gen, a[1]))
        return 0;
    s->status = GO_RUNNABLE;
    s->seq_gen = e->gen;
    s->seq = a[1];
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_go_switch(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(USER_GO);
    G *cur = running_g(e, code, c, GO_RUNNING);
    if (!cur)
        return -1;
    u64 nextg = a[0], seq = a[1];
    G *nxt = g_get(e, nextg);
    if (!nxt || nxt->status != GO_WAITING || !next_seq(nxt->seq_gen, nxt->seq, e->gen, seq))
        return 0;
    if (emit(e, code, t, c, a, 0, 0))
        return -1;
    u64 none[NARGS] = {0};
    if (code == EV_GO_SWITCH) {
        cur->status = GO_WAITING;
        if (emit(e, EV_GO_BLOCK, t, c, none, 0, 0)) /* the switched-from goroutine blocks */
            return -1;
    } else {
        g_delete(e, (u64)c.g);
        if (emit(e, EV_GO_DESTROY, t, c, none, 0, 0))
            return -1;
    }
    nxt->status = GO_RUNNING;
    nxt->seq_gen = e->gen;
    nxt->seq = seq;
    u64 start[NARGS] = {nextg, seq, 0, 0};
    if (emit(e, EV_GO_START, t, (Ctx){c.m, c.p, NO_ID}, start, 0, 0))
        return -1;
    *nc = (Ctx){c.m, c.p, (i64)nextg};
    return 1;
}

int h_syscall_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(USER_GO);
    G *s = running_g(e, code, c, GO_RUNNING);
    if (!s)
        return -1;
    s->status = GO_SYSCALL;
    P *ps = p_get(e, (u64)c.p);
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

int h_syscall_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(USER_GO);
    G *s = g_get(e, (u64)c.g);
    if (!s)
        return ORDER("event %s for goroutine (%lld) that doesn't exist", ename(e, code), (long long)c.g);
    if (s->status != GO_SYSCALL)
        return ORDER("%s event for goroutine that's not Running", ename(e, code));
    s->status = GO_RUNNING;
    P *ps = p_get(e, (u64)c.p);
    if (!ps)
        return ORDER("uninitialized proc %lld found during %s", (long long)c.p, ename(e, code));
    if (ps->status != PROC_SYSCALL)
        return ORDER("expected proc %lld in state Syscall, but got %s instead", (long long)c.p,
                     PROC_STATUS_NAMES[ps->status]);
    ps->status = PROC_RUNNING;
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_syscall_end_blocked(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    if (has_proc(e, c)) {
        P *ps = p_get(e, (u64)c.p);
        if (!ps)
            return ORDER("uninitialized proc %lld found during %s", (long long)c.p, ename(e, code));
        if (ps->status == PROC_SYSCALL)
            return 0; /* the proc must be stolen first */
    }
    CHECK(MUST, MAY, MUST);
    G *s = g_get(e, (u64)c.g);
    if (!s)
        return ORDER("event %s for goroutine (%lld) that doesn't exist", ename(e, code), (long long)c.g);
    if (s->status != GO_SYSCALL)
        return ORDER("%s event for goroutine that's not Running", ename(e, code));
    s->status = GO_RUNNABLE;
    *nc = (Ctx){c.m, c.p, NO_ID};
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_go_create_syscall(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(MUST, MAY, MUST_NOT);
    if (g_get(e, a[0]))
        return ORDER("tried to create goroutine (%llu) in syscall that already exists", (unsigned long long)a[0]);
    if (!g_new(e, a[0], GO_SYSCALL))
        return -1;
    *nc = (Ctx){c.m, c.p, (i64)a[0]};
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_go_destroy_syscall(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(MUST, MAY, MUST);
    G *s = g_get(e, (u64)c.g);
    if (!s)
        return ORDER("event %s for goroutine (%lld) that doesn't exist", ename(e, code), (long long)c.g);
    if (s->status != GO_SYSCALL)
        return ORDER("%s event for goroutine that's not Syscall", ename(e, code));
    g_delete(e, (u64)c.g);
    *nc = (Ctx){c.m, c.p, NO_ID};
    if (c.p != NO_ID) {
        P *ps = p_get(e, (u64)c.p);
        if (!ps)
            return ORDER("found invalid proc %lld during %s", (long long)c.p, ename(e, code));
        if (ps->status != PROC_SYSCALL)
            return ORDER("proc %lld in unexpected state %s during %s", (long long)c.p, PROC_STATUS_NAMES[ps->status],
                         ename(e, code));
        ps->status = PROC_SYSCALL_ABANDONED;
        *nc = (Ctx){c.m, NO_ID, NO_ID};
        /* The proc this thread held is lost to it: say so as a steal. */
        u64 steal[NARGS] = {(u64)c.p, 0, 0, 0};
        if (emit(e, EV_PROC_STEAL, t, c, steal, PROC_SYSCALL, 0))
            return -1;
    }
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}
