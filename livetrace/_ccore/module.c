/* livetrace._trace._ccore, the compiled twin of the decoders' hot loops:
 * the CPython side only. Arguments are parsed and results built here; the
 * work is done by code that touches no Python object (wire.c, engine.c and
 * the handlers, legacy_*.c), with the GIL released, and by jsonl.c, which
 * calls back into Python for what it does not write itself. Results cross
 * the boundary as named structures (struct sequences); _ccore.pyi
 * describes them. */

#include "common/pyglue.h"
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "decode/engine.h"
#include "decode/handlers.h"
#include "render/jsonl.h"
#include "render/dump.h"
#include "decode/legacy.h"
#include "render/legacy_dump.h"
#include "decode/legacy_live.h"
#include "decode/legacy_stream.h"
#include "views/pprof.h"
#include "views/top.h"
#include "tables/columns.h"
#include "tables/units.h"
#include "select/select.h"
#include "spans/spans.h"
#include "decode/tables.h"
#include "render/text.h"
#include "render/span_lines.h"
#include "decode/wire.h"

/* ---- result types ---- */

static PyTypeObject *WireRecordsType, *EventColumnsType, *EngineBatchType, *EngineErrorType, *FinalSyncType;
static PyObject *WireError;

static PyStructSequence_Field wire_records_fields[] = {
    {"codes", "bytes: record i's type code"},
    {"starts", "bytes: n + 1 native unsigned 32-bit ints, where each record's values start in args"},
    {"args", "bytes: native unsigned 64-bit ints, each record's arguments (and frames, and data's place)"},
    {NULL}};
static PyStructSequence_Field event_columns_fields[] = {
    {"codes", "bytes: each event's code"},
    {"times", "bytes: native int64, ns"},
    {"threads", "bytes: native int64, -1 none"},
    {"procs", "bytes: native int64, -1 none"},
    {"goroutines", "bytes: native int64, -1 none"},
    {"args", "bytes: NARGS native uint64 per event"},
    {"extra", "bytes: NEXTRA native uint64 per event"},
    {NULL}};
static PyStructSequence_Field engine_batch_fields[] = {
    {"n_events", "events in columns"},
    {"columns", "EventColumns"},
    {"extra_strings", "the generation's derived strings so far (task types), list of bytes"},
    {"done", "whether the generation is over (decoded, or stopped by error)"},
    {"error", "EngineError that stopped the generation, or None"},
    {NULL}};
static PyStructSequence_Field engine_error_fields[] = {
    {"kind", "ERR_FORMAT, ERR_ORDER or ERR_MEMORY"},
    {"message", "str, as Go's reader words it"},
    {"offset", "byte offset in the stream, or None"},
    {NULL}};
static PyStructSequence_Field final_sync_fields[] = {
    {"time", "ns"},
    {"syncs", "the Syncs so far, this one included: its number"},
    {NULL}};

static PyStructSequence_Desc result_descs[] = {
    {"livetrace._trace._ccore.WireRecords", "The records of one batch payload, as columns.", wire_records_fields, 3},
    {"livetrace._trace._ccore.EventColumns", "Events as the columns of an EventBatch.", event_columns_fields, 7},
    {"livetrace._trace._ccore.EngineBatch", "What Engine.run decoded.", engine_batch_fields, 5},
    {"livetrace._trace._ccore.EngineError", "What stopped a generation.", engine_error_fields, 3},
    {"livetrace._trace._ccore.FinalSync", "The Sync that ends the stream.", final_sync_fields, 2},
};

/* A struct sequence of type t from the values, whose references it takes
 * (NULL among them: a failure, and all are released). */
static PyObject *make_struct(PyTypeObject *t, int n, PyObject **vals) {
    PyObject *r = NULL;
    int ok = 1;
    for (int i = 0; i < n; i++)
        ok &= vals[i] != NULL;
    if (ok)
        r = PyStructSequence_New(t);
    for (int i = 0; i < n; i++) {
        if (r)
            PyStructSequence_SET_ITEM(r, i, vals[i]);
        else
            Py_XDECREF(vals[i]);
    }
    return r;
}

/* The bytes per event of each column, in EventColumns' order. */
static const size_t COL_WIDTH[7] = {1, 8, 8, 8, 8, 8 * NARGS, 8 * NEXTRA};

/* Makes *c borrow fresh bytes objects (in v) with room for room events,
 * holding the n events of own: the engine then writes straight into what
 * Python gets. 0, or -1 with an exception set. */
static int columns_in_bytes(Columns *c, const Columns *own, size_t room, PyObject *v[7]) {
    for (int k = 0; k < 7; k++) {
        v[k] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(room * COL_WIDTH[k]));
        if (!v[k]) {
            while (k--)
                Py_DECREF(v[k]);
            return -1;
        }
    }
#define COL(k) ((void *)PyBytes_AS_STRING(v[k]))
    *c = (Columns){own->n, room, COL(0), COL(1), COL(2), COL(3), COL(4), COL(5), COL(6), 1};
#undef COL
    const void *src[7] = {own->code, own->time, own->m, own->p, own->g, own->args, own->extra};
    for (int k = 0; k < 7 && own->n; k++)
        memcpy(PyBytes_AS_STRING(v[k]), src[k], own->n * COL_WIDTH[k]);
    return 0;
}

/* Cuts the bytes objects of columns_in_bytes to n events, as EventColumns
 * (a failed cut leaves NULL, and make_struct releases the rest). */
