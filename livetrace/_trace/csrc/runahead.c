/* The engine's worker thread and the ring of blocks it hands over (see runahead.h). */

#include "runahead.h"

static void *worker(void *arg) {
    Runahead *ra = arg;
    Engine *e = ra->e;
    for (;;) {
        pthread_mutex_lock(&ra->mu);
        if (ra->tail - ra->head == RA_BLOCKS) {
            ra->worker_waits = 1;
            while (!ra->stop && ra->tail - ra->head > RA_BLOCKS - RA_WAKE)
                pthread_cond_wait(&ra->cv, &ra->mu);
            ra->worker_waits = 0;
        }
        int stop = ra->stop;
        RaBlock *b = &ra->blocks[ra->tail % RA_BLOCKS];
        pthread_mutex_unlock(&ra->mu);
        if (stop)
            return NULL;
        int rc = engine_run(e, ra->max);
        /* The block takes the events; the engine writes on into the block's
         * columns, which its reader emptied. */
        Columns t = b->cols;
        b->cols = e->out;
        e->out = t;
        e->out.n = 0;
        b->rc = rc;
        if (!rc && grow((void **)&b->xs, &b->capxs, e->nx, sizeof(Str)))
            b->rc = -1;
        if (!b->rc && e->nx)
            memcpy(b->xs, e->xstr, e->nx * sizeof(Str));
        b->nx = b->rc ? 0 : e->nx;
        int done = b->done = b->rc || !e->active || e->err;
        pthread_mutex_lock(&ra->mu);
        ra->tail++;
        ra->finished = done;
        if (ra->caller_waits && (done || ra->tail - ra->head >= RA_WAKE))
            pthread_cond_broadcast(&ra->cv);
        pthread_mutex_unlock(&ra->mu);
        if (done)
            return NULL;
    }
}

int ra_start(Runahead *ra, Engine *e, size_t max) {
    if (ra->running || !max)
        return -1;
    if (!ra->sync_ready) {
        if (pthread_mutex_init(&ra->mu, NULL))
            return -1;
        if (pthread_cond_init(&ra->cv, NULL)) {
            pthread_mutex_destroy(&ra->mu);
            return -1;
        }
        ra->sync_ready = 1;
    }
    ra->head = ra->tail = 0;
    ra->stop = ra->finished = ra->caller_waits = ra->worker_waits = 0;
    ra->max = max;
    ra->e = e;
    for (int i = 0; i < RA_BLOCKS; i++)
        ra->blocks[i].cols.n = 0;
    if (pthread_create(&ra->th, NULL, worker, ra))
        return -1;
    ra->running = 1;
    return 0;
}

RaBlock *ra_next(Runahead *ra) {
    if (!ra->running)
        return NULL;
    pthread_mutex_lock(&ra->mu);
    if (ra->tail == ra->head) {
        ra->caller_waits = 1;
        while (!ra->finished && ra->tail - ra->head < RA_WAKE)
            pthread_cond_wait(&ra->cv, &ra->mu);
        ra->caller_waits = 0;
    }
    RaBlock *b = &ra->blocks[ra->head % RA_BLOCKS];
    pthread_mutex_unlock(&ra->mu);
    if (b->done) {
        /* The worker is gone after its last block: the engine is the caller's. */
        pthread_join(ra->th, NULL);
        ra->running = 0;
    }
    return b;
}

void ra_done_with(Runahead *ra, RaBlock *b) {
    b->cols.n = 0;
    if (!ra->running)
        return;
    pthread_mutex_lock(&ra->mu);
    ra->head++;
    if (ra->worker_waits && ra->tail - ra->head <= RA_BLOCKS - RA_WAKE)
        pthread_cond_broadcast(&ra->cv);
    pthread_mutex_unlock(&ra->mu);
}

void ra_stop(Runahead *ra) {
    if (!ra->running)
        return;
    pthread_mutex_lock(&ra->mu);
    ra->stop = 1;
    pthread_cond_broadcast(&ra->cv);
    pthread_mutex_unlock(&ra->mu);
    pthread_join(ra->th, NULL);
    ra->running = 0;
}

void ra_free(Runahead *ra) {
    ra_stop(ra);
    for (int i = 0; i < RA_BLOCKS; i++) {
        cols_free(&ra->blocks[i].cols);
        free(ra->blocks[i].xs);
        ra->blocks[i] = (RaBlock){0};
    }
    if (ra->sync_ready) {
        pthread_mutex_destroy(&ra->mu);
        pthread_cond_destroy(&ra->cv);
        ra->sync_ready = 0;
    }
}
