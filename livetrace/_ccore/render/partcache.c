/* The memos in front of the writers' part caches (partcache.h): a few per
 * thread, reused from call to call. A slot belongs to the open whose epoch
 * it carries, so a new open empties a memo by taking a new epoch. */

#include "render/partcache.h"

#include <string.h>

/* The most caches open at once in one thread: a writer opens three. */
#define PART_MEMOS 4

/* Thread-local: the writers run without the GIL, in several threads at once. */
static __thread PartSlot memos[PART_MEMOS][PART_SLOTS];
static __thread u32 last_epoch;
static __thread unsigned in_use; /* a bit per memo */

int part_memo_take(PartSlot **slots, u32 *epoch) {
    for (int k = 0; k < PART_MEMOS; k++) {
        if (in_use & (1u << k))
            continue;
        if (++last_epoch == 0) { /* wrapped: slots of 2^32 opens ago would look filled */
            memset(memos, 0, sizeof memos);
            last_epoch = 1;
        }
        in_use |= 1u << k;
        *slots = memos[k];
        *epoch = last_epoch;
        return k;
    }
    return -1;
}

void part_memo_give(int memo) { in_use &= ~(1u << memo); }
