/* Ordering a legacy trace's events as Go's old parser does (twin:
 * _trace/legacy/merge.py's order_1007): each P's stream in time order, an event
 * waiting while the goroutine it moves is not in the state it expects. */

#include "decode/legacy.h"

#define UNORDERED U64MAX
#define GARBAGE (U64MAX - 1)
#define NOSEQ U64MAX
#define SEQINC (U64MAX - 1)

typedef struct {
    u64 key, seq, nseq;
    int status, nstatus;
} Tr;

static Tr transition(const L *l, const LRec *rec) {
    Tr r = {UNORDERED, 0, 0, 0, 0};
    int t = rec->typ;
    LEv ex, *e = &ex;
    if (t == LEV_GO_CREATE || t == LEV_GO_START || t == LEV_GO_START_LABEL || t == LEV_GO_UNBLOCK ||
        t == LEV_GO_SYS_EXIT || t == LEV_GO_UNBLOCK_LOCAL || t == LEV_GO_SYS_EXIT_LOCAL || t == LEV_GC_START)
        l_expand(l, rec, &ex); /* the transitions that read the event's values */
    else
        ex.g = rec->g;
    const u64 *a = e->a;
    if (t == LEV_GO_CREATE)
        r = (Tr){a[0], 0, 1, G_DEAD, G_RUNNABLE};
    else if (t == LEV_GO_WAITING || t == LEV_GO_IN_SYSCALL)
        r = (Tr){e->g, 1, 2, G_RUNNABLE, G_WAITING};
    else if (t == LEV_GO_START || t == LEV_GO_START_LABEL)
        r = (Tr){e->g, a[1], a[1] + 1, G_RUNNABLE, G_RUNNING};
    else if (t == LEV_GO_START_LOCAL)
        r = (Tr){e->g, NOSEQ, SEQINC, G_RUNNABLE, G_RUNNING};
    else if (is_blocking(t) || t == LEV_GO_SYS_BLOCK)
        r = (Tr){e->g, NOSEQ, NOSEQ, G_RUNNING, G_WAITING};
    else if (t == LEV_GO_SCHED || t == LEV_GO_PREEMPT)
        r = (Tr){e->g, NOSEQ, NOSEQ, G_RUNNING, G_RUNNABLE};
    else if (t == LEV_GO_UNBLOCK || t == LEV_GO_SYS_EXIT)
        r = (Tr){a[0], a[1], a[1] + 1, G_WAITING, G_RUNNABLE};
    else if (t == LEV_GO_UNBLOCK_LOCAL || t == LEV_GO_SYS_EXIT_LOCAL)
        r = (Tr){a[0], NOSEQ, SEQINC, G_WAITING, G_RUNNABLE};
    else if (t == LEV_GC_START)
        r = (Tr){GARBAGE, a[0], a[0] + 1, G_DEAD, G_DEAD};
    return r;
}

typedef struct {
    HKey *h;
    size_t n, cap;
} Heap;

/* per-key state: seq and status packed; waiting streams as a linked list */
typedef struct {
    Map seq, status, wait_head; /* wait_head: key -> first node + 1 */
    size_t *next, *stream;       /* nodes */
    size_t nnode, capn, capn2;
} Order;

/* A stream's events sorted by time (stably), in place. */
static int sort_stream(Stream *st) {
    LRec *flat = malloc(st->n * sizeof(LRec) + 1);
    if (!flat)
        return L_NO_MEMORY;
    for (size_t i = 0; i < st->n; i++)
        flat[i] = *st_at(st, i);
    int rc = sort_by_ts(flat, st->n);
    for (size_t i = 0; !rc && i < st->n; i++)
        *st_at(st, i) = flat[i];
    free(flat);
    return rc;
}

