/* livetrace._trace._ccore.legacy_stream: a complete Go 1.11-1.21 trace (a
 * live session's segment) to its exact modern events a batch at a time, as
 * the reader asks for them (_trace/legacy/fast.py's exact_stream). Read, ordered
 * and checked at once; the conversion, and the columns, a batch at a time:
 * a segment holds its ordered events (legacy.h's LEv) and one batch, not
 * the columns of every event. The events are counted first (a conversion
 * that writes nothing), which also finds anything the conversion would give
 * up on before a batch is handed out. */

#include "common/pyglue.h"
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "decode/legacy.h"
#include "decode/legacy_stream.h"
#include "common/model.h"

typedef struct {
    PyObject_HEAD L l;
    Cols c;
    Conv cv;
    u8 mask[256], stackf[LEV_COUNT];
    u64 builtin[B_COUNT];
    Py_buffer data; /* the trace: the events' values are read again from it */
    size_t peak, records;
    int live;       /* l, c, cv and data are held */
} LSObject;

static void ls_release(LSObject *self) {
    if (!self->live)
        return;
    l_free(&self->l), conv_free(&self->cv), cols_free(&self->c.out);
    memset(&self->l, 0, sizeof self->l);
    PyBuffer_Release(&self->data);
    self->live = 0;
}

