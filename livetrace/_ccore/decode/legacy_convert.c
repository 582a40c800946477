/* Converting a legacy trace's ordered events to the modern event model
 * (twin: _trace/legacy/convert.py's ModelConverter and legacy_events), and the
 * whole legacy path from bytes to columns. */

#include "decode/legacy_conv.h"

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

void conv_free(Conv *cv) {
    cs_free(&cv->st);
    free(cv->blocked);
    memset(cv, 0, sizeof *cv);
}

void conv_reset(Conv *cv) {
    cs_free(&cv->st);
    cv->i = 0, cv->stage = 0;
}

int conv_begin(L *l, Conv *cv, u64 msg_base, u64 syncs) {
    size_t n = l->nall;
    const LRec *ev = l->all;
    memset(cv, 0, sizeof *cv);
    cv->msg_base = msg_base, cv->syncs = syncs;
    cs_init(&cv->st);
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

/* The exact path's sink: the columns, each time after the last (as the
 * twin's converter bumps them), a user log naming its message's string and
 * a task end its type's string id. */
static int cols_sink_put(void *to, int code, i64 t, i64 m, i64 p, i64 g, u64 a0, u64 a1, u64 a2, u64 a3, u64 x0,
                         u64 x1) {
    return col_put(((Conv *)to)->cols, code, t, m, p, g, a0, a1, a2, a3, x0, x1, 1);
}

static int cols_sink_message(void *to, u32 msg, u64 *out) {
    *out = ((Conv *)to)->msg_base + msg;
    return 0;
}

static int cols_sink_task_end(void *to, u64 name, u64 *out) {
    *out = name;
    return 0;
}

int conv_run(L *l, Conv *cv, Cols *c, size_t until) {
    size_t n = l->nall;
    const LRec *ev = l->all;
    const u8 *blocked = cv->blocked;
    if (!cv->st.stw_reason)
        cv->st.stw_reason = l->builtin[B_STW0];
    if (cv->stage == 0) {
        if (col_put(c, SYNC_CODE, ev[0].ts - 1, -1, -1, -1, cv->syncs + 1, 0, 0, 0, 0, 0, 0))
            return L_NO_MEMORY;
        cv->stage = 1;
    }
    const ConvRules rules = {l->builtin, l->ver, &l->str_at, 1, &l->stacks};
    cv->cols = c;
    const ConvSink sink = {cols_sink_put, cols_sink_message, cols_sink_task_end, cv};
    size_t i = cv->i;
    int rc = L_OK;
    for (; i < n && (c->count_only || c->out.n < until); i++) {
        LEv e;
        l_expand(l, &ev[i], &e);
        int b = e.typ == LEV_GO_SYS_CALL && (blocked[i >> 3] >> (i & 7) & 1);
        if ((rc = conv_event(&cv->st, &rules, &sink, &e, e.ts, b)))
            break;
    }
    if (!rc && i == n && cv->stage == 1) {
        if (col_put(c, SYNC_CODE, c->last + 1, -1, -1, -1, cv->syncs + 2, 0, 0, 0, 0, 0, 0))
            rc = L_NO_MEMORY;
        else
            cv->stage = 2;
    }
    cv->i = i;
    return rc;
}
