/* A generation's string and stack batches read into its Python tables: the
 * compiled path of _trace/modern/generation.py's Generation._add_strings and
 * _add_stacks, which stay the reference. Only a batch that is entirely well formed is
 * read here; at the first thing the twin would reject, nothing is added and
 * the caller reads the batch the twin's way, for its exact error (and the
 * entries it adds before that error). */

#include <Python.h>

#include "common/containers.h"
#include "common/generated.h"
#include "decode/tables.h"
#include "common/varint.h"

typedef struct {
    u64 id;
    size_t at, n; /* strings: the text's offset and length; stacks: the first value's index, the frames */
} Rec;

/* 1 when id is new to the table and to the batch so far, 0 when not, -1 on an error (set). */
static int fresh(PyObject *table, Map *seen, u64 id) {
    u64 *slot = map_slot(seen, id, 0);
    if (!slot) {
        PyErr_NoMemory();
        return -1;
    }
    if (*slot)
        return 0;
    *slot = 1;
    PyObject *k = PyLong_FromUnsignedLongLong(id);
    if (!k)
        return -1;
    int had = PyDict_Contains(table, k);
    Py_DECREF(k);
    return had < 0 ? -1 : !had;
}

static int put(PyObject *d, u64 key, PyObject *v) {
    PyObject *k = PyLong_FromUnsignedLongLong(key);
    int rc = k && v ? PyDict_SetItem(d, k, v) : -1;
    Py_XDECREF(k);
    Py_XDECREF(v);
    return rc;
}

/* table_strings(payload, strings, max_size) -> bool: whether the batch was read into strings */
PyObject *table_strings(PyObject *self, PyObject *args) {
    Py_buffer pb;
    PyObject *strings;
    Py_ssize_t max_size;
    if (!PyArg_ParseTuple(args, "y*O!n", &pb, &PyDict_Type, &strings, &max_size))
        return NULL;
    const u8 *p = pb.buf;
    size_t end = (size_t)pb.len, i = 1, nrec = 0, cap = 0;
    Rec *recs = NULL;
    Map seen = {0};
    int ok = 1, err = 0;
    while (ok && i < end) {
        u64 id, n;
        if (p[i++] != EV_STRING || uvarint(p, end, &i, &id) != 1 || uvarint(p, end, &i, &n) != 1 ||
            n > (u64)max_size || end - i < n) {
            ok = 0;
            break;
        }
        int f = fresh(strings, &seen, id);
        if (f <= 0 || grow((void **)&recs, &cap, nrec + 1, sizeof(Rec))) {
            err = f != 0;
            if (f > 0)
                PyErr_NoMemory();
            ok = 0;
            break;
        }
        recs[nrec++] = (Rec){id, i, (size_t)n};
        i += (size_t)n;
    }
    for (size_t k = 0; ok && !err && k < nrec; k++)
        err = put(strings, recs[k].id, PyBytes_FromStringAndSize((const char *)p + recs[k].at,
                                                                  (Py_ssize_t)recs[k].n)) < 0;
    free(recs);
    map_free(&seen);
    PyBuffer_Release(&pb);
    if (err)
        return NULL;
    return PyBool_FromLong(ok);
}

/* table_stacks(payload, stacks, frames, max_frames) -> bool: whether the batch was read into
 * stacks (id: tuple of PCs) and frames (PC: (func, file, line), the first definition kept) */
PyObject *table_stacks(PyObject *self, PyObject *args) {
    Py_buffer pb;
    PyObject *stacks, *frames;
    Py_ssize_t max_frames;
    if (!PyArg_ParseTuple(args, "y*O!O!n", &pb, &PyDict_Type, &stacks, &PyDict_Type, &frames, &max_frames))
        return NULL;
    const u8 *p = pb.buf;
    size_t end = (size_t)pb.len, i = 1, nrec = 0, cap = 0, nv = 0, capv = 0;
    Rec *recs = NULL;
    u64 *vals = NULL;
    Map seen = {0};
    int ok = 1, err = 0;
    while (ok && i < end) {
        u64 id, n;
        if (p[i++] != EV_STACK || uvarint(p, end, &i, &id) != 1 || uvarint(p, end, &i, &n) != 1 ||
            n > (u64)max_frames) {
            ok = 0;
            break;
        }
        if (grow((void **)&vals, &capv, nv + 4 * (size_t)n, sizeof(u64)) ||
            grow((void **)&recs, &cap, nrec + 1, sizeof(Rec))) {
            PyErr_NoMemory();
            err = 1;
            break;
        }
        size_t first = nv;
        for (size_t k = 0; ok && k < 4 * (size_t)n; k++)
            ok = uvarint(p, end, &i, &vals[nv++]) == 1;
        if (!ok)
            break;
        int f = fresh(stacks, &seen, id);
        if (f <= 0) {
            err = f < 0;
            ok = 0;
            break;
        }
        recs[nrec++] = (Rec){id, first, (size_t)n};
    }
    for (size_t r = 0; ok && !err && r < nrec; r++) {
        const u64 *v = vals + recs[r].at;
        PyObject *pcs = PyTuple_New((Py_ssize_t)recs[r].n);
        for (size_t k = 0; pcs && !err && k < recs[r].n; k++, v += 4) {
            PyObject *pc = PyLong_FromUnsignedLongLong(v[0]);
            if (!pc) {
                err = 1;
                break;
            }
            PyTuple_SET_ITEM(pcs, (Py_ssize_t)k, pc);
            PyObject *frame = Py_BuildValue("(KKK)", (unsigned long long)v[1], (unsigned long long)v[2],
                                            (unsigned long long)v[3]);
            PyObject *had = frame ? PyDict_SetDefault(frames, pc, frame) : NULL;
            Py_XDECREF(frame);
            err = had == NULL;
        }
        if (err || !pcs) {
            Py_XDECREF(pcs);
            err = 1;
        } else {
            err = put(stacks, recs[r].id, pcs) < 0; /* put takes pcs */
        }
    }
    free(recs);
    free(vals);
    map_free(&seen);
    PyBuffer_Release(&pb);
    if (err)
        return NULL;
    return PyBool_FromLong(ok);
}