static PyObject *event_columns(PyObject *v[7], size_t n) {
    for (int k = 0; k < 7; k++)
        if (_PyBytes_Resize(&v[k], (Py_ssize_t)(n * COL_WIDTH[k])) < 0)
            break;
    return make_struct(EventColumnsType, 7, v);
}

/* ---- format tables ---- */

static int tables_ready = 0;

/* init_tables(timed, nargs, stack, str0, str1): 256 bytes each */
static PyObject *init_tables(PyObject *self, PyObject *args) {
    Py_buffer b[5];
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &b[0], &b[1], &b[2], &b[3], &b[4]))
        return NULL;
    u8 *dst[5] = {T_TIMED, T_NARGS, T_STACK, T_STR0, T_STR1};
    int ok = 1;
    for (int i = 0; i < 5; i++) {
        if (b[i].len == 256)
            memcpy(dst[i], b[i].buf, 256);
        else
            ok = 0;
        PyBuffer_Release(&b[i]);
    }
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "tables must have 256 entries");
        return NULL;
    }
    for (int c = 0; c < 256; c++)
        if (T_NARGS[c] > NARGS || T_TIMED[c] > NARGS + 1) {
            PyErr_Format(PyExc_ValueError, "code %d has more arguments than the engine holds", c);
            return NULL;
        }
    engine_init_tables();
    tables_ready = 1;
    Py_RETURN_NONE;
}

/* handlers() -> {code: handler name}: the ordering engine's dispatch table */
static PyObject *handlers(PyObject *self, PyObject *noargs) {
    PyObject *d = PyDict_New();
    for (int c = 0; d && c < 256; c++) {
        const char *name = handler_name(c);
        if (!name)
            continue;
        PyObject *k = PyLong_FromLong(c), *v = PyUnicode_FromString(name + 2); /* without "h_" */
        if (!k || !v || PyDict_SetItem(d, k, v))
            Py_CLEAR(d);
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    return d;
}

/* ---- the wire layer ---- */

/* wire_records(payload, table) -> WireRecords; raises WireError(kind, code, offset) */
static PyObject *wire_records(PyObject *self, PyObject *args) {
    Py_buffer pb, tb;
    if (!PyArg_ParseTuple(args, "y*y*", &pb, &tb))
        return NULL;
    PyObject *result = NULL;
    WireRecords r = {0};
    WireFault f = {0};
    int kind;
    if (tb.len != 256) {
        PyErr_SetString(PyExc_ValueError, "table must have 256 entries");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    kind = wire_decode(pb.buf, (size_t)pb.len, tb.buf, &r, &f);
    Py_END_ALLOW_THREADS
    if (kind == WIRE_NO_MEMORY) {
        PyErr_NoMemory();
    } else if (kind != WIRE_OK) {
        PyObject *e = PyObject_CallFunction(WireError, "iin", kind, f.code, (Py_ssize_t)f.at);
        if (e) {
            PyObject *a = ((PyBaseExceptionObject *)e)->args;
            if (!PyObject_SetAttrString(e, "kind", PyTuple_GET_ITEM(a, 0)) &&
                !PyObject_SetAttrString(e, "code", PyTuple_GET_ITEM(a, 1)) &&
                !PyObject_SetAttrString(e, "offset", PyTuple_GET_ITEM(a, 2)))
                PyErr_SetObject(WireError, e);
            Py_DECREF(e);
        }
    } else {
        PyObject *v[3] = {bytes_of(r.codes, r.n), bytes_of(r.start, (r.n + 1) * 4), bytes_of(r.vals, r.nv * 8)};
        result = make_struct(WireRecordsType, 3, v);
    }
done:
    wire_free(&r);
    PyBuffer_Release(&pb);
    PyBuffer_Release(&tb);
    return result;
}

/* ---- the ordering engine ---- */

typedef struct {
    PyObject_HEAD
    Engine e;
    PyObject *keep; /* the generation's Python objects the engine points into */
} EngineObject;

static void Engine_dealloc(EngineObject *self) {
    engine_free(&self->e);
    Py_CLEAR(self->keep);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Engine(names, mask, fresh=False): names {code: event name}, for messages;
 * mask: 256 bytes, 1 for the codes whose events are wanted; fresh: order
 * each generation as if it were the trace's first, and note where the state
 * from before could have mattered (notes()) */
static int Engine_init(EngineObject *self, PyObject *args, PyObject *kw) {
    PyObject *names;
    Py_buffer mask;
    int fresh = 0;
    static char *kwlist[] = {"names", "mask", "fresh", NULL};
    if (!tables_ready) {
        PyErr_SetString(PyExc_RuntimeError, "init_tables() first");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!y*|p", kwlist, &PyDict_Type, &names, &mask, &fresh))
        return -1;
    if (fresh && engine_make_fresh(&self->e)) {
        PyBuffer_Release(&mask);
        PyErr_NoMemory();
        return -1;
    }
    if (mask.len != 256) {
        PyBuffer_Release(&mask);
        PyErr_SetString(PyExc_ValueError, "mask must be 256 bytes");
        return -1;
    }
    memcpy(self->e.mask, mask.buf, 256);
    PyBuffer_Release(&mask);
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(names, &pos, &k, &v)) {
        long code = PyLong_AsLong(k);
        const char *s = PyUnicode_AsUTF8(v);
        if (!s || PyErr_Occurred())
            return -1;
        if (code < 0 || code > 255) {
            PyErr_Format(PyExc_ValueError, "no event code %ld", code);
            return -1;
        }
        if (engine_set_name(&self->e, (int)code, s)) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

static void Engine_release(EngineObject *self) {
    engine_gen_release(&self->e);
    Py_CLEAR(self->keep);
}

/* begin(gen, ns_per_tick, start_ticks, threads, samples, strings, stacks)
 *   threads: [(m, [(payload, ticks, payload_offset), ...]), ...] in order of first appearance
 *   samples: [(ns, m, p, g, stack), ...] sorted by time
 *   strings: {id: bytes}; stacks: a collection of ids
 * Emits the generation's Sync and loads every thread's first event. */
static PyObject *Engine_begin(EngineObject *self, PyObject *args) {
    unsigned long long gen, start_ticks;
    double npt;
    PyObject *threads, *samples, *strings, *stacks;
    if (!PyArg_ParseTuple(args, "KdKO!O!O!O", &gen, &npt, &start_ticks, &PyList_Type, &threads, &PyList_Type,
                          &samples, &PyDict_Type, &strings, &stacks))
        return NULL;
    Engine *e = &self->e;
    Engine_release(self);
    Py_ssize_t nt = PyList_GET_SIZE(threads), nsmp = PyList_GET_SIZE(samples);
    if (engine_gen_prepare(e, gen, npt, (size_t)PyDict_Size(strings), (size_t)nsmp, (size_t)nt))
        return PyErr_NoMemory();
    self->keep = Py_BuildValue("(OO)", threads, strings);
    if (!self->keep)
        return NULL;
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    while (PyDict_Next(strings, &pos, &key, &val)) {
        unsigned long long id = PyLong_AsUnsignedLongLong(key);
        char *p;
        Py_ssize_t n;
        if (PyErr_Occurred() || PyBytes_AsStringAndSize(val, &p, &n))
            return NULL;
        if (engine_add_string(e, id, p, (size_t)n))
            return PyErr_NoMemory();
    }
    PyObject *it = PyObject_GetIter(stacks);
    if (!it)
        return NULL;
    PyObject *item;
    while ((item = PyIter_Next(it))) {
        unsigned long long id = PyLong_AsUnsignedLongLong(item);
        Py_DECREF(item);
        if (PyErr_Occurred() || engine_add_stack(e, id)) {
            Py_DECREF(it);
            return PyErr_Occurred() ? NULL : PyErr_NoMemory();
        }
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        return NULL;
    for (Py_ssize_t i = 0; i < nsmp; i++) {
        long long t, m, p, g;
        unsigned long long stk;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(samples, i), "LLLLK", &t, &m, &p, &g, &stk))
            return NULL;
        engine_add_sample(e, (Sample){t, m, p, g, stk});
    }
    for (Py_ssize_t i = 0; i < nt; i++) {
        long long m;
        PyObject *batches;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(threads, i), "LO!", &m, &PyList_Type, &batches))
            return NULL;
        Py_ssize_t nb = PyList_GET_SIZE(batches);
        Cursor *c = engine_add_thread(e, m, (size_t)nb);
        if (!c)
            return PyErr_NoMemory();
        for (Py_ssize_t j = 0; j < nb; j++) {
            PyObject *payload;
            unsigned long long ticks;
            long long off;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(batches, j), "O!KL", &PyBytes_Type, &payload, &ticks, &off))
                return NULL;
            c->b[j] = (BatchRef){(const u8 *)PyBytes_AS_STRING(payload), (size_t)PyBytes_GET_SIZE(payload), ticks,
                                 off};
        }
    }
    engine_gen_start(e, start_ticks);
    Py_RETURN_NONE;
}

