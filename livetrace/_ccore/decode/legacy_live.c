/* The provisional path of a live legacy trace: chunks read, converted and
 * ordered by the per-P release watermark (see legacy_live.h). */

#include "decode/legacy_live.h"

#include "decode/legacy_conv.h"
#include "decode/legacy_scan.h"

void ll_init(LLive *s, int ver, const u8 *counts, const u8 *stackf, const u8 *mask, const u64 *builtin) {
    memset(s, 0, sizeof *s);
    s->ver = ver;
    memcpy(s->counts, counts, LEV_COUNT);
    memcpy(s->stackf, stackf, LEV_COUNT);
    memcpy(s->mask, mask, 256);
    memcpy(s->builtin, builtin, sizeof s->builtin);
    cs_init(&s->conv);
    s->released = INT64_MIN;
}

void ll_free(LLive *s) {
    free(s->carry), free(s->new_strs), free(s->new_msgs), free(s->pend), free(s->pchunk);
    free(s->req_msgs), free(s->req_tasks), free(s->msg_ids), free(s->task_ids);
    free(s->pool), free(s->free_slots), free(s->heap), free(s->late), free(s->ps), free(s->touched);
    map_free(&s->cur.last_g), map_free(&s->strs), map_free(&s->pidx);
    cs_free(&s->conv);
    cols_free(&s->out);
    memset(s, 0, sizeof *s);
}

/* ---- reading ---- */

/* One event at d[*at] (twin: LegacyReader._event and LegacyDecoder._event):
 * R_EVENT (moved past it, and a pending event made if it is one), R_SHORT
 * (not all here), R_BAD or R_OOM. */
static int read_event(LLive *s, const u8 *d, size_t end, size_t *at) {
    u64 vals[MAX_VALS];
    LScan sc;
    size_t start = *at;
    int r = l_scan(d, end, at, s->counts, &s->strs, vals, &sc);
    if (r != R_EVENT)
        return r;
    int typ = sc.typ;
    if (typ == LEV_STRING) {
        if (!map_slot(&s->strs, vals[0], 1) || grow((void **)&s->new_strs, &s->capnew_strs, s->nnew_strs + 3, 8))
            return R_OOM;
        u64 *o = s->new_strs + s->nnew_strs;
        o[0] = vals[0], o[1] = sc.bytes_at, o[2] = sc.nbytes;
        s->nnew_strs += 3;
        return R_EVENT;
    }
    /* made in place: a copy would read it back before its stores are done */
    if (grow((void **)&s->pend, &s->cappend, s->npend + 1, sizeof(LEv)))
        return R_OOM;
    LEv *e = &s->pend[s->npend];
    /* (of the tables, only the exact decoding at the footer keeps anything) */
    if ((r = l_event(&s->cur, s->ver, s->stackf, &sc, vals, start, e)) != R_EVENT)
        return r == R_TABLE ? R_EVENT : r;
    if (typ == LEV_USER_LOG) {
        if (grow((void **)&s->new_msgs, &s->capnew_msgs, s->nnew_msgs + 3, 8))
            return R_OOM;
        s->new_msgs[s->nnew_msgs++] = s->nmessages;
        s->new_msgs[s->nnew_msgs++] = sc.bytes_at;
        s->new_msgs[s->nnew_msgs++] = sc.nbytes;
        e->msg = (u32)s->nmessages++;
    }
    if (typ != LEV_CPU_SAMPLE)
        s->timed = 1;
    /* string ids the window's rows would not carry apart from the requests' numbers */
    if (((typ == LEV_USER_TASK_CREATE || typ == LEV_USER_REGION) && e->a[2] >= (u64)1 << 62) ||
        (typ == LEV_USER_LOG && e->a[1] >= (u64)1 << 62) || s->nmessages >= (u64)1 << 31)
        return R_BAD;
    s->npend++;
    return R_EVENT;
}

