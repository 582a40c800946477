/* Reading a legacy trace: its events into per-P streams, its strings,
 * stacks and user log messages into tables (see legacy.h). */

#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS, under -std=c99 */
#include "decode/legacy_scan.h"

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

/* Reads every event into the tables and the per-P streams (the twin:
 * LegacyReader and LegacyDecoder._event): an L_* outcome. */
int l_read(L *l, size_t pos) {
    const u8 *d = l->d;
    size_t end = l->end;
    LCursor cur = {0};
    u64 vals[MAX_VALS];
    int rc = L_GIVE_UP;
    while (pos < end) {
        size_t at = pos;
        LScan sc;
        LEv e;
        if (l_scan(d, end, &pos, l->counts, &l->str_at, vals, &sc) != R_EVENT)
            goto out; /* an event cut short as well: the trace is complete */
        int typ = sc.typ;
        if (typ == LEV_STRING) {
            if (!map_slot(&l->str_at, vals[0], ((u64)sc.bytes_at << 24) | sc.nbytes) ||
                grow((void **)&l->strings, &l->capstrings, l->nstrings + 3, 8))
                goto oom;
            l->strings[l->nstrings++] = vals[0];
            l->strings[l->nstrings++] = sc.bytes_at;
            l->strings[l->nstrings++] = sc.nbytes;
            continue;
        }
        int r = l_event(&cur, l->ver, l->stackf, &sc, vals, at, &e);
        if (r == R_OOM)
            goto oom;
        if (r == R_BAD)
            goto out;
        if (r == R_TABLE) {
            if (typ == LEV_FREQUENCY)
                l->ticks_per_sec = vals[0];
            else if (typ == LEV_TIMER_GOROUTINE && !map_slot(&l->timer_gs, vals[0], 1))
                goto oom;
            else if (typ == LEV_STACK && vals[0] && vals[1]) {
                size_t nv = sc.nv;
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
        if (typ == LEV_USER_LOG) {
            if (grow((void **)&l->messages, &l->capmessages, 2 * l->nmessages + 2, 8))
                goto oom;
            l->messages[2 * l->nmessages] = sc.bytes_at;
            l->messages[2 * l->nmessages + 1] = sc.nbytes;
            if (!map_slot(&l->msg_of, at, l->nmessages))
                goto oom;
            e.msg = (u32)l->nmessages++;
        }
        /* values the sequence arithmetic (wrapping) would not carry as the twin's Python ints do */
        if (((typ == LEV_GO_START || typ == LEV_GO_START_LABEL || typ == LEV_GO_UNBLOCK || typ == LEV_GO_SYS_EXIT) &&
             e.a[1] == U64MAX) ||
            (typ == LEV_GC_START && e.a[0] == U64MAX))
            goto out;
        /* past what the records hold */
        if (l->nev >= UINT32_MAX || at > UINT32_MAX || e.g > UINT32_MAX || e.p < INT32_MIN || e.p > INT32_MAX)
            goto out;
        Stream *s = stream_of(l, typ == LEV_CPU_SAMPLE ? PROFILE_P : cur.p);
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
    map_free(&cur.last_g);
    return rc;
}

void l_expand(const L *l, const LRec *r, LEv *e) {
    const u8 *d = l->d;
    size_t pos = r->off + 1;
    int typ = d[r->off] & 0x3f, narg = (d[r->off] >> 6) + 1; /* (the order made r->typ global) */
    u64 vals[8] = {0};
    size_t nv = 0;
    /* l_read took these values, and its checks: they are there, and as many as l_fields takes */
    l_values(d, l->end, &pos, narg, vals, 8, &nv);
    *e = (LEv){.ts = r->ts, .p = r->p, .g = r->g, .off = r->off, .typ = r->typ};
    l_fields(e, vals, nv, l->stackf[typ]);
    if (typ == LEV_CPU_SAMPLE)
        e->a[0] = 0;
    else if (typ == LEV_USER_LOG) {
        u64 *m = map_find(&l->msg_of, r->off);
        e->msg = m ? (u32)*m : 0;
    }
}