static void LS_dealloc(LSObject *self) {
    ls_release(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Moves rows k.. of the columns to the front. */
static void cols_drop_front(Columns *o, size_t k) {
    size_t rest = o->n - k;
    memmove(o->code, o->code + k, rest);
    memmove(o->time, o->time + k, rest * 8), memmove(o->m, o->m + k, rest * 8);
    memmove(o->p, o->p + k, rest * 8), memmove(o->g, o->g + k, rest * 8);
    memmove(o->args, o->args + k * NARGS, rest * 8 * NARGS);
    memmove(o->extra, o->extra + k * NEXTRA, rest * 8 * NEXTRA);
    o->n = rest;
}

/* next(n) -> the next n events' seven columns (fewer at the end), or None: all given */
static PyObject *LS_next(LSObject *self, PyObject *arg) {
    Py_ssize_t want = PyLong_AsSsize_t(arg);
    if (want == -1 && PyErr_Occurred())
        return NULL;
    if (want < 1) {
        PyErr_SetString(PyExc_ValueError, "next: at least one event");
        return NULL;
    }
    if (!self->live)
        Py_RETURN_NONE;
    Columns *o = &self->c.out;
    int rc = L_OK;
    if (self->cv.stage != 2 && o->n < (size_t)want) {
        Py_BEGIN_ALLOW_THREADS
        rc = conv_run(&self->l, &self->cv, &self->c, (size_t)want);
        Py_END_ALLOW_THREADS
    }
    if (rc != L_OK) {
        ls_release(self);
        if (rc == L_NO_MEMORY)
            return PyErr_NoMemory();
        /* counted whole before the first batch: cannot happen */
        PyErr_SetString(PyExc_RuntimeError, "legacy_stream: the conversion gave up after counting");
        return NULL;
    }
    if (self->cv.stage == 2 && self->l.all) { /* every event converted: they can go */
        recs_free(&self->l);
        conv_free(&self->cv);
        self->cv.stage = 2;
    }
    size_t k = o->n < (size_t)want ? o->n : (size_t)want;
    if (!k) {
        ls_release(self);
        Py_RETURN_NONE;
    }
    PyObject *cols = columns_tuple(o, k);
    cols_drop_front(o, k);
    return cols;
}

/* What the stream holds now, in bytes: its events' records, the
 * conversion's bit an event and the columns' room. */
static PyObject *LS_held(LSObject *self, void *closure) {
    if (!self->live)
        return PyLong_FromLong(0);
    size_t cols = self->c.out.cap * (1 + 4 * 8 + 8 * NARGS + 8 * NEXTRA);
    size_t blocked = self->cv.blocked ? self->l.nall / 8 + 1 : 0;
    return PyLong_FromSize_t((self->l.all ? self->l.nall * sizeof(LRec) : 0) + blocked + cols);
}

static PyObject *LS_peak(LSObject *self, void *closure) { return PyLong_FromSize_t(self->peak); }
static PyObject *LS_records(LSObject *self, void *closure) { return PyLong_FromSize_t(self->records); }

static PyGetSetDef LS_getset[] = {
    {"held", (getter)LS_held, NULL, "bytes held now: the events' records, the conversion's bits and the columns'", NULL},
    {"peak", (getter)LS_peak, NULL, "the most bytes of event records held at once, reading and ordering", NULL},
    {"records", (getter)LS_records, NULL, "the trace's events (records), as read", NULL},
    {NULL},
};

static PyMethodDef LS_methods[] = {
    {"next", (PyCFunction)LS_next, METH_O,
     "next($self, n, /)\n--\n\nThe next n events (fewer at the end) as seven columns, or None: all given."},
    {NULL},
};

static PyTypeObject LegacyStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "livetrace._trace._ccore.LegacyStream",
    .tp_doc = "A complete Go 1.11-1.21 trace's exact events, converted a batch at a time (legacy_stream).",
    .tp_basicsize = sizeof(LSObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)LS_dealloc,
    .tp_methods = LS_methods,
    .tp_getset = LS_getset,
};

/* The tables read, as Python objects: (strings, stacks, ticks_per_sec, messages). */
static PyObject *tables_of(const L *l) {
    PyObject *strings = PyList_New((Py_ssize_t)(l->nstrings / 3));
    for (size_t i = 0; strings && i < l->nstrings / 3; i++) {
        const u64 *s = l->strings + 3 * i;
        PyObject *t = Py_BuildValue("(Ky#)", (unsigned long long)s[0], (const char *)l->d + s[1], (Py_ssize_t)s[2]);
        if (!t)
            Py_CLEAR(strings);
        else
            PyList_SET_ITEM(strings, (Py_ssize_t)i, t);
    }
    PyObject *stacks = strings ? PyList_New((Py_ssize_t)l->nstacks) : NULL;
    const u64 *s = l->stack_vals;
    for (size_t i = 0; stacks && i < l->nstacks; i++, s += 2 + s[1]) {
        PyObject *vals = PyTuple_New((Py_ssize_t)s[1]);
        for (size_t k = 0; vals && k < s[1]; k++) {
            PyObject *v = PyLong_FromUnsignedLongLong(s[2 + k]);
            if (!v)
                Py_CLEAR(vals);
            else
                PyTuple_SET_ITEM(vals, (Py_ssize_t)k, v);
        }
        PyObject *t = vals ? Py_BuildValue("(KN)", (unsigned long long)s[0], vals) : NULL;
        if (!t)
            Py_CLEAR(stacks);
        else
            PyList_SET_ITEM(stacks, (Py_ssize_t)i, t);
    }
    PyObject *messages = stacks ? PyList_New((Py_ssize_t)l->nmessages) : NULL;
    for (size_t i = 0; messages && i < l->nmessages; i++) {
        PyObject *b = bytes_of(l->d + l->messages[2 * i], l->messages[2 * i + 1]);
        if (!b)
            Py_CLEAR(messages);
        else
            PyList_SET_ITEM(messages, (Py_ssize_t)i, b);
    }
    if (!messages) {
        Py_XDECREF(strings), Py_XDECREF(stacks);
        return NULL;
    }
    return Py_BuildValue("(NNKN)", strings, stacks, (unsigned long long)l->ticks_per_sec, messages);
}

/* legacy_stream(data, ver, counts, stack_flags, mask, builtin, msg_base, offset, syncs)
 *   -> (LegacyStream, strings, stacks, ticks_per_sec, messages, events), or None (the twin must decode it) */
PyObject *legacy_stream(PyObject *module, PyObject *args) {
    Py_buffer db, cb, sb, mb, bb;
    int ver;
    unsigned long long msg_base, syncs;
    long long offset;
    if (!PyArg_ParseTuple(args, "y*iy*y*y*y*KLK", &db, &ver, &cb, &sb, &mb, &bb, &msg_base, &offset, &syncs))
        return NULL;
    PyObject *res = NULL;
    LSObject *self = NULL;
    int rc = L_GIVE_UP;
    if (cb.len < LEV_COUNT || sb.len < LEV_COUNT || mb.len < 256 || bb.len < (Py_ssize_t)(B_COUNT * 8) ||
        db.len < HEADER_SIZE)
        goto give_up;
    if (!(self = PyObject_New(LSObject, &LegacyStreamType)))
        goto done;
    memset(&self->l, 0, sizeof self->l), memset(&self->c, 0, sizeof self->c), memset(&self->cv, 0, sizeof self->cv);
    self->live = 1;
    memcpy(self->mask, mb.buf, 256), memcpy(self->builtin, bb.buf, B_COUNT * 8);
    memcpy(self->stackf, sb.buf, LEV_COUNT);
    if (PyObject_GetBuffer(db.obj, &self->data, PyBUF_SIMPLE) < 0) {
        self->live = 0;
        goto done;
    }
    L *l = &self->l;
    Cols *c = &self->c;
    l->d = self->data.buf, l->end = (size_t)self->data.len, l->ver = ver;
    l->counts = cb.buf, l->stackf = self->stackf, l->mask = self->mask, l->builtin = self->builtin;
    c->mask = self->mask, c->last = -1, c->offset = (i64)offset;
    Py_BEGIN_ALLOW_THREADS
    rc = l_read(l, HEADER_SIZE);
    if (rc == L_OK)
        rc = l_order(l);
    if (rc == L_OK)
        rc = conv_begin(l, &self->cv, msg_base, syncs);
    if (rc == L_OK) {
        c->count_only = 1;
        rc = conv_run(l, &self->cv, c, SIZE_MAX);
        c->count_only = 0, c->last = -1;
        conv_reset(&self->cv);
    }
    Py_END_ALLOW_THREADS
    if (rc == L_NO_MEMORY) {
        PyErr_NoMemory();
        goto done;
    }
    if (rc != L_OK)
        goto give_up;
    self->peak = l->rec_peak, self->records = l->nev;
    PyObject *tables = tables_of(l);
    if (!tables)
        goto done;
    /* only the events, the maps the conversion reads and the batch are kept */
    free(l->strings), free(l->stack_vals), free(l->messages);
    l->strings = l->stack_vals = l->messages = NULL;
    l->nstrings = l->nstack_vals = l->nstacks = l->nmessages = 0;
    l->counts = NULL; /* (not needed again; the data is, and stack_flags: copied) */
    res = Py_BuildValue("(OOOOOn)", (PyObject *)self, PyTuple_GET_ITEM(tables, 0), PyTuple_GET_ITEM(tables, 1),
                        PyTuple_GET_ITEM(tables, 2), PyTuple_GET_ITEM(tables, 3), (Py_ssize_t)c->counted);
    Py_DECREF(tables);
    goto done;
give_up:
    res = Py_None;
    Py_INCREF(res);
done:
    Py_XDECREF(self);
    PyBuffer_Release(&db), PyBuffer_Release(&cb), PyBuffer_Release(&sb), PyBuffer_Release(&mb);
    PyBuffer_Release(&bb);
    return res;
}

/* segment_memory(): before a live segment's exact decoding (_trace/legacy/live.py).
 * Process-wide, so only a live session asks for it: a file's decoding, or
 * a library user's, keeps glibc's own policy (with it, a dump's output
 * buffers of over 1 MiB are mapped afresh, page faults and all, each time). */
static PyObject *segment_memory(PyObject *module, PyObject *noargs) {
#ifdef __GLIBC__
    /* What the last segment freed, back to the system before this one takes
     * as much again: else the heap's free pieces add up, segment after segment. */
    malloc_trim(0);
    /* A fixed threshold for mapping big blocks: glibc's own rises to the
     * largest block freed, and then a segment's records and columns come from
     * the heap, where the next segment's chunks, arriving meanwhile, pin them
     * (some 4 MiB more at the peak, at 800k events/s). */
    static int fixed_threshold;
    if (!fixed_threshold)
        fixed_threshold = mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
    Py_RETURN_NONE;
}

static PyMethodDef stream_functions[] = {
    {"segment_memory", segment_memory, METH_NOARGS,
     "segment_memory($module, /)\n--\n\nBefore a live segment's exact decoding: freed memory back to the system, "
     "and big blocks mapped (a fixed mmap threshold), so that the process holds what one segment needs."},
    {NULL},
};

int legacy_stream_register(PyObject *module) {
    if (add_type(module, &LegacyStreamType, "LegacyStream") < 0)
        return -1;
    return PyModule_AddFunctions(module, stream_functions);
}