int ll_read(LLive *s, const u8 *data, size_t n) {
    const u8 *d = data;
    size_t end = n;
    if (s->ncarry) {
        if (grow((void **)&s->carry, &s->capcarry, s->ncarry + n, 1))
            return L_NO_MEMORY;
        memcpy(s->carry + s->ncarry, data, n);
        d = s->carry, end = s->ncarry + n;
    }
    s->read_d = d;
    s->nnew_strs = s->nnew_msgs = 0;
    s->timed = 0;
    size_t before = s->npend, pos = 0;
    int rc = L_OK;
    while (pos < end) {
        int r = read_event(s, d, end, &pos);
        if (r == R_SHORT)
            break;
        if (r != R_EVENT) {
            rc = r == R_OOM ? L_NO_MEMORY : L_GIVE_UP;
            break;
        }
    }
    if (rc == L_OK && s->npend > before) {
        if (grow((void **)&s->pchunk, &s->cappchunk, s->npchunk + 1, sizeof(size_t)))
            return L_NO_MEMORY;
        s->pchunk[s->npchunk++] = s->npend - before;
    }
    s->cur_ts = s->cur.ts;
    s->read_pos = pos;
    s->read_end = end;
    return rc;
}

int ll_carry(LLive *s) {
    size_t left = s->read_end - s->read_pos;
    if (s->read_d == s->carry) {
        memmove(s->carry, s->carry + s->read_pos, left);
    } else if (left) {
        if (grow((void **)&s->carry, &s->capcarry, left, 1))
            return L_NO_MEMORY;
        memcpy(s->carry, s->read_d + s->read_pos, left);
    }
    s->ncarry = left;
    s->read_d = NULL;
    return L_OK;
}

void ll_drop_pending(LLive *s, int all, size_t max_held) {
    if (all) {
        s->npend = s->npchunk = 0;
        return;
    }
    if (s->npend <= max_held || !s->npchunk)
        return;
    size_t first = s->pchunk[0];
    memmove(s->pend, s->pend + first, (s->npend - first) * sizeof(LEv));
    s->npend -= first;
    memmove(s->pchunk, s->pchunk + 1, (--s->npchunk) * sizeof(size_t));
}

/* ---- the window ---- */

/* One converted event (twin: the loop in LegacyLive._hold): dropped if
 * not of a kind kept, late if its time has been released, else held. */
static int put(LLive *s, int code, i64 t, i64 m, i64 p, i64 g, u64 a0, u64 a1, u64 a2, u64 a3, u64 x0, u64 x1) {
    if (!s->mask[code])
        return 0;
    LRow r = {t, m, p, g, {a0, a1, a2, a3}, {x0, x1}, (u8)code};
    if (t <= s->released) {
        if (grow((void **)&s->late, &s->caplate, s->nlate + 1, sizeof(LRow)))
            return -1;
        s->late[s->nlate++] = r;
        return 0;
    }
    size_t slot;
    if (s->nfree)
        slot = s->free_slots[--s->nfree];
    else {
        if (grow((void **)&s->pool, &s->cappool, s->npool + 1, sizeof(LRow)))
            return -1;
        slot = s->npool++;
    }
    s->pool[slot] = r;
    if (heap_push(&s->heap, &s->nheap, &s->capheap, (HKey){t, s->arrivals++, slot})) {
        if (grow((void **)&s->free_slots, &s->capfree, s->nfree + 1, sizeof(size_t)) == 0)
            s->free_slots[s->nfree++] = slot;
        return -1;
    }
    return 0;
}

/* ---- the release watermark (twin: LegacyLive._hold and _until) ---- */

/* An event of P p's buffer (not a CPU sample: those carry another time) at t. */
static int front_move(LLive *s, i64 p, i64 t) {
    u64 *ix = map_slot(&s->pidx, (u64)p, 0);
    if (!ix)
        return -1;
    int fresh = !*ix;
    if (fresh) {
        if (grow((void **)&s->ps, &s->capps, s->nps + 1, sizeof(LP)))
            return -1;
        s->ps[s->nps] = (LP){.front = t};
        *ix = ++s->nps;
    }
    LP *q = &s->ps[*ix - 1];
    if (!q->in_chunk) {
        if (grow((void **)&s->touched, &s->captouched, s->ntouched + 1, sizeof(size_t)))
            return -1;
        s->touched[s->ntouched++] = *ix - 1;
        q->in_chunk = 1;
        q->had_before = !fresh;
        q->before = q->front;
    }
    if (t > q->front)
        q->front = t;
    return 0;
}

/* The end of a chunk: how far it moved each P it had events of. */
static void front_chunk_done(LLive *s) {
    for (size_t k = 0; k < s->ntouched; k++) {
        LP *q = &s->ps[s->touched[k]];
        if (q->had_before)
            q->fill = (u64)q->front - (u64)q->before, q->has_fill = 1;
        q->in_chunk = 0;
    }
    s->ntouched = 0;
}