int l_order(L *l) {
    /* CPU samples come in the order they were flushed: put them in time order */
    u64 *ps = map_find(&l->p_stream, (u64)(i64)PROFILE_P);
    if (ps && sort_stream(&l->st[*ps - 1]))
        return L_NO_MEMORY;
    size_t total = l->nev;
    /* (untouched, the room not yet written takes no memory) */
    if (!(l->all = recs_alloc(total)))
        return L_NO_MEMORY;
    l->capall = total;
    Order o = {0};
    Heap q = {0};
    u64 tie = 0;
    int rc = L_GIVE_UP;
#define OFFER(S)                                                                                                    \
    do {                                                                                                            \
        Stream *st_ = &l->st[S];                                                                                    \
        if (st_->head < st_->n) {                                                                                   \
            LRec *e_ = st_at(st_, st_->head);                                                                          \
            Tr tr_ = transition(l, e_);                                                                                \
            int ready_ = 1;                                                                                         \
            if (tr_.key != UNORDERED) {                                                                             \
                u64 *cs_ = map_find(&o.seq, tr_.key), *cst_ = map_find(&o.status, tr_.key);                           \
                u64 cseq_ = cs_ ? *cs_ : 0, cstat_ = cst_ ? *cst_ : G_DEAD;                                         \
                if (!((tr_.seq == NOSEQ || tr_.seq == cseq_) && (u64)tr_.status == cstat_)) {                       \
                    ready_ = 0;                                                                                     \
                    if (grow((void **)&o.next, &o.capn, o.nnode + 1, sizeof(size_t)) ||                          \
                        grow((void **)&o.stream, &o.capn2, o.nnode + 1, sizeof(size_t)))                         \
                        goto oom;                                                                                   \
                    /* append at the tail: walk (lists are short) */                                                \
                    u64 *h_ = map_slot(&o.wait_head, tr_.key, 0);                                                    \
                    if (!h_)                                                                                        \
                        goto oom;                                                                                   \
                    o.stream[o.nnode] = (S);                                                                        \
                    o.next[o.nnode] = 0;                                                                            \
                    if (!*h_)                                                                                       \
                        *h_ = o.nnode + 1;                                                                          \
                    else {                                                                                          \
                        size_t k_ = *h_ - 1;                                                                        \
                        while (o.next[k_])                                                                          \
                            k_ = o.next[k_] - 1;                                                                    \
                        o.next[k_] = o.nnode + 1;                                                                   \
                    }                                                                                               \
                    o.nnode++;                                                                                      \
                }                                                                                                   \
            }                                                                                                       \
            if (ready_ && heap_push(&q.h, &q.n, &q.cap, (HKey){e_->ts, tie++, (S)}))                                \
                goto oom;                                                                                           \
        }                                                                                                           \
    } while (0)

    for (size_t s = 0; s < l->nst; s++)
        OFFER(s);
    while (l->nall < total) {
        if (!q.n)
            goto out; /* no consistent order: the twin says so */
        size_t s = heap_pop(q.h, &q.n).at;
        Stream *st = &l->st[s];
        LRec *e = &l->all[l->nall++];
        *e = *st_at(st, st->head++);
        if (st->head % SBLOCK == 0) { /* past a block: it goes */
            size_t held = l->rec_bytes + l->nall * sizeof(LRec);
            if (held > l->rec_peak)
                l->rec_peak = held;
            l->rec_bytes -= BLOCK_BYTES;
            block_free(st->blk[st->head / SBLOCK - 1]);
            st->blk[st->head / SBLOCK - 1] = NULL;
        }
        Tr tr = transition(l, e);
        e->typ = (u8)l_unlocal(e->typ);
        if (tr.key != UNORDERED) {
            u64 *cs = map_slot(&o.seq, tr.key, 0), *cst;
            if (!cs)
                goto oom;
            *cs = tr.nseq == NOSEQ ? *cs : tr.nseq == SEQINC ? *cs + 1 : tr.nseq;
            if (!(cst = map_slot(&o.status, tr.key, G_DEAD)))
                goto oom;
            *cst = (u64)tr.nstatus;
            u64 *h = map_find(&o.wait_head, tr.key);
            if (h && *h) {
                size_t k = *h - 1;
                *h = 0;
                for (;;) {
                    OFFER(o.stream[k]);
                    if (!o.next[k])
                        break;
                    k = o.next[k] - 1;
                }
            }
        }
        OFFER(s);
    }
#undef OFFER
    if (l->rec_bytes + l->nall * sizeof(LRec) > l->rec_peak)
        l->rec_peak = l->rec_bytes + l->nall * sizeof(LRec);
    l->rec_bytes = l->nall * sizeof(LRec);
    for (size_t s = 0; s < l->nst; s++) { /* all in l->all now */
        Stream *st = &l->st[s];
        for (size_t b = 0; b < st->nblk; b++)
            block_free(st->blk[b]);
        free(st->blk);
        st->blk = NULL, st->nblk = st->capblk = st->n = st->head = 0;
    }
    for (size_t i = 1; i < l->nall; i++)
        if (l->all[i - 1].ts > l->all[i].ts)
            goto out;
    /* a syscall exit happened when the syscall returned */
    {
        Map last_block = {0};
        for (size_t i = 0; i < l->nall; i++) {
            LRec *e = &l->all[i];
            if (e->typ == LEV_GO_SYS_BLOCK || e->typ == LEV_GO_IN_SYSCALL) {
                u64 *v = map_slot(&last_block, e->g, 0);
                if (!v) {
                    map_free(&last_block);
                    goto oom;
                }
                *v = (u64)e->ts;
            } else if (e->typ == LEV_GO_SYS_EXIT) {
                LEv x;
                l_expand(l, e, &x);
                if (!x.a[2])
                    continue;
                u64 *v = map_find(&last_block, e->g);
                if (!v || !*v || x.a[2] < *v || x.a[2] > (u64)1 << 61) {
                    map_free(&last_block);
                    goto out;
                }
                e->ts = (i64)x.a[2];
            }
        }
        map_free(&last_block);
    }
    rc = sort_by_ts(l->all, l->nall) ? L_NO_MEMORY : L_OK;
    goto out;
oom:
    rc = L_NO_MEMORY;
out:
    map_free(&o.seq), map_free(&o.status), map_free(&o.wait_head);
    free(o.next), free(o.stream), free(q.h);
    return rc;
}