/* The generation's derived strings so far, as a list of bytes. */
static PyObject *extra_strings(Engine *e) {
    PyObject *xs = PyList_New((Py_ssize_t)e->nx);
    for (size_t i = 0; xs && i < e->nx; i++) {
        PyObject *b = bytes_of(e->xstr[i].p, e->xstr[i].n);
        if (!b)
            Py_CLEAR(xs);
        else
            PyList_SET_ITEM(xs, (Py_ssize_t)i, b);
    }
    return xs;
}

/* An EngineBatch of n events, taking the references to columns and xs
 * (either NULL: a failure); last: the generation's run ended with it, and
 * the engine says whether it is done and what error stopped it. */
static PyObject *engine_batch(Engine *e, size_t n, PyObject *columns, PyObject *xs, int last) {
    PyObject *err = Py_None;
    Py_INCREF(err);
    if (last && e->err) {
        Py_DECREF(err);
        PyObject *offset = Py_None;
        if (e->err_offset >= 0)
            offset = PyLong_FromLongLong(e->err_offset);
        else
            Py_INCREF(offset);
        PyObject *v[3] = {PyLong_FromLong(e->err), PyUnicode_DecodeUTF8(e->errmsg, (Py_ssize_t)strlen(e->errmsg),
                          "replace"), offset};
        err = make_struct(EngineErrorType, 3, v);
    }
    PyObject *done = (last && (!e->active || e->err)) ? Py_True : Py_False;
    Py_INCREF(done);
    PyObject *v[5] = {PyLong_FromSize_t(n), columns, xs, done, err};
    return make_struct(EngineBatchType, 5, v);
}

