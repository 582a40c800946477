/* ProfileCounts: the per-span loop of Go's pprof-like trace profiles, the
 * twin of _views/pprof.py's ProfileBuilder.feed and end_trace (which say
 * what is counted, and why). It takes a SpanBatch's columns batch at a
 * time, keeps each goroutine's lifetime and the counted intervals of the
 * trace being fed, and at the trace's end clips them to the lifetimes and
 * adds them up per stack key. Stack keys are the Python side's: a stack
 * (tables key, stack id) seen for the first time is handed to a callback
 * that answers its key's id, so keys and their frames are made in the order
 * the twin makes them. Totals are kept exactly (128 bits), as Python's ints
 * are, so both twins fail alike where a total does not fit a profile. Each
 * key also keeps when it was last counted (trace, end of the interval): of
 * keys the Python side merges, the profile shows the one counted last, as
 * Go's does. */

#include "views/pprof.h"
#include "common/pyglue.h"

#include <string.h>

#include "common/containers.h"
#include "common/gil.h"
#include "spans/spans.h"

/* The bits of a names-table entry in feed's reason mask. */
enum { REASON_COUNTS = 1, REASON_FOREVER = 2 };

typedef unsigned __int128 u128;

/* A goroutine's lifetime as the trace so far has it. */
typedef struct {
    i64 first_run;        /* start of its earliest running span, if ran */
    i64 last_start, last; /* its latest-starting span (the later of equals) */
    i64 forever;          /* when it blocked forever, if blocked_forever */
    u8 ran, blocked_forever;
} Life;

/* A counted interval, waiting for the trace's end. */
typedef struct {
    i64 start, end;
    u32 life, key;
} Pending;

/* When a key was last counted: the trace (end_trace calls before it) and the interval's end. */
typedef struct {
    u64 trace;
    i64 end;
} Last;

typedef struct {
    PyObject_HEAD int state; /* the span kind counted */
    int busy;                /* in feed: its callback must not re-enter */
    /* The trace being fed. */
    Map lives; /* goroutine -> index into life */
    Life *life;
    size_t nlife, caplife;
    Pending *pend;
    size_t npend, cappend;
    Map tables; /* tables key -> Map * (stack id -> key id) */
    /* Every trace so far, by key id (count 0: not counted yet). */
    u64 *count;
    u128 *ns;
    Last *last;
    size_t nkeys, capcount, capns, caplast;
    u64 ntraces; /* end_trace calls so far */
    u32 *order; /* key ids, in the order they were first counted */
    size_t norder, caporder;
} ProfileCountsObject;

static void free_map(void *m) {
    map_free(m);
    free(m);
}

/* Forgets the trace being fed (the totals stay). */
static void reset_trace(ProfileCountsObject *self) {
    map_free(&self->lives);
    map_each_ptr(&self->tables, free_map);
    map_free(&self->tables);
    self->nlife = self->npend = 0;
}

static int PC_init(ProfileCountsObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"state", NULL};
    int state;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "i:ProfileCounts", kwlist, &state))
        return -1;
    if (state < K_RUNNING || state > K_SYSCALL) {
        PyErr_Format(PyExc_ValueError, "span kind %d is not a goroutine state", state);
        return -1;
    }
    self->state = state;
    return 0;
}