/* Stable bottom-up merge sort by time, for sequences far from ordered. */
static int merge_sort(LRec *ev, size_t n) {
    LRec *tmp = malloc(n * sizeof(LRec));
    if (!tmp)
        return L_NO_MEMORY;
    LRec *src = ev, *dst = tmp;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = src[j].ts < src[i].ts ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        LRec *t = src;
        src = dst, dst = t;
    }
    if (src != ev)
        memcpy(ev, src, n * sizeof(LRec));
    free(tmp);
    return 0;
}

/* An event taken out of place: its time and its rank among those taken out. */
typedef struct {
    i64 ts;
    size_t j;
} Out;

static inline int out_less(const Out *x, const Out *y) { return x->ts < y->ts || (x->ts == y->ts && x->j < y->j); }

/* Sorts by (ts, j): the keys are distinct, so any merge sort is stable. */
static int sort_out(Out *o, size_t k) {
    Out *tmp = malloc(k * sizeof(Out)), *src = o, *dst = tmp;
    if (!tmp)
        return L_NO_MEMORY;
    for (size_t w = 1; w < k; w *= 2) {
        for (size_t lo = 0; lo < k; lo += 2 * w) {
            size_t mid = lo + w < k ? lo + w : k, hi = lo + 2 * w < k ? lo + 2 * w : k, i = lo, j = mid, q = lo;
            while (i < mid && j < hi)
                dst[q++] = out_less(&src[j], &src[i]) ? src[j++] : src[i++];
            while (i < mid)
                dst[q++] = src[i++];
            while (j < hi)
                dst[q++] = src[j++];
        }
        Out *t = src;
        src = dst, dst = t;
    }
    if (src != o)
        memcpy(o, src, k * sizeof(Out));
    free(tmp);
    return 0;
}

/* Stable sort by time. The events come nearly in order (the merge's order
 * with some syscall exits moved back to when the syscall returned): the few
 * out of place are taken out, sorted and merged back in, in one pass over
 * the rest; a sequence far from ordered is merge sorted whole. */
int sort_by_ts(LRec *ev, size_t n) {
    size_t k = 0;
    i64 last = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].ts >= last)
            last = ev[i].ts;
        else
            k++;
    }
    if (!k)
        return 0;
    if (k > n / 8)
        return merge_sort(ev, n);
    LRec *x = malloc(k * sizeof(LRec));
    size_t *orig = malloc(k * sizeof(size_t));
    Out *o = malloc(k * sizeof(Out));
    int rc = L_NO_MEMORY;
    if (!x || !orig || !o)
        goto done;
    /* the rest, in order, to the front; those out of place aside, with where they were */
    size_t w = 0, j = 0;
    last = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].ts >= last) {
            last = ev[i].ts;
            ev[w++] = ev[i];
        } else {
            x[j] = ev[i], orig[j] = i, o[j] = (Out){ev[i].ts, j};
            j++;
        }
    }
    if (sort_out(o, k))
        goto done;
    /* merged from the back, ties by original place: the rest's place is
     * found by skipping the taken-out places (orig ascends) */
    size_t i = n - k, q = k, at = n, oi = k;
#define SKIP_TAKEN()                                                                                                \
    do {                                                                                                            \
        at--;                                                                                                       \
        while (oi && orig[oi - 1] == at)                                                                            \
            oi--, at--;                                                                                             \
    } while (0)
    SKIP_TAKEN(); /* at: the original place of the rest's last, ev[i - 1] */
    while (q) {
        const Out *t = &o[q - 1];
        if (i && (ev[i - 1].ts > t->ts || (ev[i - 1].ts == t->ts && at > orig[t->j]))) {
            ev[i + q - 1] = ev[i - 1];
            i--;
            SKIP_TAKEN();
        } else {
            ev[i + q - 1] = x[t->j];
            q--;
        }
    }
#undef SKIP_TAKEN
    rc = 0;
done:
    free(x), free(orig), free(o);
    return rc;
}