/* The n events written (into cols: columns_in_bytes), and the error that stopped the generation if any. */
static PyObject *take(Engine *e, size_t n, PyObject *cols[7]) {
    PyObject *columns = event_columns(cols, n);
    return engine_batch(e, n, columns, extra_strings(e), 1);
}

/* run(max_events) -> EngineBatch: decode on, with the GIL released, until
 * the generation is done or max_events are out */
static PyObject *Engine_run(EngineObject *self, PyObject *args) {
    Py_ssize_t max;
    if (!PyArg_ParseTuple(args, "n", &max))
        return NULL;
    Engine *e = &self->e;
    size_t want = max > 0 ? (size_t)max : 0;
    /* Room for what begin wrote (its Sync), the run's events and the most
     * one more step writes past want (a GoSwitch is three events). */
    Columns own = e->out;
    PyObject *cols[7];
    if (columns_in_bytes(&e->out, &own, own.n + want + 4, cols))
        return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = engine_run(e, want);
    Py_END_ALLOW_THREADS
    size_t n = e->out.n;
    e->out = own;
    e->out.n = 0;
    e->nout += n;
    if (rc) {
        for (int k = 0; k < 7; k++)
            Py_DECREF(cols[k]);
        return PyErr_NoMemory();
    }
    PyObject *r = take(e, n, cols);
    if (!e->active || e->err)
        Engine_release(self);
    return r;
}

/* A column of run_all's: memory the engine wrote without the GIL (no bytes
 * object can be made there), given to Python as it is, read-only; it frees
 * the memory when the last view of it goes. Not in the module: only the
 * memoryviews over it are handed out. */
typedef struct {
    PyObject_HEAD
    void *p;
    Py_ssize_t n;
} ColumnObject;

static int Column_getbuffer(ColumnObject *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->p, self->n, 1, flags);
}

static void Column_dealloc(ColumnObject *self) {
    free(self->p);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyBufferProcs Column_as_buffer = {(getbufferproc)Column_getbuffer, NULL};

static PyTypeObject ColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "livetrace._trace._ccore._Column",
    .tp_basicsize = sizeof(ColumnObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)Column_dealloc,
    .tp_as_buffer = &Column_as_buffer,
    .tp_doc = "A column of events Engine.run_all wrote, read through a memoryview.",
};

/* A read-only memoryview of the n bytes at *p, which it takes (*p is then
 * NULL, and freed with the view; on a failure, freed at once). */
static PyObject *column_view(void **p, size_t n) {
    ColumnObject *c = PyObject_New(ColumnObject, &ColumnType);
    if (!c) {
        free(*p);
        *p = NULL;
        return NULL;
    }
    c->p = *p;
    c->n = (Py_ssize_t)n;
    *p = NULL;
    PyObject *v = PyMemoryView_FromObject((PyObject *)c);
    Py_DECREF(c);
    return v;
}

/* The columns of a batch of run_all as EventColumns of memoryviews, taking their memory. */
static PyObject *run_columns(Columns *c) {
    void **p[7] = {(void **)&c->code, (void **)&c->time, (void **)&c->m, (void **)&c->p,
                   (void **)&c->g,    (void **)&c->args, (void **)&c->extra};
    PyObject *v[7];
    for (int k = 0; k < 7; k++)
        v[k] = column_view(p[k], c->n * COL_WIDTH[k]);
    return make_struct(EventColumnsType, 7, v);
}

/* run_all(max_events) -> [EngineBatch]: decode the rest of the generation,
 * with the GIL released once, in the batches repeated run(max_events) calls
 * give (their columns memoryviews, not bytes): a pool thread that orders a
 * whole generation then never waits for the GIL between batches */
static PyObject *Engine_run_all(EngineObject *self, PyObject *args) {
    Py_ssize_t max;
    if (!PyArg_ParseTuple(args, "n", &max))
        return NULL;
    if (max <= 0) {
        PyErr_SetString(PyExc_ValueError, "max_events must be positive");
        return NULL;
    }
    Engine *e = &self->e;
    RunBatch *b = NULL;
    size_t nb = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = engine_run_all(e, (size_t)max, &b, &nb);
    Py_END_ALLOW_THREADS
    PyObject *result = NULL, *xs = NULL;
    if (rc) {
        PyErr_NoMemory();
        goto done;
    }
    xs = extra_strings(e);
    result = xs ? PyList_New((Py_ssize_t)nb) : NULL;
    for (size_t k = 0; result && k < nb; k++) {
        /* each batch's strings: those there were at its end, the same objects */
        PyObject *x = PyList_GetSlice(xs, 0, (Py_ssize_t)b[k].nx);
        PyObject *batch = engine_batch(e, b[k].c.n, run_columns(&b[k].c), x, k + 1 == nb);
        if (!batch)
            Py_CLEAR(result);
        else
            PyList_SET_ITEM(result, (Py_ssize_t)k, batch);
    }
    if (result)
        Engine_release(self);
done:
    for (size_t k = 0; k < nb; k++)
        cols_free(&b[k].c);
    free(b);
    Py_XDECREF(xs);
    return result;
}

/* final_sync() -> FinalSync: the Sync event the stream's end makes */
static PyObject *Engine_final_sync(EngineObject *self, PyObject *noargs) {
    i64 time;
    u64 count = engine_final_sync(&self->e, &time);
    PyObject *v[2] = {PyLong_FromLongLong(time), PyLong_FromUnsignedLongLong(count)};
    return make_struct(FinalSyncType, 2, v);
}

