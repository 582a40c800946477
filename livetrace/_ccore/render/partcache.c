/* The memos in front of the writers' part caches (partcache.h): a few per
 * thread, reused from call to call. A slot belongs to the open whose epoch
 * it carries, so an open empties a memo by taking a new epoch, unless it
 * opens the dict the memo was last filled from: a dict only grows, and
 * what it holds for an id is never replaced, so its slots are still good.
 * A writer is called for every batch (a 64 KiB chunk of trace), and
 * filling a slot again takes the GIL and a dict lookup: a thousand stacks
 * a generation, made again for each of its batches, was most of the GIL a
 * JSON tail held in its writers. */

#include "render/partcache.h"

#include <string.h>

/* The most caches open at once in one thread: a writer opens three. */
#define PART_MEMOS 4

/* Thread-local: the writers run without the GIL, in several threads at once. */
static __thread PartSlot memos[PART_MEMOS][PART_SLOTS];
static __thread u32 memo_epoch[PART_MEMOS];
/* The dict each memo was last filled from, held (a strong reference) so
 * that no other dict can take its address while the memo points into it. */
static __thread PyObject *memo_dict[PART_MEMOS];
static __thread u32 last_epoch;
static __thread unsigned in_use; /* a bit per memo */
static __thread unsigned next_evicted;

int part_memo_take(PyObject *dict, PartSlot **slots, u32 *epoch) {
    int free_k = -1;
    for (int k = 0; k < PART_MEMOS; k++) {
        if (in_use & (1u << k))
            continue;
        if (memo_dict[k] == dict) {
            in_use |= 1u << k;
            *slots = memos[k];
            *epoch = memo_epoch[k];
            return k;
        }
        /* (the memos in turn: three caches opened by turns do not evict each other) */
        if (free_k < 0 || (unsigned)k == next_evicted % PART_MEMOS)
            free_k = k;
    }
    if (free_k < 0)
        return -1;
    next_evicted = (unsigned)free_k + 1;
    if (++last_epoch == 0) { /* wrapped: slots of 2^32 opens ago would look filled */
        memset(memos, 0, sizeof memos);
        last_epoch = 1;
    }
    Py_INCREF(dict);
    Py_XSETREF(memo_dict[free_k], dict);
    in_use |= 1u << free_k;
    memo_epoch[free_k] = last_epoch;
    *slots = memos[free_k];
    *epoch = last_epoch;
    return free_k;
}

void part_memo_give(int memo) { in_use &= ~(1u << memo); }