/* The bound on waiting for a P: this many times the longest time a P took
 * to fill its last buffer (twin: live.FILL_MARGIN). */
#define FILL_MARGIN 2u

/* The time up to which held events may go. */
static i64 watermark(const LLive *s, i64 max_wait) {
    if (!s->nps)
        return INT64_MIN;
    i64 lo = INT64_MAX, hi = INT64_MIN;
    u64 bound = 0;
    int any = 0;
    for (size_t k = 0; k < s->nps; k++) {
        const LP *q = &s->ps[k];
        lo = q->front < lo ? q->front : lo;
        hi = q->front > hi ? q->front : hi;
        if (q->has_fill && q->fill <= (u64)max_wait) {
            bound = q->fill > bound ? q->fill : bound;
            any = 1;
        }
    }
    /* FILL_MARGIN times the longest fill, at most max_wait (fill <= max_wait: no overflow) */
    bound = any && FILL_MARGIN * bound < (u64)max_wait ? FILL_MARGIN * bound : (u64)max_wait;
    i64 aged;
    if (__builtin_sub_overflow(hi, (i64)bound, &aged))
        aged = INT64_MIN;
    return lo > aged ? lo : aged;
}

/* ---- converting (twin: ModelConverter.convert, not strict) ---- */

static int request(u64 **arr, size_t *n, size_t *cap, u64 v) {
    if (grow((void **)arr, cap, *n + 1, 8))
        return -1;
    (*arr)[(*n)++] = v;
    return 0;
}

/* The live path's sink: the window (put), a user log naming its message
 * and a task end its type by their numbers among the requests, until the
 * Python side makes their strings (ll_resolve). */
static int live_sink_put(void *to, int code, i64 t, i64 m, i64 p, i64 g, u64 a0, u64 a1, u64 a2, u64 a3, u64 x0,
                         u64 x1) {
    return put(to, code, t, m, p, g, a0, a1, a2, a3, x0, x1);
}

static int live_sink_message(void *to, u32 msg, u64 *out) {
    LLive *s = to;
    *out = msg;
    return request(&s->req_msgs, &s->nreq_msgs, &s->capreq_msgs, msg);
}

static int live_sink_task_end(void *to, u64 name, u64 *out) {
    LLive *s = to;
    *out = s->tasks_ended++;
    return request(&s->req_tasks, &s->nreq_tasks, &s->capreq_tasks, name);
}

/* The events of one chunk, at ev[0..n). */
static int convert_chunk(LLive *s, LEv *ev, size_t n, i64 x0, i64 y0, double slope, double intercept, i64 origin) {
    Map next_g = {0};
    size_t *after = NULL;
    int rc = L_GIVE_UP, has_syscall = 0;
    for (size_t i = 0; i < n; i++)
        has_syscall |= ev[i].typ == LEV_GO_SYS_CALL;
    if (has_syscall) {
        /* the next event on the same goroutine: whether a syscall blocked */
        if (!(after = malloc(n * sizeof(size_t))))
            goto oom;
        for (size_t i = n; i-- > 0;) {
            u64 *v = map_slot(&next_g, ev[i].g, n);
            if (!v)
                goto oom;
            after[i] = (size_t)*v;
            *v = i;
        }
    }
    /* string ids are taken as they are: their strings may come in a later chunk */
    const ConvRules rules = {s->builtin, s->ver, &s->strs, 0, NULL};
    const ConvSink sink = {live_sink_put, live_sink_message, live_sink_task_end, s};
    for (size_t i = 0; i < n; i++) {
        const LEv *e = &ev[i];
        /* the same float arithmetic as TickClock.wall_ns */
        double v = intercept + slope * (double)(e->ts - x0);
        if (!(v < 9.0e18 && v > -9.0e18))
            goto out;
        i64 ts, wall;
        if (__builtin_add_overflow(y0, (i64)v, &wall) || __builtin_sub_overflow(wall, origin, &ts) ||
            ts == INT64_MAX)
            goto out;
        if (e->typ != LEV_CPU_SAMPLE && front_move(s, e->p, ts))
            goto oom;
        int blocked = e->typ == LEV_GO_SYS_CALL && after[i] < n && ev[after[i]].typ == LEV_GO_SYS_BLOCK;
        int r = conv_event(&s->conv, &rules, &sink, e, ts, blocked);
        if (r) {
            rc = r;
            goto out;
        }
    }
    front_chunk_done(s);
    rc = L_OK;
    goto out;
oom:
    rc = L_NO_MEMORY;
out:
    map_free(&next_g);
    free(after);
    return rc;
}