/* ---- the state carried across generations, as plain Python values ----
 * (gs, ps, ms, tasks, gc_seq, gc_state, initial_gen, last, syncs):
 *   gs: [(id, status, seq_gen, seq, [(task, name), ...], [(typ, desc), ...]), ...]
 *   ps: [(id, status, seq_gen, seq, [(typ, desc), ...]), ...]
 *   ms: [(id, p, g), ...] in order of first appearance; tasks: [(id, name, parent), ...]
 * The twin's is _trace/modern/carry.py's Carried class. */

static PyObject *ranges_list(const Range *r, size_t n) {
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; l && i < n; i++) {
        PyObject *t = Py_BuildValue("(KK)", (unsigned long long)r[i].typ, (unsigned long long)r[i].desc);
        if (!t)
            Py_CLEAR(l);
        else
            PyList_SET_ITEM(l, (Py_ssize_t)i, t);
    }
    return l;
}

static PyObject *g_tuple(const G *g) {
    PyObject *regs = PyList_New((Py_ssize_t)g->nreg);
    for (size_t i = 0; regs && i < g->nreg; i++) {
        PyObject *t = Py_BuildValue("(Ky#)", (unsigned long long)g->regions[i].task, g->regions[i].name,
                                    (Py_ssize_t)g->regions[i].n);
        if (!t)
            Py_CLEAR(regs);
        else
            PyList_SET_ITEM(regs, (Py_ssize_t)i, t);
    }
    PyObject *rng = regs ? ranges_list(g->ranges, g->nrng) : NULL;
    if (!rng) {
        Py_XDECREF(regs);
        return NULL;
    }
    return Py_BuildValue("(KiKKNN)", (unsigned long long)g->id, g->status, (unsigned long long)g->seq_gen,
                         (unsigned long long)g->seq, regs, rng);
}

static PyObject *p_tuple(const P *p) {
    PyObject *rng = ranges_list(p->ranges, p->nrng);
    if (!rng)
        return NULL;
    return Py_BuildValue("(KiKKN)", (unsigned long long)p->id, p->status, (unsigned long long)p->seq_gen,
                         (unsigned long long)p->seq, rng);
}

static PyObject *task_tuple(u64 id, const Task *t) {
    return Py_BuildValue("(Ky#K)", (unsigned long long)id, t->name, (Py_ssize_t)t->n, (unsigned long long)t->parent);
}

/* Appends what make(value) gives for every value of the map. */
static int map_list(const Map *m, PyObject *out, PyObject *(*make)(u64, const void *)) {
    for (size_t i = 0; i <= m->cap; i++) {
        u64 key, val;
        if (i == m->cap) {
            if (!m->has_zero)
                continue;
            key = 0;
            val = m->zero_val;
        } else if (!m->cap || !m->s[i].key) {
            continue;
        } else {
            key = m->s[i].key;
            val = m->s[i].val;
        }
        PyObject *t = make(key, (const void *)(uintptr_t)val);
        if (!t || PyList_Append(out, t)) {
            Py_XDECREF(t);
            return -1;
        }
        Py_DECREF(t);
    }
    return 0;
}

static PyObject *make_g(u64 id, const void *v) { return (void)id, g_tuple(v); }
static PyObject *make_p(u64 id, const void *v) { return (void)id, p_tuple(v); }
static PyObject *make_task(u64 id, const void *v) { return task_tuple(id, v); }

/* state() -> the carried state, between generations */
static PyObject *Engine_state(EngineObject *self, PyObject *noargs) {
    Engine *e = &self->e;
    if (e->active) {
        PyErr_SetString(PyExc_RuntimeError, "a generation is being decoded");
        return NULL;
    }
    PyObject *gs = PyList_New(0), *ps = PyList_New(0), *tasks = PyList_New(0), *ms = PyList_New((Py_ssize_t)e->nms);
    if (!gs || !ps || !tasks || !ms || map_list(&e->gs, gs, make_g) || map_list(&e->ps, ps, make_p) ||
        map_list(&e->tasks, tasks, make_task))
        goto fail;
    for (size_t i = 0; i < e->nms; i++) {
        PyObject *t = Py_BuildValue("(LLL)", (long long)e->ms[i]->id, (long long)e->ms[i]->p, (long long)e->ms[i]->g);
        if (!t)
            goto fail;
        PyList_SET_ITEM(ms, (Py_ssize_t)i, t);
    }
    return Py_BuildValue("(NNNNKiKLK)", gs, ps, ms, tasks, (unsigned long long)e->gc_seq, e->gc_state,
                         (unsigned long long)e->initial_gen, (long long)e->last, (unsigned long long)e->syncs);
fail:
    Py_XDECREF(gs);
    Py_XDECREF(ps);
    Py_XDECREF(tasks);
    Py_XDECREF(ms);
    return NULL;
}

static int put_ranges(PyObject *list, Range **r, size_t *n, size_t *cap) {
    PyObject *seq = PySequence_Fast(list, "ranges must be a sequence");
    if (!seq)
        return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        unsigned long long typ, desc;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "KK", &typ, &desc) ||
            (engine_put_range(r, n, cap, typ, desc) && !PyErr_NoMemory())) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