static void PC_dealloc(ProfileCountsObject *self) {
    reset_trace(self);
    free(self->life), free(self->pend), free(self->count), free(self->ns), free(self->last), free(self->order);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Goroutine g's lifetime, made from its first span (start, end) if new; NULL when out of memory. */
static Life *life_of(ProfileCountsObject *self, i64 g, i64 start, i64 end) {
    u64 *idx = map_slot(&self->lives, (u64)g, self->nlife);
    if (!idx)
        return NULL;
    if (*idx == self->nlife) {
        if (grow((void **)&self->life, &self->caplife, self->nlife + 1, sizeof(Life)) < 0) {
            u64 gone;
            map_del(&self->lives, (u64)g, &gone);
            return NULL;
        }
        self->life[self->nlife++] = (Life){.last_start = start, .last = end};
    }
    return &self->life[*idx];
}

/* The id of the key of stack (tab, stack), asked of key_of the first time
 * this trace meets it (the GIL taken for that, and let go again): the id,
 * or -1 with an exception (the GIL held). */
static long long key_for(ProfileCountsObject *self, u32 tab, u64 stack, PyObject *key_of, Gil *gil) {
    Map *m = map_get_ptr(&self->tables, tab);
    if (!m) {
        if (!(m = calloc(1, sizeof *m)) || map_put_ptr(&self->tables, tab, m) < 0) {
            free(m);
            gil_hold(gil);
            PyErr_NoMemory();
            return -1;
        }
    }
    u64 *known = map_find(m, stack);
    if (known)
        return (long long)*known;
    gil_hold(gil);
    PyObject *r = PyObject_CallFunction(key_of, "IK", (unsigned)tab, (unsigned long long)stack);
    if (!r)
        return -1;
    long long id = PyLong_AsLongLong(r);
    Py_DECREF(r);
    if (id == -1 && PyErr_Occurred())
        return -1;
    /* Ids are dense: the next new one is nkeys. */
    if (id < 0 || (unsigned long long)id > self->nkeys || id > (long long)UINT32_MAX) {
        PyErr_Format(PyExc_ValueError, "key id %lld out of order (%zu known)", id, self->nkeys);
        return -1;
    }
    if ((size_t)id == self->nkeys) {
        if (grow((void **)&self->count, &self->capcount, self->nkeys + 1, sizeof(u64)) < 0 ||
            grow((void **)&self->ns, &self->capns, self->nkeys + 1, sizeof(u128)) < 0 ||
            grow((void **)&self->last, &self->caplast, self->nkeys + 1, sizeof(Last)) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        self->count[self->nkeys] = 0, self->ns[self->nkeys] = 0;
        self->nkeys++;
    }
    if (map_put(m, stack, (u64)id) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    gil_free(gil);
    return id;
}

enum { C_KIND, C_RKIND, C_RID, C_START, C_END, C_REASON, C_FLAGS, C_STACK, C_TAB, C_MASK, N_BUFS };

/* The loop runs without the GIL (feed's busy flag keeps this object's
 * other methods out meanwhile); it is taken for a new key or an error, and
 * is held when this returns. */
static int feed_columns(ProfileCountsObject *self, Py_buffer *b, PyObject *key_of) {
    size_t n = (size_t)b[C_KIND].len;
    static const size_t width[N_BUFS - 1] = {1, 1, 8, 8, 8, 4, 1, 8, 4};
    for (int c = 0; c < C_MASK; c++)
        if ((size_t)b[c].len != n * width[c]) {
            PyErr_SetString(PyExc_ValueError, "columns of different lengths");
            return -1;
        }
    const u8 *kinds = b[C_KIND].buf, *rkinds = b[C_RKIND].buf, *flags = b[C_FLAGS].buf, *mask = b[C_MASK].buf;
    const u8 *rids = b[C_RID].buf, *starts = b[C_START].buf, *ends = b[C_END].buf, *reasons = b[C_REASON].buf;
    const u8 *stacks = b[C_STACK].buf, *tabs = b[C_TAB].buf;
    size_t nmask = (size_t)b[C_MASK].len;
    Gil gil = {NULL, 1};
    gil_free(&gil);
    for (size_t i = 0; i < n; i++) {
        u8 kind = kinds[i];
        if (kind > K_SYSCALL || rkinds[i] != RES_GOROUTINE)
            continue;
        i64 start = ld_i64(starts, i), end = ld_i64(ends, i);
        Life *l = life_of(self, ld_i64(rids, i), start, end);
        if (!l) {
            gil_hold(&gil);
            PyErr_NoMemory();
            return -1;
        }
        if (kind == K_RUNNING && (!l->ran || start < l->first_run))
            l->first_run = start, l->ran = 1;
        if (start >= l->last_start)
            l->last_start = start, l->last = end;
        u32 reason = ld_u32(reasons, i);
        /* The twin reads the reason's name here, and fails alike on one
         * the names table does not have. */
        if ((kind == K_BLOCKED || (kind == self->state && !(flags[i] & CLIPPED_END))) && reason >= nmask) {
            gil_hold(&gil);
            PyErr_SetString(PyExc_IndexError, "list index out of range");
            return -1;
        }
        if (kind == K_BLOCKED && mask[reason] & REASON_FOREVER)
            l->forever = start, l->blocked_forever = 1;
        if (kind != self->state || flags[i] & CLIPPED_END || !(mask[reason] & REASON_COUNTS))
            continue;
        u32 life = (u32)(l - self->life);
        long long key = key_for(self, ld_u32(tabs, i), ld_u64(stacks, i), key_of, &gil);
        if (key < 0)
            return -1;
        if (grow((void **)&self->pend, &self->cappend, self->npend + 1, sizeof(Pending)) < 0) {
            gil_hold(&gil);
            PyErr_NoMemory();
            return -1;
        }
        self->pend[self->npend++] = (Pending){start, end, life, (u32)key};
    }
    gil_hold(&gil);
    return 0;
}

static PyObject *PC_feed(ProfileCountsObject *self, PyObject *args) {
    Py_buffer b[N_BUFS];
    PyObject *key_of;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*O:feed", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7],
                          &b[8], &b[9], &key_of))
        return NULL;
    int r = -1;
    if (self->busy)
        PyErr_SetString(PyExc_RuntimeError, "ProfileCounts is busy feeding");
    else {
        self->busy = 1;
        r = feed_columns(self, b, key_of);
        self->busy = 0;
    }
    for (int c = 0; c < N_BUFS; c++)
        PyBuffer_Release(&b[c]);
    if (r < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *PC_end_trace(ProfileCountsObject *self, PyObject *unused) {
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "ProfileCounts is busy feeding");
        return NULL;
    }
    for (size_t i = 0; i < self->npend; i++) {
        const Pending *p = &self->pend[i];
        const Life *l = &self->life[p->life];
        i64 lo = l->ran ? l->first_run : 0, hi = l->blocked_forever ? l->forever : l->last;
        if (hi < p->start || p->end < lo)
            continue;
        i64 upto = hi < p->end ? hi : p->end, from = lo > p->start ? lo : p->start;
        if (upto <= from)
            continue;
        if (!self->count[p->key]) {
            if (grow((void **)&self->order, &self->caporder, self->norder + 1, sizeof(u32)) < 0)
                return PyErr_NoMemory();
            self->order[self->norder++] = p->key;
        }
        Last *last = &self->last[p->key];
        if (!self->count[p->key] || last->trace != self->ntraces || p->end > last->end)
            *last = (Last){self->ntraces, p->end};
        self->count[p->key]++;
        self->ns[p->key] += (u64)upto - (u64)from; /* fits: upto > from */
    }
    reset_trace(self);
    self->ntraces++;
    Py_RETURN_NONE;
}

static PyObject *u128_long(u128 v) {
    u64 high = (u64)(v >> 64), low = (u64)v;
    if (!high)
        return PyLong_FromUnsignedLongLong(low);
    PyObject *h = PyLong_FromUnsignedLongLong(high), *l = PyLong_FromUnsignedLongLong(low);
    PyObject *sixty_four = PyLong_FromLong(64), *shifted = NULL, *r = NULL;
    if (h && l && sixty_four && (shifted = PyNumber_Lshift(h, sixty_four)))
        r = PyNumber_Or(shifted, l);
    Py_XDECREF(h), Py_XDECREF(l), Py_XDECREF(sixty_four), Py_XDECREF(shifted);
    return r;
}

static PyObject *PC_totals(ProfileCountsObject *self, PyObject *unused) {
    if (self->busy) { /* feed may be growing what this reads, in another thread */
        PyErr_SetString(PyExc_RuntimeError, "ProfileCounts is busy feeding");
        return NULL;
    }
    PyObject *out = PyList_New((Py_ssize_t)self->norder);
    for (size_t i = 0; out && i < self->norder; i++) {
        u32 k = self->order[i];
        PyObject *ns = u128_long(self->ns[k]);
        const Last *last = &self->last[k];
        PyObject *t = ns ? Py_BuildValue("(IKNKL)", (unsigned)k, (unsigned long long)self->count[k], ns,
                                         (unsigned long long)last->trace, (long long)last->end)
                         : NULL;
        if (!t)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, (Py_ssize_t)i, t);
    }
    return out;
}

