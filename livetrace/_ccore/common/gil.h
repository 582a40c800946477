/* The GIL let go around a loop over columns, and taken back where Python is needed. */

#ifndef LIVETRACE_GIL_H
#define LIVETRACE_GIL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* A loop over columns runs without the GIL (so that the pipeline's threads
 * run at once), and takes it back only for what needs Python: a writer of
 * lines for a piece made the first time, a line Python makes, the buffer's
 * growth, an error; a view's counts for a key made the first time. A Gil
 * says which: ts is the saved thread state while it is released. Zeroed,
 * it manages nothing (the GIL stays held, as for dump.c). */
typedef struct {
    PyThreadState *ts;
    int managed;
} Gil;

/* The GIL back (if released): before any Python API call. */
static inline void gil_hold(Gil *g) {
    if (g && g->ts) {
        PyEval_RestoreThread(g->ts);
        g->ts = NULL;
    }
}

/* Where a Python object is still in use after a step that may have let the
 * GIL go: the tests' sanitizer build aborts if it
 * did; the others check nothing. */
#ifdef LIVETRACE_GIL_CHECKS
#include <stdio.h>
#define GIL_HELD()                                                                                                     \
    do {                                                                                                               \
        if (!PyGILState_Check()) {                                                                                     \
            fprintf(stderr, "%s:%d: a Python object used without the GIL\n", __FILE__, __LINE__);                    \
            abort();                                                                                                   \
        }                                                                                                              \
    } while (0)
#else
#define GIL_HELD() ((void)0)
#endif

/* Whether the GIL is released now (by this Gil). */
static inline int gil_released(const Gil *g) { return g && g->ts; }

/* Let the GIL go again (where this call manages it). Never with an
 * exception set: an error keeps the GIL until the call returns. */
static inline void gil_free(Gil *g) {
    if (g && g->managed && !g->ts)
        g->ts = PyEval_SaveThread();
}

#endif
