/* livetrace._trace._ccore.LegacyLiveCore: the Python type over
 * legacy_live.c, the compiled provisional path of a live legacy trace.
 * _trace/legacy/live_core.py drives it; the Python path of _trace/legacy/live.py's
 * LegacyLive is its twin. */

#include "common/pyglue.h"

#include "decode/legacy_live.h"

typedef struct {
    PyObject_HEAD LLive s;
    int ready;
} LLObject;

static int fail(int rc) {
    if (rc == L_NO_MEMORY)
        PyErr_NoMemory();
    return rc;
}

static int LL_init(LLObject *self, PyObject *args, PyObject *kw) {
    Py_buffer cb, sb, mb, bb;
    int ver;
    if (!PyArg_ParseTuple(args, "iy*y*y*y*", &ver, &cb, &sb, &mb, &bb))
        return -1;
    int ok = cb.len >= LEV_COUNT && sb.len >= LEV_COUNT && mb.len >= 256 && bb.len >= (Py_ssize_t)(B_COUNT * 8);
    if (ok) {
        if (self->ready)
            ll_free(&self->s);
        ll_init(&self->s, ver, cb.buf, sb.buf, mb.buf, bb.buf);
        self->ready = 1;
    }
    PyBuffer_Release(&cb), PyBuffer_Release(&sb), PyBuffer_Release(&mb), PyBuffer_Release(&bb);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "LegacyLiveCore: tables too short");
        return -1;
    }
    return 0;
}

static void LL_dealloc(LLObject *self) {
    if (self->ready)
        ll_free(&self->s);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int check_ready(LLObject *self) {
    if (!self->ready)
        PyErr_SetString(PyExc_RuntimeError, "LegacyLiveCore not initialised");
    return self->ready;
}

/* (index or id, bytes) pairs from triples (key, offset, length) into d. */
static PyObject *pairs(const u8 *d, const u64 *t, size_t n) {
    PyObject *list = PyList_New((Py_ssize_t)(n / 3));
    for (size_t i = 0; list && i < n / 3; i++) {
        const u64 *x = t + 3 * i;
        PyObject *p = Py_BuildValue("(Ky#)", (unsigned long long)x[0], (const char *)d + x[1], (Py_ssize_t)x[2]);
        if (!p)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, p);
    }
    return list;
}

/* read(data) -> (events, timed, ticks, strings, messages), or None: give up */
static PyObject *LL_read(LLObject *self, PyObject *args) {
    Py_buffer db;
    if (!check_ready(self) || !PyArg_ParseTuple(args, "y*", &db))
        return NULL;
    LLive *s = &self->s;
    size_t before = s->npend;
    int rc = fail(ll_read(s, db.buf, (size_t)db.len));
    PyObject *res = NULL;
    if (rc == L_OK) {
        PyObject *strs = pairs(s->read_d, s->new_strs, s->nnew_strs);
        PyObject *msgs = strs ? pairs(s->read_d, s->new_msgs, s->nnew_msgs) : NULL;
        if (msgs && fail(ll_carry(s)) == L_OK)
            res = Py_BuildValue("(nOLOO)", (Py_ssize_t)(s->npend - before), s->timed ? Py_True : Py_False,
                                (long long)s->cur_ts, strs, msgs);
        Py_XDECREF(strs);
        Py_XDECREF(msgs);
    } else if (rc == L_GIVE_UP) {
        res = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&db);
    return res;
}

/* drop(all, max_held): drop the pending events (all) or the oldest chunk's
 * when more than max_held are pending */
static PyObject *LL_drop(LLObject *self, PyObject *args) {
    int all;
    Py_ssize_t max_held;
    if (!check_ready(self) || !PyArg_ParseTuple(args, "pn", &all, &max_held))
        return NULL;
    ll_drop_pending(&self->s, all, (size_t)(max_held < 0 ? 0 : max_held));
    Py_RETURN_NONE;
}

static PyObject *u64_list(const u64 *v, size_t n) {
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *x = PyLong_FromUnsignedLongLong(v[i]);
        if (!x)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, x);
    }
    return list;
}

/* convert(x0, y0, slope, intercept, origin) -> (message indexes, task type
 * string ids, 0: none), the strings to make, in order; or None: give up */
