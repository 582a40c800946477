/* The compiled fast path for legacy traces of Go 1.11 to 1.21: a complete
 * trace (or segment) in, its events in the modern event model out, as
 * columns (and, for `-d`'s dump, Go 1.7 to 1.21's ordered events as
 * lines: render/legacy_dump.c, which uses the first three stages). It is
 * the twin of _trace/legacy/wire.py, _trace/legacy/read.py and
 * _trace/legacy/convert.py together, for valid traces only: at the first thing
 * that is not as a valid trace has it, it gives up and the Python twin
 * decodes the trace again and reports the error, so errors are the twin's
 * by construction.
 *
 * Four stages, each in its own file: read (legacy_read.c) the events into
 * per-P streams and the tables, order (legacy_order.c) them as Go's old
 * parser does, check (legacy_check.c) the states they go through, and
 * convert (legacy_convert.c) them to modern events. No Python object is
 * touched: the module builds the tables' objects afterwards. */

#ifndef LIVETRACE_LEGACY_H
#define LIVETRACE_LEGACY_H

#include <string.h>

#include "common/containers.h"
#include "common/generated.h"

#define HEADER_SIZE 16 /* "go 1.x trace" and its padding (_trace/legacy/wire.py) */
#define U64MAX UINT64_MAX
#define MAX_STRING 1000000 /* bytes; 1 << 24 would not fit a string's place in str_at */

/* The builtin strings' ids (B_GO_STOP, ..., B_STW0, B_COUNT) are in
 * generated.h, in the order _trace/legacy/fast.py hands them over. */

/* A UserRegion event's mode argument. */
enum { REGION_START, REGION_END };

/* A goroutine's state, as the order and the checks follow it. */
enum { G_DEAD, G_RUNNABLE, G_RUNNING, G_WAITING };

/* Each stage's outcome. */
enum { L_NO_MEMORY = -1, L_OK = 0, L_GIVE_UP = 1 };

typedef struct {
    i64 ts, p;
    u64 g, stk, a[3];
    u64 off; /* where the event starts in the trace (the dump prints it) */
    u32 msg; /* a user log's message: index into the messages */
    u8 typ;
} LEv;

/* Where a reader is: the current batch's P, the time of its last event,
 * the goroutine running, and each P's goroutine as its last batch left it. */
typedef struct {
    i64 p, ts;
    u64 g;
    Map last_g;
} LCursor;

/* An event as the stages between reading and converting keep it: 24
 * bytes, its time, P and goroutine (which the reading's state gave it and
 * the stages change), its type and where it is in the trace; its values
 * are read again from there when a stage needs them (l_expand), so a
 * segment of a live session holds its bytes and these, not a LEv an event. */
typedef struct {
    i64 ts;
    u32 off, g;
    int32_t p;
    u8 typ;
} LRec;

/* A P's events, in blocks: the merge frees each block it is past, as the
 * ordered events grow, so the two together hold about one record an event. */
#define SBLOCK 4096
typedef struct {
    LRec **blk;
    size_t nblk, capblk, n, head;
    i64 p;
} Stream;

static inline LRec *st_at(const Stream *s, size_t i) { return &s->blk[i / SBLOCK][i % SBLOCK]; }

/* A stream's blocks are mapped and unmapped whole, not taken from the heap:
 * a freed block is back with the system at once, not kept in the heap's
 * free lists, where the ordered events could not use it. */
LRec *block_alloc(void);
void block_free(LRec *b);
/* The ordered records, likewise: through malloc, a segment's would raise
 * glibc's mmap threshold to their size once freed, and each next segment's
 * would then come from the heap of whichever thread decodes it, and stay. */
LRec *recs_alloc(size_t n);
#define BLOCK_BYTES (SBLOCK * sizeof(LRec))

typedef struct {
    const u8 *d;
    size_t end;
    int ver;
    const u8 *counts, *stackf, *mask;
    const u64 *builtin;
    /* tables */
    Map str_at; /* string id -> offset << 24 | length (MAX_STRING < 2^20) */
    Map stacks; /* truncated stack id -> 1, for stacks with frames */
    Map timer_gs;
    Map msg_of; /* a user log's offset -> its message's index */
    u64 ticks_per_sec;
    /* the tables as the module hands them to Python, in the trace's order */
    u64 *strings; /* per string: id, offset, length */
    size_t nstrings, capstrings;
    u64 *stack_vals; /* per stack with frames: id, count, then its count values */
    size_t nstack_vals, capstack_vals, nstacks;
    u64 *messages; /* per user log: offset, length */
    size_t nmessages, capmessages;
    size_t nev; /* events read */
    /* bytes of event records held (the streams' blocks and the ordered
     * events written), and the most at once: what a test bounds */
    size_t rec_bytes, rec_peak;
    /* streams, by P, in order of their first event */
    Stream *st;
    size_t nst, capst;
    Map p_stream; /* P (as u64) -> stream index + 1 */
    /* ordered events */
    LRec *all;
    size_t nall, capall;
} L;

