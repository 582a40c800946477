/* The text pieces Python makes once per string or stack id (a quoted
 * string, a stack's frames, their JSON), for every writer of lines
 * (dump.c, jsonl.c, text.c). A piece is made by miss(kind, id), which
 * returns bytes, the first time a call meets the id; the caller's dict
 * (one per generation and kind) keeps it, and so keeps alive the bytes the
 * writers point into: it only grows, and an id's piece is never replaced
 * (a piece two makers made at once is the first one's: setdefault). In
 * front of the dict, a direct-mapped memo, so that most lookups make no
 * Python object; a memo's slots are good for as long as the next calls
 * open that same dict (partcache.c). */

#ifndef LIVETRACE_PARTCACHE_H
#define LIVETRACE_PARTCACHE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>

#include "common/containers.h"
#include "render/textbuf.h"

typedef struct {
    u64 id;
    const char *p;
    size_t n;
    u32 epoch; /* the open it was filled in: another's is an empty slot */
} PartSlot;

typedef struct {
    PyObject *dict; /* id -> bytes */
    PyObject *miss;
    const char *kind; /* what miss(kind, id) is asked for */
    PartSlot *slots; /* PART_SLOTS */
    u32 epoch;
    int memo; /* which of the thread's memos slots is, or -1: its own, calloc'ed */
    Gil *gil; /* the writer's (textbuf.h): the dict and miss need the GIL */
} PartCache;

/* The memo's size: a batch's common ids, direct-mapped. */
#define PART_SLOTS 1024

enum {
    PART_OK = 0,
    PART_ERROR = -1,       /* an exception set, not by miss */
    PART_MISS_RAISED = -2, /* miss raised the exception that is set */
};

/* A memo of this thread's (partcache.c) for dict: the one last filled from
 * it, as it was, else one emptied by a new epoch rather than cleared (the
 * writers are called every 512 lines, and clearing three memos of 1024
 * slots at each call cost more than a tenth of a JSON line). -1 when the
 * thread's are all in use (a writer inside a writer's callback). The GIL
 * held. */
int part_memo_take(PyObject *dict, PartSlot **slots, u32 *epoch);
void part_memo_give(int memo);

/* A cache in front of dict: 0, or -1 with MemoryError. Closed by
 * part_cache_close, even after a failed open (or none, if zeroed). */
static inline int part_cache_open(PartCache *c, PyObject *dict, PyObject *miss, const char *kind) {
    *c = (PartCache){dict, miss, kind, NULL, 1, -1};
    c->memo = part_memo_take(dict, &c->slots, &c->epoch);
    if (c->memo < 0 && !(c->slots = calloc(PART_SLOTS, sizeof(PartSlot)))) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static inline void part_cache_close(PartCache *c) {
    if (!c->slots)
        return;
    if (c->memo >= 0)
        part_memo_give(c->memo);
    else
        free(c->slots);
    c->slots = NULL;
    c->memo = -1;
}

/* Out of line: the dict, and the first time, miss. PART_*; the GIL held
 * after an error. */
static __attribute__((noinline)) int part_fill(PartCache *c, PartSlot *s, u64 id) {
    int released = gil_released(c->gil);
    gil_hold(c->gil);
    PyObject *key = PyLong_FromUnsignedLongLong(id);
    if (!key)
        return PART_ERROR;
    PyObject *v = PyDict_GetItemWithError(c->dict, key); /* borrowed */
    if (!v) {
        if (PyErr_Occurred()) {
            Py_DECREF(key);
            return PART_ERROR;
        }
        v = PyObject_CallFunction(c->miss, "sO", c->kind, key);
        if (!v) {
            Py_DECREF(key);
            return PART_MISS_RAISED;
        }
        if (!PyBytes_Check(v)) {
            Py_DECREF(v);
            Py_DECREF(key);
            PyErr_SetString(PyExc_TypeError, "miss() must return bytes");
            return PART_ERROR;
        }
        /* Another thread writing the same generation's lines may have put
         * the piece in while miss ran: keep the dict's (another writer
         * points into it), never replace it. */
        PyObject *kept = PyDict_SetDefault(c->dict, key, v); /* borrowed */
        Py_DECREF(v);
        if (!kept) {
            Py_DECREF(key);
            return PART_ERROR;
        }
        v = kept;
    }
    Py_DECREF(key);
    if (!PyBytes_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "the cache of parts must hold bytes");
        return PART_ERROR;
    }
    *s = (PartSlot){id, PyBytes_AS_STRING(v), (size_t)PyBytes_GET_SIZE(v), c->epoch};
    if (released)
        gil_free(c->gil);
    return PART_OK;
}

/* The piece for id into *p, *n: PART_*. Any id, however large, has a
 * slot (its remainder); miss says whether the generation has the id. */
static inline __attribute__((always_inline)) int part_get(PartCache *c, u64 id, const char **p, size_t *n) {
    PartSlot *s = &c->slots[id % PART_SLOTS];
    if (!(s->epoch == c->epoch && s->id == id)) {
        int r = part_fill(c, s, id);
        if (r != PART_OK)
            return r;
    }
    *p = s->p, *n = s->n;
    return PART_OK;
}

/* The piece for id appended: 0, or -1 with an exception set. */
static inline int part_put(TextBuf *b, PartCache *c, u64 id) {
    const char *p;
    size_t n;
    return part_get(c, id, &p, &n) != PART_OK ? -1 : tb_put(b, p, n);
}

#endif