static int put_state(Engine *e, PyObject *st) {
    PyObject *gs, *ps, *ms, *tasks;
    unsigned long long gc_seq, initial_gen, syncs;
    long long last;
    int gc_state;
    if (!PyArg_ParseTuple(st, "O!O!O!O!KiKLK", &PyList_Type, &gs, &PyList_Type, &ps, &PyList_Type, &ms,
                          &PyList_Type, &tasks, &gc_seq, &gc_state, &initial_gen, &last, &syncs))
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(gs); i++) {
        unsigned long long id, seq_gen, seq;
        int status;
        PyObject *regs, *rng;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(gs, i), "KiKKO!O", &id, &status, &seq_gen, &seq, &PyList_Type, &regs,
                              &rng))
            return -1;
        G *g = engine_put_g(e, id, status, seq_gen, seq);
        if (!g)
            return PyErr_NoMemory(), -1;
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(regs); k++) {
            unsigned long long task;
            const char *name;
            Py_ssize_t n;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(regs, k), "Ky#", &task, &name, &n))
                return -1;
            if (engine_put_region(g, task, name, (size_t)n))
                return PyErr_NoMemory(), -1;
        }
        if (put_ranges(rng, &g->ranges, &g->nrng, &g->caprng))
            return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ps); i++) {
        unsigned long long id, seq_gen, seq;
        int status;
        PyObject *rng;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(ps, i), "KiKKO", &id, &status, &seq_gen, &seq, &rng))
            return -1;
        P *p = engine_put_p(e, id, status, seq_gen, seq);
        if (!p)
            return PyErr_NoMemory(), -1;
        if (put_ranges(rng, &p->ranges, &p->nrng, &p->caprng))
            return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ms); i++) {
        long long id, p, g;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(ms, i), "LLL", &id, &p, &g))
            return -1;
        M *m = m_new(e, id);
        if (!m)
            return PyErr_NoMemory(), -1;
        m->p = p;
        m->g = g;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tasks); i++) {
        unsigned long long id, parent;
        const char *name;
        Py_ssize_t n;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(tasks, i), "Ky#K", &id, &name, &n, &parent))
            return -1;
        if (engine_put_task(e, id, name, (size_t)n, parent))
            return PyErr_NoMemory(), -1;
    }
    e->gc_seq = gc_seq;
    e->gc_state = gc_state;
    e->initial_gen = initial_gen;
    e->last = last;
    e->syncs = syncs;
    return 0;
}

/* set_state(state): the engine goes on from a state another engine (or the
 * twin) ended a generation in, as state() gives it */