int ll_convert(LLive *s, i64 x0, i64 y0, double slope, double intercept, i64 origin) {
    s->nreq_msgs = s->nreq_tasks = 0;
    size_t at = 0;
    for (size_t c = 0; c < s->npchunk; c++) {
        int rc = convert_chunk(s, s->pend + at, s->pchunk[c], x0, y0, slope, intercept, origin);
        if (rc)
            return rc;
        at += s->pchunk[c];
    }
    s->npend = s->npchunk = 0;
    return L_OK;
}

int ll_resolve(LLive *s, const u64 *msg_ids, size_t nmsg, const u64 *task_ids, size_t ntask) {
    if (nmsg != s->nreq_msgs || ntask != s->nreq_tasks)
        return L_GIVE_UP;
    if (grow((void **)&s->msg_ids, &s->capmsg_ids, s->nmessages, 8) ||
        grow((void **)&s->task_ids, &s->captask_ids, s->ntask_ids + ntask, 8))
        return L_NO_MEMORY;
    for (size_t k = 0; k < nmsg; k++)
        s->msg_ids[s->req_msgs[k]] = msg_ids[k];
    if (ntask) /* none yet: task_ids may still be NULL */
        memcpy(s->task_ids + s->ntask_ids, task_ids, ntask * 8);
    s->ntask_ids += ntask;
    s->nreq_msgs = s->nreq_tasks = 0;
    return L_OK;
}

/* ---- releasing ---- */

static int out_row(LLive *s, const LRow *r) {
    Columns *o = &s->out;
    if (o->n == o->cap && cols_reserve(o, o->n + 1))
        return -1;
    size_t i = o->n++;
    o->code[i] = r->code, o->time[i] = r->time, o->m[i] = r->m, o->p[i] = r->p, o->g[i] = r->g;
    u64 *a = &o->args[NARGS * i], *x = &o->extra[NEXTRA * i];
    memcpy(a, r->a, sizeof r->a);
    memcpy(x, r->x, sizeof r->x);
    if (r->code == EV_USER_LOG)
        a[2] = s->msg_ids[r->a[2]];
    else if (r->code == EV_USER_TASK_END)
        x[1] = s->task_ids[r->x[1]];
    return 0;
}

static int cmp_late(const void *x, const void *y) {
    const HKey *a = x, *b = y;
    return hkey_less(a, b) ? -1 : hkey_less(b, a) ? 1 : 0;
}

int ll_release(LLive *s, int all, i64 max_wait, size_t max_held) {
    s->out.n = 0;
    s->out_late = s->nlate;
    if (s->nlate) {
        /* by time, in the order they came where times tie (a stable sort) */
        HKey *k = malloc(s->nlate * sizeof(HKey));
        if (!k)
            return L_NO_MEMORY;
        for (size_t i = 0; i < s->nlate; i++)
            k[i] = (HKey){s->late[i].time, i, i};
        qsort(k, s->nlate, sizeof(HKey), cmp_late);
        for (size_t i = 0; i < s->nlate; i++)
            if (out_row(s, &s->late[k[i].at])) {
                free(k);
                return L_NO_MEMORY;
            }
        free(k);
        s->nlate = 0;
    }
    i64 until = all ? INT64_MAX : watermark(s, max_wait);
    i64 last = INT64_MIN;
    int any = 0;
    while (s->nheap && (s->heap[0].ts <= until || s->nheap > max_held)) {
        if (grow((void **)&s->free_slots, &s->capfree, s->nfree + 1, sizeof(size_t)))
            return L_NO_MEMORY;
        HKey k = heap_pop(s->heap, &s->nheap);
        if (out_row(s, &s->pool[k.at]))
            return L_NO_MEMORY;
        s->free_slots[s->nfree++] = k.at;
        last = k.ts, any = 1;
    }
    if (any && last > s->released)
        s->released = last;
    return L_OK;
}
