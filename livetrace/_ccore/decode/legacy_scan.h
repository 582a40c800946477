/* Reading one legacy event (twin: _trace/legacy/wire.py's LegacyReader._event and
 * _trace/legacy/read.py's LegacyDecoder._event), the rules both compiled readers
 * follow: the exact one (legacy_read.c: a whole trace at once, its tables
 * kept) and the live one (legacy_live.c: chunk by chunk, an event cut short
 * carried to the next). l_scan reads an event's bytes, l_event makes the
 * event of them as the reader's cursor has it; what each reader keeps of
 * the tables, and what else it cannot carry, stays its own. */

#ifndef LIVETRACE_LEGACY_SCAN_H
#define LIVETRACE_LEGACY_SCAN_H

#include "decode/legacy.h"
#include "common/varint.h"

/* One event's outcome: read (R_EVENT), cut short by the end of the bytes
 * (R_SHORT), not as a valid trace has it (R_BAD), out of memory (R_OOM),
 * or (l_event) a valid batch, frequency, timer goroutine or stack: the
 * reader keeps of it what it needs (R_TABLE). */
enum { R_EVENT, R_SHORT, R_BAD, R_OOM, R_TABLE };

/* The most values an event has: a stack's id, count and 1000 frames of 4. */
#define MAX_VALS (4 + 4 * 1000)

/* An event's bytes as read. */
typedef struct {
    int typ;
    size_t nv;             /* values read */
    size_t bytes_at, nbytes; /* the bytes it carries: a string's (vals[0]: its id), a user log's message */
} LScan;

#define L_UV(D, END, POS, OUT)                                                                                         \
    do {                                                                                                               \
        int uv_ = uvarint((D), (END), (POS), (OUT));                                                                   \
        if (uv_ != 1)                                                                                                  \
            return uv_ ? R_BAD : R_SHORT;                                                                              \
    } while (0)

/* The values of an event with narg arguments (4: a length, then values),
 * at most cap of them, into vals: an R_* (R_EVENT: read). */
static inline int l_values(const u8 *d, size_t end, size_t *pos, int narg, u64 *vals, size_t cap, size_t *nv) {
    size_t n = 0;
    if (narg < 4) {
        for (int k = 0; k < narg; k++)
            L_UV(d, end, pos, &vals[n++]);
    } else {
        u64 len;
        L_UV(d, end, pos, &len);
        size_t vstart = *pos;
        while (len > *pos - vstart) {
            if (n == cap)
                return R_BAD;
            L_UV(d, end, pos, &vals[n++]);
        }
        if (len != *pos - vstart)
            return R_BAD;
    }
    *nv = n;
    return R_EVENT;
}

/* The event at d[*pos]: R_EVENT (*pos past it), R_SHORT or R_BAD. strs:
 * the string ids defined so far (a string defined again is not valid). */
static inline int l_scan(const u8 *d, size_t end, size_t *pos, const u8 *counts, const Map *strs, u64 *vals,
                         LScan *sc) {
    size_t p = *pos;
    u8 b = d[p++];
    int typ = b & 0x3f, narg = (b >> 6) + 1;
    if (typ == LEV_NONE || typ >= LEV_COUNT || !counts[typ] || typ == LEV_FUTILE_WAKEUP)
        return R_BAD;
    sc->typ = typ, sc->bytes_at = sc->nbytes = 0;
    if (typ == LEV_STRING) {
        u64 n;
        L_UV(d, end, &p, &vals[0]);
        L_UV(d, end, &p, &n);
        if (vals[0] == 0 || n == 0 || n > MAX_STRING || map_find(strs, vals[0]))
            return R_BAD;
        if (end - p < n)
            return R_SHORT;
        sc->nv = 1, sc->bytes_at = p, sc->nbytes = n;
        *pos = p + n;
        return R_EVENT;
    }
    int r = l_values(d, end, &p, narg, vals, MAX_VALS, &sc->nv);
    if (r != R_EVENT)
        return r;
    if (typ == LEV_USER_LOG) {
        u64 n;
        L_UV(d, end, &p, &n);
        if (n > MAX_STRING)
            return R_BAD;
        if (end - p < n)
            return R_SHORT;
        sc->bytes_at = p, sc->nbytes = n;
        p += n;
    }
    if (typ != LEV_STACK && sc->nv != counts[typ])
        return R_BAD;
    *pos = p;
    return R_EVENT;
}