/* Where converted events go. */
typedef struct {
    Columns out;
    const u8 *mask;
    i64 last, offset; /* offset: added to every time written (segments stitched together) */
    int count_only;   /* only count the events the mask keeps, in counted */
    size_t counted;
} Cols;

/* What the conversion (legacy_conv.h's rules, which both compiled paths
 * follow) remembers from one event to the next. */
typedef struct {
    Map created, seen, pms, tasks_name, tasks_parent;
    u64 *order; /* goroutines created before the first Gomaxprocs, in order */
    size_t norder, caporder;
    u64 stw_reason;
    int pre_init;
} ConvState;

/* The conversion between two pieces of its output (legacy_convert.c): a
 * segment is converted a batch at a time, as its reader asks. */
typedef struct {
    ConvState st;
    Cols *cols;  /* where conv_run writes */
    u8 *blocked; /* a bit an event: a syscall whose goroutine's next event is its block */
    u64 msg_base, syncs;
    size_t i;  /* the next event */
    int stage; /* 0 the opening Sync next, 1 the events, 2 done */
} Conv;

/* A min-heap's entry, on (ts, tie): the order's streams by their next
 * event (legacy_order.c), the live window's held events (legacy_live.c). */
typedef struct {
    i64 ts;
    u64 tie;
    size_t at;
} HKey;

static inline int hkey_less(const HKey *x, const HKey *y) {
    return x->ts < y->ts || (x->ts == y->ts && x->tie < y->tie);
}

/* v into the heap h[0..*n) (room for *cap): 0, or -1 (no memory). */
static inline int heap_push(HKey **h, size_t *n, size_t *cap, HKey v) {
    if (grow((void **)h, cap, *n + 1, sizeof(HKey)))
        return -1;
    HKey *q = *h;
    size_t i = (*n)++;
    while (i) {
        size_t up = (i - 1) / 2;
        if (!hkey_less(&v, &q[up]))
            break;
        q[i] = q[up];
        i = up;
    }
    q[i] = v;
    return 0;
}

/* The least entry of the heap h[0..*n) (*n > 0), taken out. */
static inline HKey heap_pop(HKey *h, size_t *n) {
    HKey top = h[0], last = h[--*n];
    size_t m = *n, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m)
            break;
        if (c + 1 < m && hkey_less(&h[c + 1], &h[c]))
            c++;
        if (!hkey_less(&h[c], &last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (m)
        h[i] = last;
    return top;
}

int l_read(L *l, size_t pos);
int l_order(L *l);
int l_check(L *l);
/* The ordered events' times in ns since the first, and the pseudo-Ps of
 * timer wakeups and syscall exits (as the twin's LegacyDecoder.close). */
int l_times(L *l);
/* The ordered events' times and checks, and the conversion's start: an L_* outcome. */
int conv_begin(L *l, Conv *v, u64 msg_base, u64 syncs);
/* Converts until c holds `until` events or more, or all are done (stage 2): an L_* outcome. */
int conv_run(L *l, Conv *v, Cols *c, size_t until);
/* Back to the first event (to convert again after counting). */
void conv_reset(Conv *v);
void conv_free(Conv *v);
/* Stable sort by time: 0, or L_NO_MEMORY. */
int sort_by_ts(LRec *ev, size_t n);
/* The whole event r, its values read again from the trace. */
void l_expand(const L *l, const LRec *r, LEv *e);

/* r as a LEv: whole when `values`, else without its values (a, stk, msg). */
static inline void l_view(const L *l, const LRec *r, LEv *e, int values) {
    if (values)
        l_expand(l, r, e);
    else
        *e = (LEv){.ts = r->ts, .p = r->p, .g = r->g, .off = r->off, .typ = r->typ};
}
void l_free(L *l);
void recs_free(L *l); /* l->all (recs_alloc's), and nall = capall = 0 */

static inline int is_blocking(int t) {
    return t == LEV_GO_SLEEP || t == LEV_GO_BLOCK || (t >= LEV_GO_BLOCK_SEND && t <= LEV_GO_BLOCK_NET) ||
           t == LEV_GO_BLOCK_GC;
}

/* Whether an event of type t leaves its P without a goroutine. */
static inline int is_ends_g(int t) {
    return t == LEV_GO_END || t == LEV_GO_STOP || t == LEV_GO_SCHED || t == LEV_GO_PREEMPT || t == LEV_GO_SYS_BLOCK ||
           is_blocking(t);
}

/* A P-local event's type as its global one: past the order, the difference is of no more use. */
static inline int l_unlocal(int t) {
    return t == LEV_GO_START_LOCAL      ? LEV_GO_START
           : t == LEV_GO_UNBLOCK_LOCAL  ? LEV_GO_UNBLOCK
           : t == LEV_GO_SYS_EXIT_LOCAL ? LEV_GO_SYS_EXIT
                                        : t;
}

#endif