static PyMethodDef PC_methods[] = {
    {"feed", (PyCFunction)PC_feed, METH_VARARGS,
     "feed($self, kinds, resource_kinds, resource_ids, starts, ends, reasons, flags, start_stacks, start_tables, "
     "mask, key_of, /)\n--\n\nCount a SpanBatch's spans (its columns); mask[reason]: 1 counts, 2 \"forever\"; "
     "key_of(tables, stack) gives a stack's key id the first time this trace meets it."},
    {"end_trace", (PyCFunction)PC_end_trace, METH_NOARGS,
     "end_trace($self, /)\n--\n\nClip the trace's intervals to its goroutines' lifetimes and count them."},
    {"totals", (PyCFunction)PC_totals, METH_NOARGS,
     "totals($self, /)\n--\n\n(key id, count, ns, trace, end) of every counted key, in the order first counted; "
     "trace and end: when it was last counted."},
    {NULL},
};

static PyTypeObject ProfileCountsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "livetrace._trace._ccore.ProfileCounts",
    .tp_basicsize = sizeof(ProfileCountsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)PC_init,
    .tp_dealloc = (destructor)PC_dealloc,
    .tp_methods = PC_methods,
    .tp_doc = "ProfileCounts(state)\n--\n\nOne profile's intervals per stack key; the compiled twin of "
              "_views/pprof.py's ProfileBuilder counting.",
};

int pprof_register(PyObject *module) {
    return add_type(module, &ProfileCountsType, "ProfileCounts");
}