static PyObject *Engine_set_state(EngineObject *self, PyObject *st) {
    Engine *e = &self->e;
    if (e->active) {
        PyErr_SetString(PyExc_RuntimeError, "a generation is being decoded");
        return NULL;
    }
    engine_state_clear(e);
    int r = put_state(e, st);
    e->err = 0;
    if (r) {
        engine_state_clear(e);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* notes() -> (notes, skips, threads, created, begun, task_ends): a fresh
 * engine's notes of the generation it ordered (fresh.h), after its last run:
 *   notes: [(kind, code, accepted, unk, key, (args), m, p, g, out), ...] in the order taken
 *   skips: [(out, count), ...]: count events the filter left out came before the out-th written
 *   threads: [(id, unk, own), ...] in order of first appearance
 *   created, begun: goroutines and tasks first met where they were made (u64s, native order)
 *   task_ends: (out, task, parent, derived string) of every TaskEnd (u64s)
 * The twin's are FreshOrdering's attributes (_trace/modern/carry.py). */
static const char *u64s_bytes(const U64s *s) { return s->v ? (const char *)s->v : ""; }

static PyObject *Engine_notes(EngineObject *self, PyObject *noargs) {
    Engine *e = &self->e;
    Fresh *f = e->fr;
    if (!f || e->active) {
        PyErr_SetString(PyExc_RuntimeError, f ? "a generation is being decoded" : "not a fresh engine");
        return NULL;
    }
    PyObject *notes = PyList_New((Py_ssize_t)f->len), *skips = PyList_New((Py_ssize_t)f->nskips),
             *threads = PyList_New((Py_ssize_t)e->nms);
    if (!notes || !skips || !threads)
        goto fail;
    for (size_t i = 0; i < f->len; i++) {
        const Note *n = &f->n[i];
        PyObject *t = Py_BuildValue("(iiiiK(KKKK)LLLL)", n->kind, n->code, n->accepted, n->unk,
                                    (unsigned long long)n->key, (unsigned long long)n->args[0],
                                    (unsigned long long)n->args[1], (unsigned long long)n->args[2],
                                    (unsigned long long)n->args[3], (long long)n->m, (long long)n->p,
                                    (long long)n->g, (long long)n->out);
        if (!t)
            goto fail;
        PyList_SET_ITEM(notes, (Py_ssize_t)i, t);
    }
    for (size_t i = 0; i < f->nskips; i++) {
        PyObject *t = Py_BuildValue("(KK)", (unsigned long long)f->skips[2 * i], (unsigned long long)f->skips[2 * i + 1]);
        if (!t)
            goto fail;
        PyList_SET_ITEM(skips, (Py_ssize_t)i, t);
    }
    for (size_t i = 0; i < e->nms; i++) {
        PyObject *t = Py_BuildValue("(Lii)", (long long)e->ms[i]->id, e->ms[i]->unk, e->ms[i]->own);
        if (!t)
            goto fail;
        PyList_SET_ITEM(threads, (Py_ssize_t)i, t);
    }
    /* (y# makes None of a NULL array: "" for one never grown) */
    return Py_BuildValue("(NNNy#y#y#)", notes, skips, threads, u64s_bytes(&f->created),
                         (Py_ssize_t)(f->created.len * 8), u64s_bytes(&f->begun), (Py_ssize_t)(f->begun.len * 8),
                         u64s_bytes(&f->task_ends), (Py_ssize_t)(f->task_ends.len * 8));
fail:
    Py_XDECREF(notes);
    Py_XDECREF(skips);
    Py_XDECREF(threads);
    return NULL;
}

static PyMethodDef Engine_methods[] = {
    {"begin", (PyCFunction)Engine_begin, METH_VARARGS,
     "begin($self, gen, ns_per_tick, start_ticks, threads, samples, strings, stacks, /)\n--\n\n"
     "Start decoding a complete generation."},
    {"run", (PyCFunction)Engine_run, METH_VARARGS,
     "run($self, max_events, /)\n--\n\nDecode up to max_events more events of the generation."},
    {"run_all", (PyCFunction)Engine_run_all, METH_VARARGS,
     "run_all($self, max_events, /)\n--\n\nDecode the rest of the generation, with the GIL released once, in "
     "the batches repeated run(max_events) calls give."},
    {"final_sync", (PyCFunction)Engine_final_sync, METH_NOARGS,
     "final_sync($self, /)\n--\n\nThe Sync that ends the stream."},
    {"state", (PyCFunction)Engine_state, METH_NOARGS,
     "state($self, /)\n--\n\nThe state carried across generations, between generations."},
    {"set_state", (PyCFunction)Engine_set_state, METH_O,
     "set_state($self, state, /)\n--\n\nGo on from a state that state() gave."},
    {"notes", (PyCFunction)Engine_notes, METH_NOARGS,
     "notes($self, /)\n--\n\nA fresh engine's notes of the generation it ordered."},
    {NULL},
};

static PyTypeObject EngineType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "livetrace._trace._ccore.Engine",
    .tp_basicsize = sizeof(EngineObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Engine_init,
    .tp_dealloc = (destructor)Engine_dealloc,
    .tp_methods = Engine_methods,
    .tp_doc = "Engine(names, mask, fresh=False)\n--\n\nThe ordering engine and frontier of the modern decoder, compiled.",
};

/* ---- JSON lines ---- */

/* The lines of jsonl and jsonl_provisional (stacks NULL), the columns' buffers released. */
static PyObject *jsonl_of(Py_buffer b[7], Py_ssize_t piece_lines, PyObject *wall_obj, PyObject *strings,
                          PyObject *stacks, PyObject *extras, PyObject *miss, PyObject *other) {
    PyObject *result = NULL;
    EventView v;
    if (!event_view(&v, &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6])) {
        int has_wall = wall_obj != Py_None;
        i64 wall_base = has_wall ? PyLong_AsLongLong(wall_obj) : 0;
        if (!PyErr_Occurred())
            result = jsonl_lines(&v, piece_lines > 0 ? (size_t)piece_lines : 0, has_wall, wall_base, strings, stacks,
                                 extras, miss, other);
    }
    for (int k = 0; k < 7; k++)
        PyBuffer_Release(&b[k]);
    return result;
}

/* jsonl(codes, times, m, p, g, args, extra, wall_base, strings, stacks, miss, other, extras=None,
 * piece_lines=0) -> [bytes] (see jsonl.h); wall_base None when the generation has no clock snapshot */
static PyObject *jsonl(PyObject *self, PyObject *args) {
    Py_buffer b[7];
    PyObject *wall_obj, *strings, *stacks, *miss, *other, *extras = NULL;
    Py_ssize_t piece_lines = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*OO!O!OO|On", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6],
                          &wall_obj, &PyDict_Type, &strings, &PyDict_Type, &stacks, &miss, &other, &extras,
                          &piece_lines))
        return NULL;
    if (extras == Py_None)
        extras = NULL;
    if (extras && !PyDict_Check(extras)) {
        for (int k = 0; k < 7; k++)
            PyBuffer_Release(&b[k]);
        return PyErr_Format(PyExc_TypeError, "extras must be a dict or None");
    }
    return jsonl_of(b, piece_lines, wall_obj, strings, stacks, extras, miss, other);
}

/* jsonl_provisional(codes, times, m, p, g, args, extra, wall_base, strings, miss, other, piece_lines=0) -> [bytes]:
 * jsonl's lines as provisional_dict makes them, for a legacy trace's events
 * before its footer: no transition stack, and the event's stack as
 * "provisional": true, "stack_id": N (0 for none). */
static PyObject *jsonl_provisional(PyObject *self, PyObject *args) {
    Py_buffer b[7];
    PyObject *wall_obj, *strings, *miss, *other;
    Py_ssize_t piece_lines = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*OO!OO|n", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &wall_obj,
                          &PyDict_Type, &strings, &miss, &other, &piece_lines))
        return NULL;
    return jsonl_of(b, piece_lines, wall_obj, strings, NULL, NULL, miss, other);
}

/* ---- the module ---- */

