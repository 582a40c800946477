/* The ordering engine run ahead on a worker thread: while the caller turns
 * one block of events into Python objects (and its consumer formats them),
 * the worker orders the next ones. A generation's ordering is sequential
 * (every event's state follows from the one before), so the split is
 * between ordering and what consumes its output.
 *
 * The worker owns the engine from ra_start until it has handed over the
 * block that ends the generation (done or stopped by an error), or until
 * ra_stop; the caller touches the engine only outside that span. Blocks are
 * cut exactly as engine_run(e, max) calls in a row would cut them, so the
 * output is the same with or without the worker. */

#ifndef LIVETRACE_RUNAHEAD_H
#define LIVETRACE_RUNAHEAD_H

#include <pthread.h>

#include "engine.h"

#define RA_BLOCKS 8 /* blocks the worker may be ahead: enough to ride out a slow consumer, few enough to stay in cache */
/* A thread that had to wait is woken once RA_WAKE blocks (or room for them)
 * are there, not at each one: a wake-up costs about what ordering a
 * thousand events does. */
#define RA_WAKE 4

typedef struct {
    Columns cols;
    Str *xs; /* the generation's extra strings when the block was cut (texts owned by the engine) */
    size_t nx, capxs;
    int done; /* the generation is over with this block (decoded, or stopped by an error) */
    int rc;   /* engine_run's: -1 out of memory */
} RaBlock;

typedef struct {
    pthread_t th;
    int running; /* a worker is started and not yet joined */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int sync_ready;
    RaBlock blocks[RA_BLOCKS];
    size_t head, tail; /* blocks handed over and taken: the ring holds tail - head */
    size_t max;
    int stop;
    int caller_waits, worker_waits;
    int finished; /* the worker handed over its last block */
    Engine *e;
} Runahead;

/* Starts a worker ordering e's generation into blocks of max events: 0, or -1 (then run synchronously). */
int ra_start(Runahead *ra, Engine *e, size_t max);
/* The next block, waiting for it (call without the GIL); NULL when no worker runs. */
RaBlock *ra_next(Runahead *ra);
/* Gives the block ra_next returned back to the worker; joins it after the last one. */
void ra_done_with(Runahead *ra, RaBlock *b);
/* Stops and joins the worker, if one runs (the engine is the caller's again). */
void ra_stop(Runahead *ra);
void ra_free(Runahead *ra);

#endif