/* An event's values past its time delta: its stack id (if its type has
 * one) and up to three arguments. 0, or -1 if there are more. */
static inline int l_fields(LEv *e, const u64 *vals, size_t nv, int has_stack) {
    size_t nrest = nv - 1;
    if (has_stack)
        e->stk = vals[--nv], nrest--;
    if (nrest > 3)
        return -1;
    for (size_t k = 0; k < nrest; k++)
        e->a[k] = vals[1 + k];
    return 0;
}

/* The event a scanned one (not a string) at offset at makes, as the
 * cursor has it, and the cursor moved on: R_EVENT (*e made; a user log's
 * message is the reader's), R_TABLE, R_BAD or R_OOM. */
static inline int l_event(LCursor *c, int ver, const u8 *stackf, const LScan *sc, const u64 *vals, size_t at, LEv *e) {
    int typ = sc->typ;
    size_t nv = sc->nv;
    switch (typ) {
    case LEV_BATCH: {
        u64 *s = map_slot(&c->last_g, (u64)c->p, 0);
        if (!s)
            return R_OOM;
        *s = c->g;
        c->p = (i64)vals[0];
        u64 *g = map_find(&c->last_g, (u64)c->p);
        c->g = g ? *g : 0;
        if (vals[1] > (u64)1 << 61)
            return R_BAD;
        c->ts = (i64)vals[1];
        return R_TABLE;
    }
    case LEV_FREQUENCY:
        return vals[0] == 0 || vals[0] > (u64)INT64_MAX ? R_BAD : R_TABLE;
    case LEV_TIMER_GOROUTINE:
        return R_TABLE;
    case LEV_STACK:
        return nv < 2 || vals[1] > 1000 || nv != 2 + 4 * vals[1] ? R_BAD : R_TABLE;
    }
    *e = (LEv){.typ = (u8)typ, .off = at, .p = c->p, .g = c->g};
    if (vals[0] > (u64)1 << 61 || c->ts > (i64)1 << 61)
        return R_BAD; /* times this far out would overflow on the way: the twin judges */
    e->ts = c->ts + (i64)vals[0];
    c->ts = e->ts;
    if (l_fields(e, vals, nv, stackf[typ]))
        return R_BAD;
    switch (typ) {
    case LEV_GO_START: case LEV_GO_START_LOCAL: case LEV_GO_START_LABEL:
        c->g = e->g = e->a[0];
        break;
    case LEV_STW_START:
        if (ver < LEGACY_GO1_21 && e->a[0] >= 2) /* before 1.21, two kinds */
            return R_BAD;
        break;
    case LEV_GO_SYS_EXIT: case LEV_GO_WAITING: case LEV_GO_IN_SYSCALL:
        e->g = e->a[0];
        break;
    case LEV_CPU_SAMPLE:
        if (e->a[0] > (u64)1 << 61)
            return R_BAD;
        e->ts = (i64)e->a[0];
        e->p = (i64)e->a[1];
        e->g = e->a[2];
        e->a[0] = 0;
        break;
    default:
        if (is_ends_g(typ))
            c->g = 0;
    }
    /* what the columns (int64) would not carry as the twin's ints do */
    if (e->g > (u64)INT64_MAX || (typ == LEV_PROC_START && e->a[0] > (u64)INT64_MAX))
        return R_BAD;
    return R_EVENT;
}

#endif
