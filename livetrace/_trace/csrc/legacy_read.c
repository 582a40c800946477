/* Reading a legacy trace: its events into per-P streams, its strings,
 * stacks and user log messages into tables (see legacy.h). */

#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS, under -std=c99 */
#include "legacy.h"
#include "varint.h"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON
#endif
#ifndef MAP_POPULATE /* (Linux's: the block's pages at once, not a fault each) */
#define MAP_POPULATE 0
#endif

LRec *block_alloc(void) {
    void *b =
        mmap(NULL, SBLOCK * sizeof(LRec), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return b == MAP_FAILED ? NULL : b;
}

void block_free(LRec *b) {
    if (b)
        munmap(b, SBLOCK * sizeof(LRec));
}

/* (not populated: the merge writes them one after another) */
LRec *recs_alloc(size_t n) {
    void *b = mmap(NULL, (n + 1) * sizeof(LRec), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return b == MAP_FAILED ? NULL : b;
}

void recs_free(L *l) {
    if (l->all)
        munmap(l->all, (l->capall + 1) * sizeof(LRec));
    l->all = NULL, l->nall = l->capall = 0;
}
#else
LRec *block_alloc(void) { return malloc(SBLOCK * sizeof(LRec)); }
void block_free(LRec *b) { free(b); }
LRec *recs_alloc(size_t n) { return malloc((n + 1) * sizeof(LRec)); }
void recs_free(L *l) {
    free(l->all);
    l->all = NULL, l->nall = l->capall = 0;
}
#endif

void l_free(L *l) {
    map_free(&l->str_at), map_free(&l->stacks), map_free(&l->timer_gs), map_free(&l->p_stream);
    map_free(&l->msg_of);
    for (size_t i = 0; i < l->nst; i++) {
        for (size_t b = 0; b < l->st[i].nblk; b++)
            block_free(l->st[i].blk[b]);
        free(l->st[i].blk);
    }
    free(l->st);
    recs_free(l);
    free(l->strings), free(l->stack_vals), free(l->messages);
}

/* A varint; one that overflows is given up on as one cut short is. */
static inline int uv(const u8 *p, size_t end, size_t *pos, u64 *out) { return uvarint(p, end, pos, out) == 1; }

static Stream *stream_of(L *l, i64 p) {
    u64 *s = map_slot(&l->p_stream, (u64)p, 0);
    if (!s)
        return NULL;
    if (!*s) {
        if (grow((void **)&l->st, &l->capst, l->nst + 1, sizeof(Stream)))
            return NULL;
        memset(&l->st[l->nst], 0, sizeof(Stream));
        l->st[l->nst].p = p;
        *s = ++l->nst;
    }
    return &l->st[*s - 1];
}

static inline i64 sgn(u64 v) { return (i64)v; }

/* Reads every event into the tables and the per-P streams (the twin:
 * LegacyReader and LegacyDecoder._event): an L_* outcome. */
int l_read(L *l, size_t pos) {
    const u8 *d = l->d;
    size_t end = l->end;
    i64 cur_p = 0, cur_ts = 0;
    u64 cur_g = 0;
    Map last_g = {0};
    u64 vals[4 + 4 * 1000];
    int rc = L_GIVE_UP;
    while (pos < end) {
        size_t at = pos;
        u8 b = d[pos++];
        int typ = b & 0x3f, narg = (b >> 6) + 1;
        if (typ == LEV_NONE || typ >= LEV_COUNT || !l->counts[typ] || typ == LEV_FUTILE_WAKEUP)
            goto out;
        if (typ == LEV_STRING) {
            u64 sid, n;
            if (!uv(d, end, &pos, &sid) || !uv(d, end, &pos, &n) || sid == 0 || n == 0 || n > MAX_STRING ||
                end - pos < n || map_find(&l->str_at, sid))
                goto out;
            if (!map_slot(&l->str_at, sid, ((u64)pos << 24) | n) ||
                grow((void **)&l->strings, &l->capstrings, l->nstrings + 3, 8))
                goto oom;
            l->strings[l->nstrings++] = sid;
            l->strings[l->nstrings++] = pos;
            l->strings[l->nstrings++] = n;
            pos += n;
            continue;
        }
        size_t nv = 0;
        if (narg < 4) {
            for (int k = 0; k < narg; k++)
                if (!uv(d, end, &pos, &vals[nv++]))
                    goto out;
        } else {
            u64 len;
            if (!uv(d, end, &pos, &len))
                goto out;
            size_t vstart = pos;
            while (len > pos - vstart) {
                if (nv == sizeof vals / sizeof vals[0] || !uv(d, end, &pos, &vals[nv++]))
                    goto out;
            }
            if (len != pos - vstart)
                goto out;
        }
        size_t msg_at = 0, msg_len = 0;
        if (typ == LEV_USER_LOG) {
            u64 n;
            if (!uv(d, end, &pos, &n) || n > MAX_STRING || end - pos < n)
                goto out;
            msg_at = pos, msg_len = n;
            pos += n;
        }
        if (typ != LEV_STACK && nv != l->counts[typ])
            goto out;
        switch (typ) {
        case LEV_BATCH: {
            u64 *s = map_slot(&last_g, (u64)cur_p, 0);
            if (!s)
                goto oom;
            *s = cur_g;
            cur_p = sgn(vals[0]);
            u64 *g = map_find(&last_g, (u64)cur_p);
            cur_g = g ? *g : 0;
            if (vals[1] > (u64)1 << 61)
                goto out;
            cur_ts = (i64)vals[1];
            continue;
        }
        case LEV_FREQUENCY:
            if (vals[0] == 0 || vals[0] > (u64)INT64_MAX)
                goto out;
            l->ticks_per_sec = vals[0];
            continue;
        case LEV_TIMER_GOROUTINE:
            if (!map_slot(&l->timer_gs, vals[0], 1))
                goto oom;
            continue;
        case LEV_STACK: {
            if (nv < 2 || vals[1] > 1000 || nv != 2 + 4 * vals[1])
                goto out;
            if (vals[0] && vals[1]) {
                if (!map_slot(&l->stacks, vals[0] & 0xffffffffu, 1) ||
                    grow((void **)&l->stack_vals, &l->capstack_vals, l->nstack_vals + nv, 8))
                    goto oom;
                u64 *dst = l->stack_vals + l->nstack_vals;
                dst[0] = vals[0];
                dst[1] = nv - 2;
                memcpy(dst + 2, vals + 2, (nv - 2) * 8);
                l->nstack_vals += nv;
                l->nstacks++;
            }
            continue;
        }
        }
        LEv e = {0};
        e.typ = (u8)typ;
        e.off = at;
        e.p = cur_p;
        e.g = cur_g;
        if (vals[0] > (u64)1 << 61 || cur_ts > (i64)1 << 61)
            goto out; /* times this far out would overflow on the way: the twin judges */
        e.ts = cur_ts + (i64)vals[0];
        cur_ts = e.ts;
        size_t nrest = nv - 1;
        if (l->stackf[typ])
            e.stk = vals[--nv], nrest--;
        if (nrest > 3)
            goto out;
        for (size_t k = 0; k < nrest; k++)
            e.a[k] = vals[1 + k];
        switch (typ) {
        case LEV_GO_START: case LEV_GO_START_LOCAL: case LEV_GO_START_LABEL:
            cur_g = e.g = e.a[0];
            break;
        case LEV_STW_START:
            if (l->ver < LEGACY_GO1_21 && e.a[0] >= 2) /* before 1.21, two kinds */
                goto out;
            break;
        case LEV_GO_SYS_EXIT: case LEV_GO_WAITING: case LEV_GO_IN_SYSCALL:
            e.g = e.a[0];
            break;
        case LEV_USER_LOG:
            if (grow((void **)&l->messages, &l->capmessages, 2 * l->nmessages + 2, 8))
                goto oom;
            l->messages[2 * l->nmessages] = msg_at;
            l->messages[2 * l->nmessages + 1] = msg_len;
            if (!map_slot(&l->msg_of, at, l->nmessages))
                goto oom;
            e.msg = (u32)l->nmessages++;
            break;
        case LEV_CPU_SAMPLE:
            if (e.a[0] > (u64)1 << 61)
                goto out;
            e.ts = (i64)e.a[0];
            e.p = sgn(e.a[1]);
            e.g = e.a[2];
            e.a[0] = 0;
            break;
        default:
            if (is_ends_g(typ))
                cur_g = 0;
        }
        /* values the columns (int64) or the sequence arithmetic (wrapping)
         * would not carry as the twin's Python ints do */
        if (e.g > (u64)INT64_MAX || (typ == LEV_PROC_START && e.a[0] > (u64)INT64_MAX) ||
            ((typ == LEV_GO_START || typ == LEV_GO_START_LABEL || typ == LEV_GO_UNBLOCK || typ == LEV_GO_SYS_EXIT) &&
             e.a[1] == U64MAX) ||
            (typ == LEV_GC_START && e.a[0] == U64MAX))
            goto out;
        /* past what the records hold */
        if (l->nev >= UINT32_MAX || at > UINT32_MAX || e.g > UINT32_MAX || e.p < INT32_MIN || e.p > INT32_MAX)
            goto out;
        Stream *s = stream_of(l, typ == LEV_CPU_SAMPLE ? PROFILE_P : cur_p);
        if (!s)
            goto oom;
        if (s->n % SBLOCK == 0) {
            if (grow((void **)&s->blk, &s->capblk, s->nblk + 1, sizeof(LRec *)) ||
                !(s->blk[s->nblk] = block_alloc()))
                goto oom;
            s->nblk++;
            l->rec_bytes += BLOCK_BYTES;
            if (l->rec_bytes > l->rec_peak)
                l->rec_peak = l->rec_bytes;
        }
        *st_at(s, s->n++) = (LRec){e.ts, (u32)at, (u32)e.g, (int32_t)e.p, e.typ};
        l->nev++;
    }
    rc = (l->nst && l->ticks_per_sec) ? L_OK : L_GIVE_UP;
    goto out;
oom:
    rc = L_NO_MEMORY;
out:
    map_free(&last_g);
    return rc;
}

void l_expand(const L *l, const LRec *r, LEv *e) {
    const u8 *d = l->d;
    size_t pos = r->off, end = l->end;
    u8 b = d[pos++];
    int typ = b & 0x3f, narg = (b >> 6) + 1;
    u64 vals[8] = {0};
    size_t nv = 0;
    /* l_read took these values: they are there */
    if (narg < 4) {
        for (int k = 0; k < narg; k++)
            uv(d, end, &pos, &vals[nv++]);
    } else {
        u64 len = 0;
        uv(d, end, &pos, &len);
        size_t vstart = pos;
        while (len > pos - vstart && nv < 8)
            uv(d, end, &pos, &vals[nv++]);
    }
    *e = (LEv){.ts = r->ts, .p = r->p, .g = r->g, .off = r->off, .typ = r->typ};
    size_t nrest = nv ? nv - 1 : 0;
    if (l->stackf[typ] && nv)
        e->stk = vals[--nv], nrest--;
    for (size_t k = 0; k < nrest && k < 3; k++)
        e->a[k] = vals[1 + k];
    if (typ == LEV_CPU_SAMPLE)
        e->a[0] = 0;
    else if (typ == LEV_USER_LOG) {
        u64 *m = map_find(&l->msg_of, r->off);
        e->msg = m ? (u32)*m : 0;
    }
}
