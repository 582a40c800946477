/* The compiled provisional path of a live legacy trace (twin: the
 * provisional half of _trace/legacy/live.py, with _trace/legacy/read.py's LegacyDecoder
 * fed chunk by chunk and _trace/legacy/convert.py's ModelConverter, not strict).
 *
 * Chunks are read as they arrive (ll_read) into pending events, in ticks;
 * once the Python side knows the clock, they are converted (ll_convert) to
 * modern events in nanoseconds and held in a heap on (time, arrival), or
 * put aside as late; ll_release hands out the late ones and those the
 * per-P release watermark lets go, as columns. Like legacy_read.c, it gives up
 * (L_GIVE_UP) at the first thing a valid trace would not have: the twin
 * then takes over and reports the error, so errors are the twin's. No
 * Python object is touched here (legacy_live_py.c is the Python type). */

#ifndef LIVETRACE_LEGACY_LIVE_H
#define LIVETRACE_LEGACY_LIVE_H

#include "decode/legacy.h"

/* One converted event, as a row of the columns. */
typedef struct {
    i64 time, m, p, g;
    u64 a[NARGS], x[NEXTRA];
    u8 code;
} LRow;

/* What the release watermark knows of one P (twin: LegacyLive._front and
 * _fill): the latest time of the events its buffers delivered, and how far
 * the last chunk with its events moved that (about the time its buffer
 * took to fill). */
typedef struct {
    i64 front, before; /* before: front as the chunk being converted found it */
    u64 fill;
    u8 had_before, has_fill, in_chunk;
} LP;

typedef struct {
    /* the version's layout */
    int ver;
    u8 counts[LEV_COUNT], stackf[LEV_COUNT], mask[256];
    u64 builtin[B_COUNT];
    /* reader: bytes of an event cut short, carried to the next chunk */
    u8 *carry;
    size_t ncarry, capcarry;
    LCursor cur;
    i64 cur_ts;       /* cur.ts as the last read left it (the Python side is handed it) */
    Map strs;         /* the string ids seen */
    u64 nmessages;    /* user log messages read */
    int timed;        /* the last read had an event other than a CPU sample */
    /* what the last read found, for the Python side: strings (id, offset,
     * length) and messages (index, offset, length) into the bytes read */
    const u8 *read_d;
    size_t read_pos, read_end; /* where the read stopped: the rest is carried (ll_carry) */
    u64 *new_strs, *new_msgs;
    size_t nnew_strs, capnew_strs, nnew_msgs, capnew_msgs;
    /* read, not yet converted: events, and how many each chunk gave */
    LEv *pend;
    size_t npend, cappend;
    size_t *pchunk;
    size_t npchunk, cappchunk;
    /* converter */
    ConvState conv;
    /* strings made for user logs and task ends, in the order the twin makes
     * them: the Python side interns them (ll_resolve), rows name them by
     * index until released */
    u64 *req_msgs, *req_tasks; /* message index; task type's string id + 1 (0: none) */
    size_t nreq_msgs, capreq_msgs, nreq_tasks, capreq_tasks;
    u64 *msg_ids, *task_ids;
    size_t capmsg_ids, ntask_ids, captask_ids;
    u64 tasks_ended;
    /* the window */
    LRow *pool;
    size_t npool, cappool;
    size_t *free_slots;
    size_t nfree, capfree;
    HKey *heap; /* the held events, on (time, arrival): at is their slot in pool */
    size_t nheap, capheap;
    LRow *late;
    size_t nlate, caplate;
    u64 arrivals;
    i64 released;
    /* the release watermark: the Ps seen (pidx: p -> index + 1 into ps), and
     * those the chunk being converted touched */
    Map pidx;
    LP *ps;
    size_t nps, capps;
    size_t *touched;
    size_t ntouched, captouched;
    /* released events */
    Columns out;
    size_t out_late;
} LLive;

/* A fresh state for a trace of version ver (1.11 to 1.21). */
void ll_init(LLive *s, int ver, const u8 *counts, const u8 *stackf, const u8 *mask, const u64 *builtin);
void ll_free(LLive *s);
/* Reads the chunk's complete events (the header already off): an L_*.
 * The strings and messages it found are in s->read_d until ll_carry, which
 * keeps the bytes of an event cut short for the next read. */
int ll_read(LLive *s, const u8 *d, size_t n);
int ll_carry(LLive *s);
/* Drops every pending event (the twin's first chunk), or the oldest chunk's
 * when more than max_held are pending. */
void ll_drop_pending(LLive *s, int all, size_t max_held);
/* Converts the pending events, with ns = y0 + trunc(intercept + slope *
 * (ticks - x0)) - origin, into the window: an L_*. */
int ll_convert(LLive *s, i64 x0, i64 y0, double slope, double intercept, i64 origin);
/* The ids the Python side gave the last conversion's requests. */
int ll_resolve(LLive *s, const u64 *msg_ids, size_t nmsg, const u64 *task_ids, size_t ntask);
/* The late events, then the held ones the watermark lets go (all: every
 * one) into s->out (s->out_late of them late): 0, or L_NO_MEMORY. An event
 * goes once every P seen has delivered events up to its time, or once it is
 * the bound older than the newest event delivered: the longest time a P
 * took to fill its last buffer, among those that took at most max_wait
 * (max_wait if none did). */
int ll_release(LLive *s, int all, i64 max_wait, size_t max_held);

/* Adds the LegacyLiveCore type to the module (legacy_live_py.c): 0, or -1. */
struct _object;
int legacy_live_register(struct _object *module);

#endif