static PyObject *LL_convert(LLObject *self, PyObject *args) {
    long long x0, y0, origin;
    double slope, intercept;
    if (!check_ready(self) || !PyArg_ParseTuple(args, "LLddL", &x0, &y0, &slope, &intercept, &origin))
        return NULL;
    LLive *s = &self->s;
    int rc = fail(ll_convert(s, x0, y0, slope, intercept, origin));
    if (rc == L_GIVE_UP)
        Py_RETURN_NONE;
    if (rc)
        return NULL;
    PyObject *m = u64_list(s->req_msgs, s->nreq_msgs), *t = m ? u64_list(s->req_tasks, s->nreq_tasks) : NULL;
    PyObject *res = t ? PyTuple_Pack(2, m, t) : NULL;
    Py_XDECREF(m);
    Py_XDECREF(t);
    return res;
}

/* resolve(message_ids, task_type_ids): native uint64 arrays, one per request */
static PyObject *LL_resolve(LLObject *self, PyObject *args) {
    Py_buffer mb, tb;
    if (!check_ready(self) || !PyArg_ParseTuple(args, "y*y*", &mb, &tb))
        return NULL;
    int rc = fail(ll_resolve(&self->s, mb.buf, (size_t)mb.len / 8, tb.buf, (size_t)tb.len / 8));
    PyBuffer_Release(&mb), PyBuffer_Release(&tb);
    if (rc == L_GIVE_UP)
        PyErr_SetString(PyExc_ValueError, "LegacyLiveCore.resolve: not one id per request");
    return rc ? NULL : Py_NewRef(Py_None);
}

/* release(all, window, max_held) -> (columns, late): the 7 columns as bytes */
static PyObject *LL_release(LLObject *self, PyObject *args) {
    int all;
    long long window;
    Py_ssize_t max_held;
    if (!check_ready(self) || !PyArg_ParseTuple(args, "pLn", &all, &window, &max_held))
        return NULL;
    LLive *s = &self->s;
    if (fail(ll_release(s, all, window < 0 ? 0 : window, (size_t)(max_held < 0 ? 0 : max_held))))
        return NULL;
    const Columns *c = &s->out;
    size_t n = c->n;
    PyObject *cols = columns_tuple(c, n);
    s->out.n = 0;
    return cols ? Py_BuildValue("(Nn)", cols, (Py_ssize_t)s->out_late) : NULL;
}

static PyObject *LL_held(LLObject *self, void *closure) {
    return PyLong_FromSize_t(self->ready ? self->s.nheap : 0);
}

static PyMethodDef LL_methods[] = {
    {"read", (PyCFunction)LL_read, METH_VARARGS,
     "read($self, data, /)\n--\n\nA chunk's complete events: (events, timed, ticks, strings, messages), or None (give "
     "up)."},
    {"drop", (PyCFunction)LL_drop, METH_VARARGS,
     "drop($self, all, max_held, /)\n--\n\nDrop the pending events, or the oldest chunk's when too many are pending."},
    {"convert", (PyCFunction)LL_convert, METH_VARARGS,
     "convert($self, x0, y0, slope, intercept, origin, /)\n--\n\nThe pending events into the window: (message indexes, "
     "task type string ids, 0 none) to name, or None (give up)."},
    {"resolve", (PyCFunction)LL_resolve, METH_VARARGS,
     "resolve($self, message_ids, task_type_ids, /)\n--\n\nThe ids of the last conversion's strings."},
    {"release", (PyCFunction)LL_release, METH_VARARGS,
     "release($self, all, window, max_held, /)\n--\n\nThe late events and those the release watermark lets go (window: the longest "
     "wait for a P): (columns, late)."},
    {NULL},
};

static PyGetSetDef LL_getset[] = {
    {"held", (getter)LL_held, NULL, "events held in the window", NULL},
    {NULL},
};

static PyTypeObject LegacyLiveCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "livetrace._trace._ccore.LegacyLiveCore",
    .tp_doc = "LegacyLiveCore(ver, counts, stack_flags, mask, builtin)\n--\n\n"
              "The provisional path of a live Go 1.11-1.21 trace (legacy_live.c).",
    .tp_basicsize = sizeof(LLObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)LL_init,
    .tp_dealloc = (destructor)LL_dealloc,
    .tp_methods = LL_methods,
    .tp_getset = LL_getset,
};

int legacy_live_register(PyObject *module) {
    return add_type(module, &LegacyLiveCoreType, "LegacyLiveCore");
}