static PyMethodDef module_methods[] = {
    {"wire_records", wire_records, METH_VARARGS,
     "wire_records($module, payload, table, /)\n--\n\nThe records of one batch payload, as columns."},
    {"legacy_stream", legacy_stream, METH_VARARGS,
     "legacy_stream($module, data, ver, counts, stack_flags, mask, builtin, msg_base, offset, syncs, /)\n--\n\n"
     "A complete Go 1.11-1.21 trace's exact events a batch at a time: (stream, strings, stacks, ticks_per_sec, "
     "messages, events), or None."},
    {"table_strings", table_strings, METH_VARARGS,
     "table_strings($module, payload, strings, max_size, /)\n--\n\nA strings batch into strings, if well formed."},
    {"table_stacks", table_stacks, METH_VARARGS,
     "table_stacks($module, payload, stacks, frames, max_frames, /)\n--\n\nA stacks batch into stacks and frames, "
     "if well formed."},
    {"init_tables", init_tables, METH_VARARGS,
     "init_tables($module, timed, nargs, stack, str0, str1, /)\n--\n\nHand over the format tables."},
    {"jsonl", jsonl, METH_VARARGS,
     "jsonl($module, codes, times, threads, procs, goroutines, args, extra, wall_base, strings, stacks, miss, "
     "other, extras=None, piece_lines=0, /)\n--\n\nJSON lines for a batch's events (state transitions here, others "
     "by callback), in pieces."},
    {"jsonl_provisional", jsonl_provisional, METH_VARARGS,
     "jsonl_provisional($module, codes, times, threads, procs, goroutines, args, extra, wall_base, strings, miss, "
     "other, piece_lines=0, /)\n--\n\nJSON lines for a legacy trace's provisional events (jsonl.c), in pieces."},
    {"select_indices", select_indices, METH_VARARGS,
     "select_indices($module, codes, procs, goroutines, args, kinds, roles, stack_arg, goroutine_ids, proc_ids, "
     "region_ids, log_ids, stack_ids, candidates, /)\n--\n\nThe indexes of the events a filter keeps (select.c)."},
    {"take_columns", take_columns, METH_VARARGS,
     "take_columns($module, indices, codes, times, threads, procs, goroutines, args, extra, /)\n--\n\n"
     "The columns of the events at indices."},
    {"text_lines", text_lines, METH_VARARGS,
     "text_lines($module, codes, times, threads, procs, goroutines, args, extra, t0, wall_base, provisional, "
     "kind_columns, quotes, frames, xquotes, miss, other, /)\n--\n\ntail's text lines for a batch's events (text.c)."},
    {"span_lines", span_lines, METH_VARARGS,
     "span_lines($module, columns, lo, hi, json, t0, kinds, names, stacks, miss, logs, other, log_json=None, "
     "piece_lines=0, /)"
     "\n--\n\n"
     "tail --spans's lines (text or JSON) for a batch of spans (span_lines.c)."},
    {"dump_parsed", dump_parsed_py, METH_VARARGS,
     "dump_parsed($module, codes, times, threads, procs, goroutines, args, extra, heads, strings, stacks, "
     "extra_strings, miss, other, /)\n--\n\nThe lines of go tool trace -d=parsed for a batch's events (dump.c)."},
    {"dump_wire", dump_wire_py, METH_VARARGS,
     "dump_wire($module, payload, codes, starts, args, table, names, quote, /)\n--\n\n"
     "The lines of go tool trace -d=wire for a batch payload's records (dump.c)."},
    {"handlers", handlers, METH_NOARGS,
     "handlers($module, /)\n--\n\nThe ordering engine's dispatch table: {code: handler name}."},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "livetrace._trace._ccore",
    "Compiled hot loops of the decoders: modern traces, and legacy ones of Go 1.11 to 1.21.", -1, module_methods};

PyMODINIT_FUNC PyInit__ccore(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    init_handlers();
    PyTypeObject **types[] = {&WireRecordsType, &EventColumnsType, &EngineBatchType, &EngineErrorType,
                              &FinalSyncType};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (!*types[i] && !(*types[i] = PyStructSequence_NewType(&result_descs[i])))
            goto fail;
        if (add_type(m, *types[i], strrchr(result_descs[i].name, '.') + 1) < 0)
            goto fail;
    }
    if (!WireError && !(WireError = PyErr_NewException("livetrace._trace._ccore.WireError", NULL, NULL)))
        goto fail;
    Py_INCREF(WireError);
    if (spans_register(m) < 0 || legacy_live_register(m) < 0)
        goto fail;
    if (legacy_dump_register(m) < 0 || legacy_stream_register(m) < 0)
        goto fail;
    if (pprof_register(m) < 0 || top_register(m) < 0 || table_columns_register(m) < 0 ||
        table_units_register(m) < 0)
        goto fail;
    if (PyType_Ready(&ColumnType) < 0)
        goto fail;
    if (add_type(m, &EngineType, "Engine") < 0 || PyModule_AddObject(m, "WireError", WireError) < 0)
        goto fail;
    static const struct {
        const char *name;
        long value;
    } constants[] = {
        {"ERR_FORMAT", ERR_FORMAT}, {"ERR_ORDER", ERR_ORDER}, {"ERR_MEMORY", ERR_MEMORY},
        {"WIRE_INVALID_TYPE", WIRE_INVALID_TYPE}, {"WIRE_SHORT", WIRE_SHORT}, {"WIRE_OVERFLOW", WIRE_OVERFLOW},
        {"NARGS", NARGS}, {"NEXTRA", NEXTRA},
    };
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
        if (PyModule_AddIntConstant(m, constants[i].name, constants[i].value) < 0)
            goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
